#!/usr/bin/env python3
"""Perch against each peer, column by column, from aggregate.py's results.json (one run)."""
import json
import os
import statistics
import sys

COLUMNS = [  # key, label, higher is better
    ("burst_msgs_per_s", "burst msg/s", True),
    ("closed_msgs_per_s", "closed-loop msg/s", True),
    ("closed_p50_ms", "closed-loop p50 (ms)", False),
    ("closed_p99_ms", "closed-loop p99 (ms)", False),
    ("startup_first_reply_s", "startup (s)", False),
    ("peak_rss_mib", "peak RSS (MiB)", False),
]
# Perch in process also reports each reply where it leaves the bot, before its commit: where the
# peers' replies are observed (their host handing a reply to its transport). Set against the peers'
# only figures, closed_p50_ms and closed_p99_ms.
LEAVING = [  # Perch's field in the raw result's closed phase, the peers' key, label
    ("leaving_lat_p50_ms", "closed_p50_ms", "closed-loop p50, reply leaving the bot (ms)"),
    ("leaving_lat_p99_ms", "closed_p99_ms", "closed-loop p99, reply leaving the bot (ms)"),
]


def leaving(row, raw):
    """Medians of the leaving fields over the row's valid runs ({} when the runs have none)."""
    runs = []
    for name in row.get("files", []):
        try:
            with open(os.path.join(raw, name)) as f:
                runs.append(json.load(f))
        except (OSError, ValueError):
            continue
    closed = [d["phases"]["closed"] for d in runs if d.get("valid") and "closed" in d.get("phases", {})]
    return {field: statistics.median(c[field] for c in closed)
            for field, _, _ in LEAVING if closed and all(field in c for c in closed)}


def fmt(x):
    if x is None or x != x:
        return "n/a"
    return f"{x:,.3f}" if abs(x) < 10 else f"{x:,.0f}"


def main():
    rows = json.load(open(sys.argv[1]))
    raw = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "raw")
    perch = {k: v for k, v in rows.items() if k.startswith("perch")}
    peers = {k: v for k, v in rows.items() if not k.startswith("perch")}
    print("Ratios are Perch's advantage: above 1 Perch is ahead (peer/Perch for times and memory, "
          "Perch/peer for rates). Perch's closed-loop rows count a reply once it is committed; the "
          "rows 'reply leaving the bot' take it where it leaves the bot for the service, before its "
          "commit, the point where the peers' replies are observed (their only figure).\n")
    for name, p in sorted(perch.items()):
        loopback = "loopback" in name
        print(f"### {name} ({p['valid_runs']}/{p['runs']} valid runs)\n")
        print("| column | " + name + " | " + " | ".join(peers) + " |")
        print("|---|---|" + "---|" * len(peers))
        left = leaving(p, raw)
        columns = [(key, key, label, higher) for key, label, higher in COLUMNS]
        columns += [(field, key, label, False) for field, key, label in LEAVING if field in left]
        for key, peer_key, label, higher in columns:
            mine = left.get(key, p.get(key))
            cells = []
            for peer in peers.values():
                if ("websocket" in peer["variant"]) != loopback:
                    cells.append("(other kind)")
                    continue
                a, b = mine, peer.get(peer_key)
                if a is None or b is None or a != a or b != b or a == 0 or b == 0:
                    cells.append(f"{fmt(b)}")
                    continue
                ratio = a / b if higher else b / a
                cells.append(f"{fmt(b)} (×{ratio:.2f})")
            print(f"| {label} | {fmt(mine)} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
