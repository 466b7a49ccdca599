#!/usr/bin/env python3
"""A plugin that misbehaves on purpose, for the supervision tests: the command's argument says how."""
import json
import sys
import time

for line in sys.stdin:
    request = json.loads(line)
    method = request.get("method")
    if method == "handle":
        how = (request["params"].get("command") or {}).get("args", "")
        if how == "crash":
            sys.exit(3)
        if how == "hang":
            time.sleep(30)
        if how == "garbage":
            sys.stdout.write("this is not json\n{\"also\": \"not a response\"}\n")
            sys.stdout.flush()
            continue
        result = {"actions": [{"reply": "fine " + how}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": result}) + "\n")
    sys.stdout.flush()
