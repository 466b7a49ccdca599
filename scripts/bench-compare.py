#!/usr/bin/env python3
"""Perch against each peer, column by column, from aggregate.py's results.json (one run)."""
import json
import sys

COLUMNS = [  # key, label, higher is better
    ("burst_msgs_per_s", "burst msg/s", True),
    ("closed_msgs_per_s", "closed-loop msg/s", True),
    ("closed_p50_ms", "closed-loop p50 (ms)", False),
    ("closed_p99_ms", "closed-loop p99 (ms)", False),
    ("startup_first_reply_s", "startup (s)", False),
    ("peak_rss_mib", "peak RSS (MiB)", False),
]


def fmt(x):
    if x is None or x != x:
        return "n/a"
    return f"{x:,.3f}" if abs(x) < 10 else f"{x:,.0f}"


def main():
    rows = json.load(open(sys.argv[1]))
    perch = {k: v for k, v in rows.items() if k.startswith("perch")}
    peers = {k: v for k, v in rows.items() if not k.startswith("perch")}
    print("Ratios are Perch's advantage: above 1 Perch is ahead (peer/Perch for times and memory, "
          "Perch/peer for rates).\n")
    for name, p in sorted(perch.items()):
        loopback = "loopback" in name
        print(f"### {name} ({p['valid_runs']}/{p['runs']} valid runs)\n")
        print("| column | " + name + " | " + " | ".join(peers) + " |")
        print("|---|---|" + "---|" * len(peers))
        for key, label, higher in COLUMNS:
            cells = []
            for peer in peers.values():
                if ("websocket" in peer["variant"]) != loopback:
                    cells.append("(other kind)")
                    continue
                a, b = p.get(key), peer.get(key)
                if a is None or b is None or a != a or b != b or a == 0 or b == 0:
                    cells.append(f"{fmt(b)}")
                    continue
                ratio = a / b if higher else b / a
                cells.append(f"{fmt(b)} (×{ratio:.2f})")
            print(f"| {label} | {fmt(p.get(key))} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
