"""A test harness for plugin authors: a real `perch run` on a temporary directory with your bot
files and plugin, people to send as, and a way to wait for what the bot did.

    from perch_sdk.testing import PerchTestHost

    def test_karma():
        with PerchTestHost(bots={"karma.yaml": open("bots/karma.yaml").read()}) as perch:
            asked = perch.send("!karma alice", as_user="bob")
            answer = perch.wait_for_reply(asked)
            assert answer.text == "alice has 1"

With pytest, the fixture `perch_host` gives a factory: `perch_host(bots=...)` starts one host and
stops it after the test (`pytest_plugins = ["perch_sdk.testing"]` in your conftest.py).

The host is `perch` from `$PERCH_BINARY`, else the one on `PATH`, else this repository's build.
Its people are `alice` (who owns the groups), `bob` and `carol`, members of its groups `room` and
`other`; each bot is a member of the groups its file's `groups:` names. Plugins the host starts find
this SDK on their `PYTHONPATH`, and run in the host's directory, beside `files`."""
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable, Dict, List, Optional

from .events import Message

SDK_DIRECTORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPOSITORY = os.path.dirname(os.path.dirname(SDK_DIRECTORY))


def find_perch() -> str:
    """The `perch` the harness runs."""
    given = os.environ.get("PERCH_BINARY")
    if given:
        return given
    on_path = shutil.which("perch")
    if on_path:
        return on_path
    for build in ("release", "debug"):
        candidate = os.path.join(REPOSITORY, ".build", build, "perch")
        if os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError("no perch to run: set PERCH_BINARY, put perch on PATH, or build it (swift build)")


class PerchTestHost:
    """A running host; use it as a context manager (it stops and removes everything on exit)."""

    PEOPLE = ("alice", "bob", "carol")
    GROUPS = ("room", "other")

    def __init__(self, bots: Dict[str, str], files: Optional[Dict[str, str]] = None, config: str = "",
                 timeout: float = 10.0):
        """`bots`: bot files by name (`{"karma.yaml": "..."}`); `files`: more files to put beside
        config.yaml (your plugin, by the path its bot file's `exec` names); `config`: more
        config.yaml, appended; `timeout`: how long the `wait_for*` methods wait by default."""
        self.bots = bots
        self.files = files or {}
        self.extra_config = config
        self.timeout = timeout
        self.directory = ""
        self.process: Optional[subprocess.Popen] = None
        self.key = secrets.token_hex(16)
        self.port = 0

    # Starting and stopping

    def __enter__(self) -> "PerchTestHost":
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        self.directory = tempfile.mkdtemp(prefix="perch-sdk-test-")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        os.makedirs(os.path.join(self.directory, "bots"))
        for name, text in self.bots.items():
            with open(os.path.join(self.directory, "bots", name), "w") as out:
                out.write(text)
        for name, text in self.files.items():
            path = os.path.join(self.directory, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as out:
                out.write(text)
        members = "\n".join(f"            - {{ uid: {uid} }}" for uid in self.PEOPLE[1:])
        groups = "\n".join(f"""        - guid: {guid}
          name: {guid.title()}
          owner: alice
          members:
{members}""" for guid in self.GROUPS)
        users = "\n".join(f"        - {{ uid: {uid}, name: {uid.title()} }}" for uid in self.PEOPLE)
        config = f"""version: 1
server:
  listen: 127.0.0.1:{self.port}
  dataDirectory: {self.directory}/data
  apiKey: ${{PERCH_API_KEY}}
seed:
  users:
{users}
  groups:
{groups}
{self.extra_config}
"""
        with open(os.path.join(self.directory, "config.yaml"), "w") as out:
            out.write(config)
        self._launch()

    def _launch(self):
        environment = dict(os.environ, PERCH_API_KEY=self.key)
        environment["PYTHONPATH"] = os.pathsep.join(
            [SDK_DIRECTORY] + ([environment["PYTHONPATH"]] if environment.get("PYTHONPATH") else []))
        self.log_path = os.path.join(self.directory, "perch.log")
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(
                [find_perch(), "run", "--config", os.path.join(self.directory, "config.yaml")], env=environment,
                cwd=self.directory, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("perch exited at start:\n" + self.log())
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", timeout=1) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.05)
        raise RuntimeError("perch did not become ready:\n" + self.log())

    def restart(self):
        """Stops the host (SIGTERM, as a deployment does) and starts it again on the same data."""
        self._end()
        self._launch()

    def _end(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def stop(self):
        self._end()
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        """What the host has logged so far (its plugins' stderr too)."""
        with open(self.log_path) as log:
            return log.read()

    # Acting as people

    def api(self, method: str, path: str, body: Optional[dict] = None, as_user: Optional[str] = None):
        """Calls the HTTP API with the app's key (as `as_user` when given); the answer's `data`."""
        headers = {"apikey": self.key, "Content-Type": "application/json"}
        if as_user:
            headers["onBehalfOf"] = as_user
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return json.loads(answer.read() or b"{}").get("data")
        except urllib.error.HTTPError as error:
            raise RuntimeError(f"{method} {path}: {error.code} {error.read().decode()}") from None

    def send(self, text: str, as_user: str = "alice", group: Optional[str] = "room", user: Optional[str] = None,
             thread: Optional[int] = None, quote: Optional[int] = None) -> Message:
        """Posts `text` as `as_user` to `group` (or one-on-one to `user`); the message."""
        body = {"receiver": user or group, "receiverType": "user" if user else "group", "category": "message",
                "type": "text", "data": {"text": text}}
        if thread:
            body["parentId"] = thread
        if quote:
            body["quotedMessageId"] = quote
        return Message.from_json(self.api("POST", "/v3/messages", body, as_user=as_user))

    def messages(self, group: Optional[str] = "room", user: Optional[str] = None, viewer: str = "alice",
                 thread: Optional[int] = None) -> List[Message]:
        """The conversation's latest messages (a thread's, with `thread`) as `viewer` sees them,
        oldest first."""
        if thread:
            path = f"/v3/messages/{thread}/thread?limit=100"
        elif user:
            path = f"/v3/users/{urllib.parse.quote(user)}/messages?limit=100"
        else:
            path = f"/v3/groups/{urllib.parse.quote(group)}/messages?limit=100"
        return [Message.from_json(item) for item in self.api("GET", path, as_user=viewer) or []]

    # Waiting for the bot

    def wait_for(self, what: str, probe: Callable, timeout: Optional[float] = None):
        """Calls `probe` until it answers something true, and answers that; raises `TimeoutError`
        naming `what` (with the host's log) when `timeout` passes first."""
        deadline = time.time() + (timeout or self.timeout)
        while True:
            found = probe()
            if found:
                return found
            if time.time() > deadline:
                raise TimeoutError(f"timed out waiting for {what}; the host's log:\n{self.log()[-4000:]}")
            time.sleep(0.05)

    def wait_for_message(self, predicate: Callable[[Message], bool], group: Optional[str] = "room",
                         user: Optional[str] = None, viewer: str = "alice", thread: Optional[int] = None,
                         timeout: Optional[float] = None) -> Message:
        """The first message of the conversation for which `predicate` holds, once there is one."""
        def probe():
            return next((m for m in self.messages(group, user, viewer, thread) if predicate(m)), None)
        return self.wait_for("a message", probe, timeout)

    def wait_for_reply(self, to: Message, sender: Optional[str] = None, timeout: Optional[float] = None) -> Message:
        """The first message after `to` in its conversation (and its thread, when it is a reply)
        sent by a bot (`sender` when given): what the bot did about it."""
        group = to.receiver_uid if to.receiver_type == "group" else None
        user = None if group else to.receiver_uid
        viewer = to.sender

        def answer(message: Message) -> bool:
            by_bot = message.sender == sender if sender else message.sender not in self.PEOPLE
            return message.id > to.id and by_bot

        def probe():
            found = [m for m in self.messages(group, user, viewer) if answer(m)]
            if to.parent_message_id:
                found += [m for m in self.messages(thread=to.parent_message_id, viewer=viewer) if answer(m)]
            return min(found, key=lambda m: m.id) if found else None
        return self.wait_for(f"a reply to message {to.id}", probe, timeout)


try:
    import pytest
except ImportError:  # the harness works without pytest; only the fixture needs it
    pytest = None

if pytest is not None:
    @pytest.fixture
    def perch_host():
        """A factory: `perch_host(bots={...}, files={...})` starts a host, stopped after the test."""
        started: List[PerchTestHost] = []

        def start(**arguments) -> PerchTestHost:
            host = PerchTestHost(**arguments)
            host.start()
            started.append(host)
            return host
        yield start
        for host in started:
            host.stop()
