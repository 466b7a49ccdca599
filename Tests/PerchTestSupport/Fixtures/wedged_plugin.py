#!/usr/bin/env python3
"""A plugin that answers `initialize`, then stops reading its input for good (stuck, say, in a
computation): the host's writes to it fill the pipe."""
import json
import sys
import time

request = json.loads(sys.stdin.readline())
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": {}}) + "\n")
sys.stdout.flush()
time.sleep(3600)
