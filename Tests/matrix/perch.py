"""`perch run` on the Matrix backend: the shipped bots (and the tests' own) pointed at a Synapse."""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PERCH = os.environ.get("PERCH_BINARY", os.path.join(ROOT, ".build", "release", "perch"))

CONFIG = """version: 1
server:
  listen: 127.0.0.1:{port}
  dataDirectory: {data}
backend: matrix
matrix:
  homeserver: {homeserver}
  followDigestSeconds: {digest}
  syncTimeoutSeconds: 5
  accounts:
{accounts}
  rooms:
{rooms}
botsDirectory: bots
"""

# Pins every message in the locked room, where its account may not: the refusal is logged and counted.
PINNER = """name: pinner
user: { uid: pinner, name: Pinner }
groups: [{ guid: locked, scope: moderator }]
rules:
  - name: pin-everything
    on: message
    when: { sender_is_bot: false }
    do: [pin]
"""


# Listens in the encrypted room, which Perch reports instead of ignoring it without a word.
LURKER = """name: lurker
user: { uid: lurker, name: Lurker }
groups: [vault]
rules:
  - on: message
    do: [{ reply: "heard you" }]
"""


# Follows every thread someone replies in, for itself: a subscription of its own account (MSC4306).
TRACKER = """name: tracker
user: { uid: tracker, name: Tracker }
groups: [general]
rules:
  - on: thread_reply
    when: { sender_is_bot: false }
    do: [{ subscribe: self }]
"""


# Moderation and reactions on command: kicks, bans and reacts to whoever asks.
BOUNCER = """name: bouncer
user: { uid: bouncer, name: Bouncer }
groups: [{ guid: general, scope: moderator }]
hears: commands
rules:
  - on: { command: kickme }
    do: [kick]
  - on: { command: banme }
    do: [ban]
  - on: { command: wave }
    do: [{ react: "👋" }]
"""


class Perch:
    def __init__(self, synapse, tokens, rooms, digest_seconds=2, extra_bots=None):
        self.dir = tempfile.mkdtemp(prefix="perch-matrix-")
        self.port = self.free_port()
        shutil.copytree(os.path.join(ROOT, "bots"), os.path.join(self.dir, "bots"))
        for name, text in (extra_bots or {}).items():
            with open(os.path.join(self.dir, "bots", name), "w") as f:
                f.write(text)
        accounts = "\n".join(f"    {uid}: ${{MATRIX_{uid.upper()}_TOKEN}}" for uid in sorted(tokens))
        mapped = "\n".join(f'    {guid}: "{room}"' for guid, room in sorted(rooms.items()))
        with open(os.path.join(self.dir, "config.yaml"), "w") as f:
            f.write(CONFIG.format(port=self.port, data=self.dir + "/data", homeserver=synapse.url,
                                  digest=digest_seconds, accounts=accounts, rooms=mapped))
        self.env = dict(os.environ)
        for uid, token in tokens.items():
            self.env[f"MATRIX_{uid.upper()}_TOKEN"] = token
        self.log_path = os.path.join(self.dir, "perch.log")
        self.process = None
        self.start()

    @staticmethod
    def free_port():
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def start(self, wait_ready=True):
        self.log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            [PERCH, "run", "--config", os.path.join(self.dir, "config.yaml")], env=self.env, stdout=self.log,
            stderr=subprocess.STDOUT, cwd=self.dir)
        if wait_ready:
            self.wait_ready()

    def ready(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("perch exited: " + self.log_text()[-3000:])
            if self.ready():
                return
            time.sleep(0.1)
        raise RuntimeError("perch did not become ready: " + self.log_text()[-3000:])

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as response:
            return response.read().decode()

    def log_text(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def check_connect(self):
        """`perch check --connect` on this configuration: (exit code, output)."""
        done = subprocess.run([PERCH, "check", "--connect", "--config", os.path.join(self.dir, "config.yaml")],
                              env=self.env, capture_output=True, text=True, cwd=self.dir, timeout=60)
        return done.returncode, done.stdout + done.stderr

    def kill(self):
        self.process.kill()
        self.process.wait(10)
        self.log.close()

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()

    def destroy(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
