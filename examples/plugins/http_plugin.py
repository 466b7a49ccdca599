#!/usr/bin/env python3
"""A Perch plugin reached over HTTP (an outgoing webhook), standard library only.

A bot file names it with `url:` instead of `exec:`:

    plugins:
      - name: shout
        url: http://127.0.0.1:8181/perch
        secret: ${SHOUT_SECRET}
        config: { suffix: "!" }
    rules:
      - on: { command: shout }
        do: [{ plugin: shout }]

Each `plugin: shout` action POSTs a JSON-RPC request (`method: handle`, params: bot, event,
captures, command, plugin, config); the answer's `result.actions` run in the bot-file vocabulary.

Run: `SHOUT_SECRET=... python3 http_plugin.py [--port 8181] [--port-file FILE]`. With the secret
set, a post whose `X-Hub-Signature-256` does not match is refused with 401. `X-Perch-Delivery` is
the same when Perch tries a post again, so a repeat is answered without acting twice.
"""
import argparse
import hashlib
import hmac
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ.get("SHOUT_SECRET", "")
seen = set()


def handle(params):
    """Shouts the command's words back as a quote reply."""
    words = (params.get("command") or {}).get("args") or ""
    suffix = (params.get("config") or {}).get("suffix", "!")
    sender = ((params.get("event") or {}).get("message") or {}).get("sender", "someone")
    if not words:
        return {"actions": [{"quote_reply": "shout what?"}]}
    return {"actions": [{"quote_reply": f"{words.upper()}{suffix} (for {sender})"}]}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if SECRET:
            expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
            if not hmac.compare_digest(expected, self.headers.get("X-Hub-Signature-256", "")):
                self.answer(401, {"error": "bad signature"})
                return
        delivery = self.headers.get("X-Perch-Delivery", "")
        if delivery and delivery in seen:
            self.answer(200, {"jsonrpc": "2.0", "id": None, "result": {}})
            return
        request = json.loads(body)
        if request.get("method") != "handle":
            self.answer(200, {"jsonrpc": "2.0", "id": request.get("id"),
                              "error": {"code": -32601, "message": "unknown method"}})
            return
        seen.add(delivery)
        self.answer(200, {"jsonrpc": "2.0", "id": request.get("id"), "result": handle(request["params"])})

    def answer(self, status, message):
        data = json.dumps(message).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        sys.stderr.write("http_plugin: " + (format % args) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8181)
    parser.add_argument("--port-file", help="write the port listened on here (with --port 0)")
    options = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    if options.port_file:
        with open(options.port_file + ".tmp", "w") as file:
            file.write(str(server.server_address[1]))
        os.rename(options.port_file + ".tmp", options.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
