"""The SDK's runtime against a host played by the test: the JSON-RPC it reads and writes, the
handlers it calls, the calls they make. The end-to-end tests (test_harness.py) run a real host."""
import json
import os
import queue
import subprocess
import sys
import textwrap
import threading
import time

import pytest

SDK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PLUGIN = textwrap.dedent('''
    import sys, time, threading
    from perch_sdk import Plugin, HostError

    plugin = Plugin("probe")

    @plugin.on_start
    async def started(host):
        print("started with", plugin.config, plugin.bot, file=sys.stderr)

    @plugin.on_message
    async def heard(ctx):
        m = ctx.message
        await ctx.reply(f"{ctx.event.name} {m.id} {m.sender} {m.text} {m.is_thread_reply} {m.thread_root} {ctx.sender}")

    @plugin.command("Echo")
    async def echo(ctx):
        await ctx.quote_reply(ctx.command.args)

    @plugin.command("slow")
    async def slow(ctx):
        import asyncio
        await asyncio.sleep(1.5)
        await ctx.reply("slow done")

    @plugin.command("sync")
    def sync(ctx):
        value = ctx.storage.namespace("n").increment("k", by=2)
        ctx.reply(f"sync {value} on {threading.current_thread().name != 'MainThread'}")

    @plugin.command("refused")
    async def refused(ctx):
        try:
            await ctx.subscribe(who="dave")
        except HostError as error:
            await ctx.reply(f"refused {error.code} {error.params} {error}")

    @plugin.command("boom")
    async def boom(ctx):
        print("to the log")
        raise ValueError("it broke")

    @plugin.handle
    async def anything(ctx):
        await ctx.reply("handled " + (ctx.command.name if ctx.command else "-"))

    @plugin.on_thread_subscription
    def subscription(parent, uid, subscribed):
        print("subscription", parent, uid, subscribed, file=sys.stderr)

    @plugin.on_stop
    async def stopping(host):
        await host.storage.set("stopped", True)

    plugin.run()
''')


class FakeHost:
    """The plugin's process, and the host's side of its pipes."""

    def __init__(self, tmp_path, source=PLUGIN):
        script = tmp_path / "probe.py"
        script.write_text(source)
        self.process = subprocess.Popen(
            [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=dict(os.environ, PYTHONPATH=SDK))
        self.lines = queue.Queue()
        self.errors = []
        threading.Thread(target=self._pump, args=(self.process.stdout, self.lines), daemon=True).start()
        threading.Thread(target=lambda: self.errors.extend(self.process.stderr), daemon=True).start()
        self.next_id = 0

    @staticmethod
    def _pump(stream, into):
        for line in stream:
            into.put(line)

    def write(self, message):
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def logged(self, text, timeout=10):
        """Whether a line of the plugin's stderr holds `text`, waiting for its reader to see it."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(text in line for line in list(self.errors)):
                return True
            time.sleep(0.01)
        return False

    def read(self, timeout=10):
        return json.loads(self.lines.get(timeout=timeout))

    def event(self, request_id, name="onTextMessageReceived", message=None, command=None):
        params = {"bot": {"name": "b", "uid": "bot"}, "context": request_id,
                  "event": {"name": name, "seq": 7, "message": message}, "captures": {}}
        if command:
            params["command"] = {"name": command[0], "args": command[1]}
        return params

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=10)


@pytest.fixture
def host(tmp_path):
    fake = FakeHost(tmp_path)
    yield fake
    fake.close()


MESSAGE = {"id": 12, "sender": "alice", "receiverType": "group", "receiverUid": "room", "conversationId": "group_room",
           "text": "hi", "parentMessageId": 5, "mentionedUids": ["bot"]}


def initialize(host):
    host.request("initialize", {"bot": {"name": "b", "uid": "bot"}, "plugin": "probe", "config": {"x": 1}})
    answer = host.read()
    # Its one event handler (on_message) is all it asks for.
    assert answer["result"] == {"name": "probe", "events": ["onTextMessageReceived"]}
    return answer


def test_start_event_and_a_call_of_its_own(host):
    initialize(host)
    request = host.request("event", host.event(40, message=MESSAGE))
    call = host.read()
    # The handler's reply is a call to the host in the request's context.
    assert call["method"] == "host.reply"
    assert call["params"] == {"text": "onTextMessageReceived 12 alice hi True 5 alice", "context": 40}
    host.write({"jsonrpc": "2.0", "id": call["id"], "result": {}})
    assert host.read() == {"jsonrpc": "2.0", "id": request, "result": {}}
    assert host.logged("started with {'x': 1} Bot(name='b', uid='bot')")


def test_a_plugin_hearing_every_event_asks_for_all(tmp_path):
    every = FakeHost(tmp_path, textwrap.dedent("""
        from perch_sdk import Plugin
        plugin = Plugin("all")

        @plugin.on_event
        async def heard(ctx):
            await ctx.reply(ctx.event.name)

        plugin.run()
    """))
    try:
        every.request("initialize", {"bot": {"name": "b", "uid": "bot"}, "plugin": "all", "config": {}})
        assert every.read()["result"] == {"name": "all"}
        every.request("event", every.event(3, name="onMessagePinned", message=MESSAGE))
        assert every.read()["params"] == {"text": "onMessagePinned", "context": 3}
    finally:
        every.close()


def test_commands_by_name_a_fallback_and_the_context_id(host):
    initialize(host)
    request = host.request("handle", dict(host.event(41, message=MESSAGE, command=("echo", "say this"))))
    call = host.read()
    assert call["method"] == "host.quote_reply"
    assert call["params"] == {"text": "say this", "context": 41}
    host.write({"jsonrpc": "2.0", "id": call["id"], "result": {}})
    assert host.read()["id"] == request
    host.request("handle", host.event(42, message=MESSAGE, command=("other", "")))
    call = host.read()
    assert call["params"]["text"] == "handled other"


def test_a_refusal_is_a_host_error_with_its_code(host):
    initialize(host)
    host.request("handle", host.event(43, message=MESSAGE, command=("refused", "")))
    call = host.read()
    assert call["method"] == "host.subscribe" and call["params"]["who"] == "dave"
    host.write({"jsonrpc": "2.0", "id": call["id"], "error": {
        "code": -32000, "message": "no", "data": {"code": "ERR_PERMISSION_DENIED", "params": {"uid": "dave"}}}})
    reply = host.read()
    assert reply["params"]["text"] == "refused ERR_PERMISSION_DENIED {'uid': 'dave'} no"


def test_requests_run_concurrently_and_plain_handlers_on_threads(host):
    initialize(host)
    slow = host.request("handle", host.event(50, message=MESSAGE, command=("slow", "")))
    host.request("handle", host.event(51, message=MESSAGE, command=("sync", "")))
    # The sync handler's storage call comes while the slow one sleeps.
    call = host.read(timeout=1)
    assert call["method"] == "host.storage.increment"
    assert call["params"] == {"key": "k", "by": 2, "namespace": "n", "context": 51}
    host.write({"jsonrpc": "2.0", "id": call["id"], "result": {"value": 2}})
    call = host.read()
    assert call["params"]["text"] == "sync 2 on True"
    host.write({"jsonrpc": "2.0", "id": call["id"], "result": {}})
    seen = [host.read(), host.read(timeout=5)]
    done = next(m for m in seen if m.get("method") == "host.reply")
    assert done["params"]["text"] == "slow done"
    host.write({"jsonrpc": "2.0", "id": done["id"], "result": {}})
    assert host.read()["id"] == slow


def test_a_failing_handler_answers_an_error_and_the_plugin_goes_on(host):
    initialize(host)
    failing = host.request("handle", host.event(60, message=MESSAGE, command=("boom", "")))
    answer = host.read()
    assert answer["id"] == failing and answer["error"]["message"] == "ValueError: it broke"
    # print() went to the log, not into the protocol.
    unknown = host.request("teleport", {})
    assert host.read() == {"jsonrpc": "2.0", "id": unknown,
                           "error": {"code": -32601, "message": "method not found: teleport"}}
    host.request("threadSubscriptionChanged", {"parentMessageId": 5, "uid": "carol", "isSubscribed": True})
    assert host.read()["result"] == {}
    host.close()
    assert host.logged("to the log")
    assert host.logged("subscription 5 carol True")


def test_stop_runs_its_handlers_and_the_plugin_exits(host):
    initialize(host)
    stop = host.request("stop", {"bot": {"name": "b", "uid": "bot"}, "plugin": "probe"})
    call = host.read()
    assert call["method"] == "host.storage.set" and "context" not in call["params"]
    assert call["params"] == {"key": "stopped", "value": True}
    host.write({"jsonrpc": "2.0", "id": call["id"], "result": {}})
    assert host.read()["id"] == stop
    host.process.stdin.close()
    assert host.process.wait(timeout=5) == 0
