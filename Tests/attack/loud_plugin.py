#!/usr/bin/env python3
"""A plugin that floods both of its pipes when asked, then answers properly."""
import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    if request.get("method") == "handle":
        for number in range(50000):
            sys.stderr.write("flood line %d\n" % number)
            sys.stdout.write("not the protocol %d\n" % number)
        sys.stderr.flush()
        result = {"actions": [{"reply": "flooded"}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": result}) + "\n")
    sys.stdout.flush()
