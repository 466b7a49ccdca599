#!/usr/bin/env python3
"""A plugin that misbehaves on purpose, for the supervision tests: the command's argument says how."""
import json
import os
import signal
import sys
import time

for line in sys.stdin:
    request = json.loads(line)
    method = request.get("method")
    if method == "handle":
        how = (request["params"].get("command") or {}).get("args", "")
        if how == "crash":
            sys.exit(3)
        if how == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "hang":
            sys.stderr.write("hanging, pid %d\n" % os.getpid())
            sys.stderr.flush()
            time.sleep(30)
        if how == "flood":
            # Tens of thousands of lines on both pipes at once, then a proper answer.
            for number in range(20000):
                sys.stderr.write("debug line %d\n" % number)
                sys.stdout.write("noise %d\n" % number)
            sys.stderr.flush()
            how = "after the flood"
        if how == "pid":
            how = "pid " + str(os.getpid())
        if how == "garbage":
            sys.stdout.write("this is not json\n{\"also\": \"not a response\"}\n")
            # Numbers past any Int: an answer's id and a host call's context (each trapped the host).
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": 1e300, "result": {}}) + "\n")
            call = {"jsonrpc": "2.0", "id": "probe", "method": "host.storage.get", "params": {"context": -1e300, "key": "k"}}
            sys.stdout.write(json.dumps(call) + "\n")
            sys.stdout.flush()
            continue
        if how == "malformed":
            # A good action before a malformed one: neither may run.
            result = {"actions": [{"reply": "before the malformed one"}, {"explode": 1}]}
        elif how == "badpin":
            # A pin with an option the host does not know: refused whole like any malformed action.
            result = {"actions": [{"reply": "before the bad pin"}, {"pin": {"as": "app_system", "when_full": "rotate"}}]}
        elif how == "refused":
            # The service refuses the first (no such user); the second still runs.
            result = {"actions": [{"subscribe": "nobody-at-all"}, {"reply": "after the refused one"}]}
        else:
            result = {"actions": [{"reply": "fine " + how}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": result}) + "\n")
    sys.stdout.flush()
