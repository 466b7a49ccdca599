#!/usr/bin/env python3
"""An out-of-process Perch plugin in Python, standard library only.

Perch starts it with the bot's `exec:` command and speaks JSON-RPC 2.0 over stdin/stdout, one JSON
object per line. Methods: `initialize` (params: config, plugin), `event` (every event the bot
hears, unless the answer to `initialize` lists the ones wanted: this plugin wants none) and
`handle` (a rule's `plugin:` action). A result may hold `actions`, in the bot-file vocabulary. Log
to stderr: stdout is the protocol.

Config (from the bot file's `config:`): `prefix` (default "echo: ").
"""
import json
import sys

config = {}
counts = {}


def respond(request_id, result=None, error=None):
    message = {"jsonrpc": "2.0", "id": request_id}
    if error is not None:
        message["error"] = {"code": -32000, "message": error}
    else:
        message["result"] = result if result is not None else {}
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


next_call = 0


def call_host(method, params):
    """Calls the host while handling a request (params carry the request's `context`)."""
    global next_call
    next_call += 1
    call_id = f"plugin-{next_call}"
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": call_id, "method": method, "params": params}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:  # the host answers before it answers anything else for this request
        answer = json.loads(line)
        if answer.get("id") == call_id:
            return answer.get("result"), answer.get("error")
    return None, {"message": "the host closed the pipe"}


def handle(params):
    """`handle`: echo the message text back as a quote reply, counting per sender.

    `!echo count` shows the other way round: the plugin calls the host (`host.storage.*`,
    `host.reply`) instead of returning actions.
    """
    message = params.get("event", {}).get("message") or {}
    if params.get("command", {}).get("args") == "count":
        context = params["context"]
        result, _ = call_host("host.storage.get", {"context": context, "key": "count"})
        count = int((result or {}).get("value") or 0) + 1
        call_host("host.storage.set", {"context": context, "key": "count", "value": str(count)})
        call_host("host.reply", {"context": context, "text": f"counted {count}"})
        return {}
    if params.get("command", {}).get("args") == "ghost":
        # A refused host call answers a JSON-RPC error whose data has the code and its params
        # (subscribing someone other than the sender needs the bot's allow_subscribing_others).
        _, error = call_host("host.subscribe", {"context": params["context"], "who": "ghost"})
        data = (error or {}).get("data") or {}
        return {"actions": [{"reply": f"refused: {data.get('code')} {json.dumps(data.get('params'), sort_keys=True)}"}]}
    sender = message.get("sender", "?")
    counts[sender] = counts.get(sender, 0) + 1
    text = params.get("command", {}).get("args") or message.get("text", "")
    prefix = config.get("prefix", "echo: ")
    return {"actions": [{"quote_reply": f"{prefix}{text} (#{counts[sender]} from {sender})"}]}


for line in sys.stdin:
    try:
        request = json.loads(line)
    except json.JSONDecodeError:
        continue
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        config = params.get("config") or {}
        # It acts on its commands only: the host need not send it the room's every event.
        respond(request.get("id"), {"name": "echo", "events": []})
    elif method == "handle":
        respond(request.get("id"), handle(params))
    elif method == "event":
        respond(request.get("id"), {})
    else:
        respond(request.get("id"), error=f"unknown method {method}")
