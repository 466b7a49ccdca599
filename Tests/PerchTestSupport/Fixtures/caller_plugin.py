#!/usr/bin/env python3
"""A plugin that makes the host calls it is told to: `!do [[METHOD, PARAMS], ...]` runs each in
turn (in the request's context, or with `"alone": true` in PARAMS without one) and writes the
answers, a result or the error's data, as a JSON list to the file named by its argument."""
import json
import sys

out_path = sys.argv[1]
calls = 0


def call(method, params):
    global calls
    calls += 1
    call_id = f"c{calls}"
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": call_id, "method": method, "params": params}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        answer = json.loads(line)
        if answer.get("id") == call_id:
            return answer
    return {"error": {"message": "the host closed the pipe"}}


for line in sys.stdin:
    request = json.loads(line)
    if "method" not in request:
        continue
    if request["method"] == "handle":
        answers = []
        for method, params in json.loads(request["params"]["command"]["args"]):
            if not params.pop("alone", False):
                params["context"] = request["params"]["context"]
            answer = call(method, params)
            error = answer.get("error")
            answers.append({"error": error.get("data") or error.get("message")} if error else answer.get("result"))
        with open(out_path, "w") as out:
            json.dump(answers, out)
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {}}) + "\n")
    sys.stdout.flush()
