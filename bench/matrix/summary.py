"""The Matrix bench's runs as one table: each framework's median of its rounds."""
import json
import statistics
import sys

runs = json.load(open(sys.argv[1]))
print("| framework | rounds | mention → reply p50 (ms) | p99 (ms) | CPU per mention (ms) |")
print("| --- | --- | --- | --- | --- |")
for name in ["perch", "maubot"]:
    mine = [r for r in runs if r["framework"] == name]
    if not mine:
        continue
    med = lambda key: statistics.median(r[key] for r in mine)
    print(f"| {name} | {len(mine)} × {mine[0]['n']} | {med('lat_p50_ms'):.1f} | {med('lat_p99_ms'):.1f} | "
          f"{med('cpu_ms_per_event'):.2f} |")
