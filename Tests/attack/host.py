"""A real `perch run` for the attack suite: its own config (people, a public and a private group,
bots with a command, a pattern that backtracks, a plugin that floods its output, a signed webhook),
on a temporary data directory, and the raw and JSON clients the attacks use."""
import base64
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PERCH = os.environ.get("PERCH_BINARY", os.path.join(ROOT, ".build", "release", "perch"))
HERE = os.path.dirname(os.path.abspath(__file__))
HOOK_SECRET = "hook-secret-for-the-attack-suite"

CONFIG = """version: 1
server:
  listen: 127.0.0.1:{port}
  dataDirectory: {data}
  apiKey: ${{PERCH_API_KEY}}
  devSignIn: true
  webDirectory: {root}/web
  maxStreams: {max_streams}
  headerTimeoutSeconds: 3
  bodyTimeoutSeconds: 3
  maxBodyBytes: 65536
seed:
  users:
    - {{ uid: alice, name: Alice }}
    - {{ uid: bob, name: Bob }}
    - {{ uid: carol, name: Carol }}
    - {{ uid: mallory, name: Mallory }}
  groups:
    - guid: general
      name: General
      owner: alice
      members:
        - {{ uid: bob }}
        - {{ uid: carol }}
        - {{ uid: mallory }}
    - guid: secret
      name: Secret
      type: private
      owner: alice
      members:
        - {{ uid: bob }}
"""

BOTS = {
    "echo.yaml": """name: echo
user: { uid: echo, name: Echo }
groups: [general]
hears: commands
rules:
  - on: { command: echo }
    do: [{ reply: "{args}" }]
  - name: pushed
    on: { webhook: push, group: general, secret: "%s" }
    do: [{ reply: "pushed {webhook.ref}" }]
""" % HOOK_SECRET,
    "greedy.yaml": """name: greedy
user: { uid: greedy, name: Greedy }
groups: [general]
rules:
  - name: all-a
    on: message
    when: { text_matches: '^(a+)+$' }
    do: [{ reply: "all a" }]
""",
    "loud.yaml": """name: loud
user: { uid: loud, name: Loud }
groups: [general]
hears: commands
plugins:
  - name: loud
    exec: [python3, "%s/loud_plugin.py"]
rules:
  - on: { command: flood }
    do: [{ plugin: loud }]
""" % HERE,
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Host:
    """`perch run` on a fresh directory; `restart` keeps the data."""

    def __init__(self, max_streams=200):
        self.dir = tempfile.mkdtemp(prefix="perch-attack-")
        self.port = free_port()
        self.key = secrets.token_hex(16)
        with open(os.path.join(self.dir, "config.yaml"), "w") as f:
            f.write(CONFIG.format(port=self.port, data=self.dir + "/data", root=ROOT, max_streams=max_streams))
        os.makedirs(os.path.join(self.dir, "bots"))
        for name, text in BOTS.items():
            with open(os.path.join(self.dir, "bots", name), "w") as f:
                f.write(text)
        self.env = dict(os.environ, PERCH_API_KEY=self.key)
        self.log_path = os.path.join(self.dir, "perch.log")
        self.log = open(self.log_path, "a")
        self.launch()

    def launch(self):
        self.process = subprocess.Popen(
            [PERCH, "run", "--config", os.path.join(self.dir, "config.yaml")], env=self.env, stdout=self.log,
            stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.process.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", timeout=1) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.05)
        raise RuntimeError("perch did not become ready: " + self.log_text())

    def log_text(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def rss_mib(self):
        """The host's resident memory now, in MiB."""
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0

    def call(self, method, path, body=None, as_uid=None, token=None, key=True, headers=None, raw=None):
        """An API call: (status, the answer's JSON or {}, its headers)."""
        sent = {}
        if key and token is None:
            sent["apikey"] = self.key
        if as_uid:
            sent["onBehalfOf"] = as_uid
        if token:
            sent["authtoken"] = token
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
        if data is not None:
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                return response.status, json.loads(response.read() or b"{}"), dict(response.headers)
        except urllib.error.HTTPError as error:
            text = error.read()
            try:
                answer = json.loads(text or b"{}")
            except json.JSONDecodeError:
                answer = {"raw": text.decode(errors="replace")}
            return error.code, answer, dict(error.headers)

    def send(self, text, as_uid, group="general", **fields):
        body = {"receiver": group, "receiverType": "group", "data": {"text": text}}
        body.update(fields)
        return self.call("POST", "/v3/messages", body, as_uid=as_uid)

    def token(self, uid):
        status, answer, _ = self.call("POST", f"/v3/users/{uid}/auth_tokens")
        assert status == 200, answer
        return answer["data"]["authToken"]

    def raw(self, request, timeout=10):
        """Sends bytes as they are; (status, the answer's JSON or None, the whole answer as text)."""
        return raw_exchange(self.port, request, timeout)

    def websocket(self, uid, origin=None):
        connection = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        extra = f"Origin: {origin}\r\n" if origin else ""
        connection.sendall(
            (f"GET /v3/ws HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\napikey: {self.key}\r\n"
             f"onBehalfOf: {uid}\r\n{extra}\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = connection.recv(4096)
            if not chunk:
                break
            head += chunk
        return connection, int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else 0

    def kill(self):
        self.process.kill()
        self.process.wait(10)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def raw_exchange(port, request, timeout=10):
    if isinstance(request, str):
        request = request.encode()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        try:
            connection.sendall(request)
        except OSError:
            pass
        answer = b""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                chunk = connection.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            answer += chunk
            head, _, body = answer.partition(b"\r\n\r\n")
            length = [int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")]
            if length and len(body) >= length[0]:
                break
    text = answer.decode(errors="replace")
    status = int(text.split(" ")[1]) if text.startswith("HTTP/") else 0
    body = text.partition("\r\n\r\n")[2]
    try:
        parsed = json.loads(body) if body else None
    except json.JSONDecodeError:
        parsed = None
    return status, parsed, text


def websocket_frame(text):
    """A masked text frame, as a client sends it."""
    payload = text.encode()
    mask = os.urandom(4)
    header = bytes([0x81])
    if len(payload) < 126:
        header += bytes([0x80 | len(payload)])
    else:
        header += bytes([0x80 | 126]) + len(payload).to_bytes(2, "big")
    return header + mask + bytes(byte ^ mask[index % 4] for index, byte in enumerate(payload))


def error_of(answer):
    return (answer or {}).get("error", {})
