"""The Matrix bench: on one Synapse, the round trip of a mention to its bot's quote reply, seen by
the person's client, and the bot's CPU per handled mention, for Perch (the shipped helper bot on
`backend: matrix`) and maubot (standalone, a plugin that quote-replies the same way).

    python3 bench/matrix/bench_matrix.py --n 200 --out results.json [--maubot-python PY]

Each framework gets its own account and room on the same homeserver; the person sends a mention,
waits for the reply on its own /sync long-poll, then sends the next (closed loop), after a warm-up.
CPU is the bot process's user+system time over the measured mentions, from /proc."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "Tests", "matrix"))
from synapse import Synapse, room_path  # noqa: E402

PERCH = os.path.join(ROOT, ".build", "release", "perch")
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Listener:
    """The person's client: a /sync long-poll that records when each reply to a mention arrives."""

    def __init__(self, user, room):
        self.user, self.room = user, room
        self.arrived = {}
        self.condition = threading.Condition()
        self.stopped = False
        answer = user.call("GET", "/_matrix/client/v3/sync?timeout=0&filter=" + urllib.parse.quote(
            json.dumps({"room": {"timeline": {"limit": 1}}})))
        self.since = answer["next_batch"]
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        flt = urllib.parse.quote(json.dumps({"presence": {"not_types": ["*"]}, "room": {"rooms": [self.room]}}))
        while not self.stopped:
            try:
                answer = self.user.call("GET", f"/_matrix/client/v3/sync?timeout=5000&since={self.since}&filter={flt}")
            except OSError:
                return  # the homeserver went away at the end of the round
            now = time.perf_counter()
            self.since = answer["next_batch"]
            events = answer.get("rooms", {}).get("join", {}).get(self.room, {}).get("timeline", {}).get("events", [])
            with self.condition:
                for e in events:
                    quoted = e.get("content", {}).get("m.relates_to", {}).get("m.in_reply_to", {}).get("event_id")
                    if quoted and e["sender"] != self.user.id:
                        self.arrived.setdefault(quoted, now)
                self.condition.notify_all()

    def wait(self, event, timeout=30):
        with self.condition:
            self.condition.wait_for(lambda: event in self.arrived, timeout)
            return self.arrived.get(event)


def measure(name, synapse, person, bot, room, pid, n, warmup):
    listener = Listener(person, room)
    latencies = []
    cpu_start = None
    for index in range(warmup + n):
        if index == warmup:
            cpu_start = cpu_seconds(pid)
        started = time.perf_counter()
        event = person.say(room, f"{bot.id} question {index}", mentions=[bot.id])
        arrived = listener.wait(event)
        if arrived is None:
            raise RuntimeError(f"{name}: no reply to mention {index}")
        if index >= warmup:
            latencies.append((arrived - started) * 1000)
    cpu = cpu_seconds(pid) - cpu_start
    listener.stopped = True
    latencies.sort()
    return {
        "framework": name, "n": n,
        "lat_p50_ms": statistics.median(latencies),
        "lat_p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "lat_mean_ms": statistics.fmean(latencies),
        "cpu_ms_per_event": cpu * 1000 / n,
    }


def run_perch(synapse, person, n, warmup):
    bot = synapse.register("perchhelper")
    room = person.create_room("perchbench", "Perch bench", [bot.id])
    # The helper's file names two groups: the second is a room nobody writes in.
    quiet = person.create_room("perchquiet", "Perch bench, quiet", [bot.id])
    work = tempfile.mkdtemp(prefix="perch-matrix-bench-")
    os.makedirs(os.path.join(work, "bots"))
    # The shipped helper, with its rate limits out of the way (maubot has none): a closed loop of
    # hundreds of mentions in one room is far past the default 30 replies a minute a room.
    with open(os.path.join(ROOT, "bots", "helper.yaml")) as f:
        helper = f.read()
    with open(os.path.join(work, "bots", "helper.yaml"), "w") as f:
        f.write(helper + "rate_limit: { per_minute: 100000, burst: 10000, per_conversation_per_minute: 100000 }\n")
    with open(os.path.join(work, "config.yaml"), "w") as f:
        f.write(f"""version: 1
server: {{ listen: "127.0.0.1:0", dataDirectory: data }}
backend: matrix
matrix:
  homeserver: {synapse.url}
  accounts: {{ helper: "${{MATRIX_HELPER_TOKEN}}" }}
  rooms: {{ general: "{room}", announcements: "{quiet}" }}
botsDirectory: bots
""")
    env = dict(os.environ, MATRIX_HELPER_TOKEN=bot.token)
    log = open(os.path.join(work, "perch.log"), "w")
    process = subprocess.Popen([PERCH, "run", "--config", "config.yaml"], cwd=work, env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and "bots=1 ready" not in open(os.path.join(work, "perch.log")).read():
            time.sleep(0.1)
        time.sleep(1)
        return measure("perch", synapse, person, bot, room, process.pid, n, warmup)
    finally:
        process.terminate()
        process.wait(20)
        shutil.rmtree(work, ignore_errors=True)


def run_maubot(synapse, person, n, warmup, python):
    bot = synapse.register("maubothelper")
    room = person.create_room("maubotbench", "maubot bench", [bot.id])
    bot.join(room)
    work = tempfile.mkdtemp(prefix="maubot-matrix-bench-")
    for name in os.listdir(os.path.join(HERE, "maubot_mention")):
        shutil.copy(os.path.join(HERE, "maubot_mention", name), work)
    with open(os.path.join(work, "config.yaml"), "w") as f:
        json.dump({
            "user": {"credentials": {"id": bot.id, "homeserver": synapse.url, "access_token": bot.token,
                                     "device_id": None},
                     "sync": True, "appservice": False, "autojoin": False, "displayname": "disable",
                     "avatar_url": "disable", "ignore_initial_sync": True, "ignore_first_sync": True},
            "server": {"hostname": "127.0.0.1", "port": 0, "base_path": "/", "public_url": "http://127.0.0.1"},
            "database": "sqlite:bot.db", "plugin_config": {},
            "logging": {"version": 1, "root": {"level": "WARNING"}},
        }, f)
    log = open(os.path.join(work, "maubot.log"), "w")
    process = subprocess.Popen([python, "-m", "maubot.standalone", "-c", "config.yaml", "-m", "maubot.yaml"],
                               cwd=work, stdout=log, stderr=subprocess.STDOUT)
    try:
        time.sleep(5)
        if process.poll() is not None:
            raise RuntimeError("maubot exited: " + open(os.path.join(work, "maubot.log")).read()[-2000:])
        return measure("maubot", synapse, person, bot, room, process.pid, n, warmup)
    finally:
        process.terminate()
        process.wait(20)
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--maubot-python", default="/tmp/peers/venv-maubot/bin/python")
    parser.add_argument("--out", default="-")
    args = parser.parse_args()
    results = []
    for round_ in range(args.rounds):
        # Each round on a new homeserver: its accounts, rooms and history start empty.
        synapse = Synapse()
        try:
            person = synapse.register("person")
            results.append(dict(run_perch(synapse, person, args.n, args.warmup), round=round_))
            if os.path.exists(args.maubot_python):
                results.append(dict(run_maubot(synapse, person, args.n, args.warmup, args.maubot_python),
                                    round=round_))
        finally:
            synapse.destroy()
    text = json.dumps(results, indent=2)
    if args.out == "-":
        print(text)
    else:
        open(args.out, "w").write(text)


if __name__ == "__main__":
    main()
