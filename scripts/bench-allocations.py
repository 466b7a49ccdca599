#!/usr/bin/env python3
"""Allocations a closed-loop round trip of peers-v1, in process and over the HTTP API.

Each kind runs twice, at two lengths, with bench/malloc-count preloaded (the counter prints each
process's calls to malloc, calloc, realloc and the aligned allocations at its exit); the difference over the extra round trips is one round trip's, so
starting and stopping cancel out. In process, the count is the whole process's (the host and the
bench's injector and observer); over HTTP, the server's (`perch`) and the client's apart. A count
does not move with the machine's hour the way a time does, so it shows a change on the hot path
that timings of one run cannot tell from noise. Prints one JSON line (scenario "allocations").

usage: bench-allocations.py COUNTER_SO PERCH_PEERS_BENCH PERCH [SHORT LONG]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

LINE = re.compile(r"^malloc-count (\S+) malloc=(\d+) calloc=(\d+) realloc=(\d+) aligned=(\d+) free=(\d+)$")


def counts(counter, command, n):
    """Runs `command` for `n` closed-loop round trips; answers {program: calls} and validity."""
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "result.json")
        env = dict(os.environ, LD_PRELOAD=counter)
        run = subprocess.run(command + ["--out", out, "--n", str(n), "--phases", "closed"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        found = {}
        for line in run.stderr.splitlines():
            match = LINE.match(line.strip())
            if match:
                program, *made, _ = match.groups()
                found[program] = found.get(program, 0) + sum(int(count) for count in made)
        try:
            valid = json.load(open(out)).get("valid", False)
        except (OSError, ValueError):
            valid = False
        if run.returncode != 0 or not valid:
            sys.exit(f"bench-allocations: {' '.join(command)} --n {n} failed (exit {run.returncode}):\n"
                     + run.stderr[-2000:])
        return found


def per_round_trip(counter, command, short, long):
    first, second = counts(counter, command, short), counts(counter, command, long)
    return {program: round((second[program] - first.get(program, 0)) / (long - short), 1)
            for program in second}


def main():
    if len(sys.argv) not in (4, 6):
        sys.exit(__doc__.strip().splitlines()[-1])
    counter, bench, perch = (os.path.abspath(path) for path in sys.argv[1:4])
    short, long = (int(sys.argv[4]), int(sys.argv[5])) if len(sys.argv) == 6 else (1000, 6000)
    in_process = per_round_trip(counter, [bench], short, long)
    http = per_round_trip(counter, [bench, "--loopback", perch], short, long)
    print(json.dumps({
        "scenario": "allocations",
        "round_trips": long - short,
        "in_process_per_round_trip": in_process.get("PerchPeersBench"),
        "http_server_per_round_trip": http.get("perch"),
        "http_client_per_round_trip": http.get("PerchPeersBench"),
    }, sort_keys=True))


if __name__ == "__main__":
    main()
