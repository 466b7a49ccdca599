"""A real Synapse for the Matrix tests: from the virtualenv scripts/matrix-test made under .build/,
on loopback, SQLite, federation off, registration by shared secret only, MSC4306 on; the rc_*
rate limits raised out of the way unless a test asks for them low."""
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PYTHON = os.environ.get("SYNAPSE_PYTHON", os.path.join(ROOT, ".build", "synapse", "bin", "python"))
SERVER = "perch.test"
SECRET = "perch-tests-shared-secret"

HIGH = "{per_second: 1000, burst_count: 1000}"

CONFIG = """server_name: "{server}"
pid_file: {dir}/homeserver.pid
listeners:
  - port: {port}
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: {dir}/homeserver.db
log_config: "{dir}/log.config"
media_store_path: {dir}/media
registration_shared_secret: "{secret}"
enable_registration: false
report_stats: false
macaroon_secret_key: "perch-tests-macaroon"
form_secret: "perch-tests-form"
signing_key_path: "{dir}/signing.key"
trusted_key_servers: []
federation_domain_whitelist: []
suppress_key_server_warning: true
experimental_features:
  msc4306_enabled: true
rc_message: {message}
rc_login:
  address: {high}
  account: {high}
  failed_attempts: {high}
rc_joins:
  local: {high}
  remote: {high}
rc_invites:
  per_room: {high}
  per_user: {high}
  per_issuer: {high}
rc_admin_redaction: {high}
rc_room_creation: {high}
"""

LOG_CONFIG = """version: 1
formatters:
  precise:
    format: '%(asctime)s %(name)s %(levelname)s %(message)s'
handlers:
  file:
    class: logging.FileHandler
    formatter: precise
    filename: {dir}/homeserver.log
root:
  level: WARNING
  handlers: [file]
disable_existing_loggers: false
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MatrixError(Exception):
    def __init__(self, status, answer):
        super().__init__(f"{status} {answer}")
        self.status = status
        self.answer = answer


class Synapse:
    """A Synapse on a fresh directory; `stop` and `start` keep its data."""

    def __init__(self, message_rate=None):
        self.dir = tempfile.mkdtemp(prefix="perch-synapse-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        message = HIGH if message_rate is None else message_rate
        with open(os.path.join(self.dir, "hs.yaml"), "w") as f:
            f.write(CONFIG.format(server=SERVER, dir=self.dir, port=self.port, secret=SECRET, high=HIGH,
                                  message=message))
        with open(os.path.join(self.dir, "log.config"), "w") as f:
            f.write(LOG_CONFIG.format(dir=self.dir))
        subprocess.run([PYTHON, "-m", "synapse.app.homeserver", "-c", os.path.join(self.dir, "hs.yaml"),
                        "--generate-keys"], check=True, capture_output=True, cwd=self.dir)
        self.process = None
        self.start()

    def start(self):
        self.log = open(os.path.join(self.dir, "stdout.log"), "a")
        self.process = subprocess.Popen(
            [PYTHON, "-m", "synapse.app.homeserver", "-c", os.path.join(self.dir, "hs.yaml")],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=self.dir)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("synapse exited: " + open(os.path.join(self.dir, "stdout.log")).read()[-3000:])
            try:
                with urllib.request.urlopen(self.url + "/_matrix/client/versions", timeout=1):
                    return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.1)
        raise RuntimeError("synapse did not answer")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()

    def destroy(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def call(self, method, path, body=None, token=None, expect_ok=True):
        """A call as a client makes it; a 429 is waited out as the server asks."""
        while True:
            request = urllib.request.Request(
                self.url + path, method=method, data=json.dumps(body).encode() if body is not None else None)
            request.add_header("Content-Type", "application/json")
            if token:
                request.add_header("Authorization", "Bearer " + token)
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return json.loads(response.read() or b"{}")
            except urllib.error.HTTPError as error:
                answer = json.loads(error.read() or b"{}")
                if error.code == 429:
                    time.sleep(answer.get("retry_after_ms", 1000) / 1000)
                    continue
                if expect_ok:
                    raise MatrixError(error.code, answer) from None
                return {"status": error.code, **answer}

    def register(self, user, admin=False):
        """A new account by the shared secret: its Matrix id and access token."""
        nonce = self.call("GET", "/_synapse/admin/v1/register")["nonce"]
        password = "password-" + user
        mac = hmac.new(SECRET.encode(), digestmod=hashlib.sha1)
        mac.update(b"\x00".join([nonce.encode(), user.encode(), password.encode(), b"admin" if admin else b"notadmin"]))
        answer = self.call("POST", "/_synapse/admin/v1/register", {
            "nonce": nonce, "username": user, "password": password, "admin": admin, "mac": mac.hexdigest()})
        return User(self, answer["user_id"], answer["access_token"])


def room_path(room):
    return "/_matrix/client/v3/rooms/" + urllib.parse.quote(room, safe="")


class User:
    """An account, and what a person does with it."""

    def __init__(self, synapse, user_id, token):
        self.synapse = synapse
        self.id = user_id
        self.token = token
        self.sent = 0

    def call(self, method, path, body=None, expect_ok=True):
        return self.synapse.call(method, path, body, self.token, expect_ok)

    def create_room(self, alias, name, invite=(), power=None, preset="public_chat"):
        body = {"room_alias_name": alias, "name": name, "preset": preset, "invite": list(invite)}
        if power:
            body["power_level_content_override"] = power
        return self.call("POST", "/_matrix/client/v3/createRoom", body)["room_id"]

    def join(self, room):
        return self.call("POST", "/_matrix/client/v3/join/" + urllib.parse.quote(room, safe=""), {})

    def send(self, room, content, event_type="m.room.message"):
        self.sent += 1
        txn = f"t{time.time_ns()}-{self.sent}"
        path = f"{room_path(room)}/send/{event_type}/{txn}"
        return self.call("PUT", path, content)["event_id"]

    def say(self, room, text, thread=None, mentions=None):
        content = {"msgtype": "m.text", "body": text}
        if thread:
            content["m.relates_to"] = {"rel_type": "m.thread", "event_id": thread, "is_falling_back": True,
                                       "m.in_reply_to": {"event_id": thread}}
        if mentions is not None:
            content["m.mentions"] = {"user_ids": mentions}
        return self.send(room, content)

    def edit(self, room, event, text):
        return self.send(room, {"msgtype": "m.text", "body": "* " + text,
                                "m.new_content": {"msgtype": "m.text", "body": text},
                                "m.relates_to": {"rel_type": "m.replace", "event_id": event}})

    def timeline(self, room, limit=100):
        """The room's latest events, oldest first."""
        answer = self.call("GET", f"{room_path(room)}/messages?dir=b&limit={limit}")
        return list(reversed(answer.get("chunk", [])))

    def state(self, room, event_type, key=""):
        return self.call("GET", f"{room_path(room)}/state/{event_type}/{urllib.parse.quote(key, safe='')}",
                         expect_ok=False)

    def set_state(self, room, event_type, content, key=""):
        return self.call("PUT", f"{room_path(room)}/state/{event_type}/{urllib.parse.quote(key, safe='')}",
                         content)

    def invites(self):
        """The rooms this account is invited to now. (Synapse answers a repeated /sync from its
        cache for a while: each call's filter differs.)"""
        self.sent += 1
        limit = urllib.parse.quote(json.dumps({"room": {"timeline": {"limit": 1 + self.sent % 50}}}))
        answer = self.call("GET", f"/_matrix/client/v3/sync?timeout=0&filter={limit}&set_presence=offline"
                                  f"&since_nonce={self.sent}")
        return list(answer.get("rooms", {}).get("invite", {}).keys())
