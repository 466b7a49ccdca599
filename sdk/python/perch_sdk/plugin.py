"""A Perch plugin in Python: handlers registered with decorators, run by the JSON-RPC loop the host
speaks on stdin and stdout (docs/plugins.md, "External plugins").

    plugin = Plugin("karma")

    @plugin.command("karma")
    async def karma(ctx):
        score = await ctx.storage.increment(ctx.command.args)
        await ctx.quote_reply(f"{ctx.command.args} has {score}")

    if __name__ == "__main__":
        plugin.run()

Requests are handled concurrently, each on a task of its own (a plain `def` handler on a thread of
its own), so a slow handler holds up only its own event. stdout is the protocol: the runtime sends
`print` to stderr, which the host logs."""
import asyncio
import inspect
import json
import sys
import threading
import traceback
from typing import Any, Callable, Dict, List, Optional

from .context import Context, Host, HostError
from .events import Bot, Command, Event

#: The listener callbacks a bot hears, for `Plugin.on`.
EVENT_NAMES = (
    "onTextMessageReceived", "onMediaMessageReceived", "onCustomMessageReceived", "onMessageEdited",
    "onMessageDeleted", "onMessagePinned", "onMessageUnpinned", "onMessageSaved", "onMessageUnsaved",
    "onMessageReactionAdded", "onMessageReactionRemoved", "onGroupMemberJoined", "onGroupMemberLeft",
    "onGroupMemberKicked", "onGroupMemberBanned", "onGroupMemberUnbanned", "onGroupMemberScopeChanged",
    "onMemberAddedToGroup",
)


class Plugin:
    """A plugin's handlers. Register them with the decorators, then call `run()`."""

    def __init__(self, name: str = ""):
        self.name = name
        #: The plugin entry's `config:` from the bot file, once started.
        self.config: Dict[str, Any] = {}
        #: The bot, once started.
        self.bot: Optional[Bot] = None
        self._events: Dict[str, List[Callable]] = {}
        self._every_event: List[Callable] = []
        self._commands: Dict[str, Callable] = {}
        self._handle: Optional[Callable] = None
        self._start: List[Callable] = []
        self._stop: List[Callable] = []
        self._notification: List[Callable] = []
        self._subscription: List[Callable] = []

    # Registration

    def on(self, event_name: str):
        """Calls the handler with a `Context` for every event of that name the bot hears."""
        if event_name not in EVENT_NAMES:
            raise ValueError(f"unknown event {event_name!r}; one of {', '.join(EVENT_NAMES)}")

        def register(handler):
            self._events.setdefault(event_name, []).append(handler)
            return handler
        return register

    def on_message(self, handler):
        """Calls the handler for every new text message the bot hears (`onTextMessageReceived`)."""
        return self.on("onTextMessageReceived")(handler)

    def on_event(self, handler):
        """Calls the handler for every event the bot hears, whatever its name."""
        self._every_event.append(handler)
        return handler

    def command(self, name: str):
        """Calls the handler when a rule's `plugin:` action fires on the command `name`
        (`on: {command: name}` in the bot file); `ctx.command.args` holds what follows it."""
        def register(handler):
            self._commands[name.lower()] = handler
            return handler
        return register

    def handle(self, handler):
        """Calls the handler for a rule's `plugin:` action that no `command` handler takes."""
        self._handle = handler
        return handler

    def on_start(self, handler):
        """Calls the handler (with the plugin's `Host`) when the host starts the plugin, before its
        first event, and again after a restart of the process."""
        self._start.append(handler)
        return handler

    def on_stop(self, handler):
        """Calls the handler (with the `Host`) when the host stops the plugin; answer quickly."""
        self._stop.append(handler)
        return handler

    def on_notification(self, handler):
        """Calls the handler with each routed notification (a dict, as `GET /v3/notifications`
        shows it), when the bot file's entry says `notifications: true`."""
        self._notification.append(handler)
        return handler

    def on_thread_subscription(self, handler):
        """Calls `handler(parent_message_id, uid, is_subscribed)` when someone's subscription to a
        thread of the bot's conversations changes, by any means."""
        self._subscription.append(handler)
        return handler

    # Running

    def run(self, stdin=None, stdout=None):
        """Speaks the protocol on stdin and stdout until the host closes stdin or stops it."""
        PluginRuntime(self, stdin or sys.stdin, stdout or sys.stdout).run()


class PluginRuntime:
    """The loop: reads the host's lines on a thread, handles each request on a task, and matches
    the answers to the plugin's own calls."""

    def __init__(self, plugin: Plugin, stdin, stdout):
        self.plugin = plugin
        self.stdin = stdin
        self.stdout = stdout
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self._write_lock = threading.Lock()
        self._pending: Dict[str, asyncio.Future] = {}
        self._next_call = 0
        self._stopped: Optional[asyncio.Event] = None
        #: The plugin's `Host` outside any request (its start, its stop, its own tasks).
        self.host: Optional[Host] = None

    def run(self):
        # What a handler prints goes to the log, not into the protocol.
        sys.stdout = sys.stderr
        asyncio.run(self._main())

    async def _main(self):
        self.loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        self.host = Host(self)
        lines: asyncio.Queue = asyncio.Queue()

        def read():
            for line in self.stdin:
                self.loop.call_soon_threadsafe(lines.put_nowait, line)
            self.loop.call_soon_threadsafe(lines.put_nowait, None)
        threading.Thread(target=read, name="perch-sdk-stdin", daemon=True).start()
        tasks = set()
        while not self._stopped.is_set():
            line = await lines.get()
            if line is None:
                break
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                print(f"perch_sdk: a line that is not JSON: {line[:200]!r}", file=sys.stderr)
                continue
            if "method" in message:
                task = asyncio.ensure_future(self._request(message))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            else:
                future = self._pending.pop(str(message.get("id")), None)
                if future and not future.done():
                    future.set_result(message)
        for task in list(tasks):
            task.cancel()

    def _write(self, message: dict):
        line = json.dumps(message, separators=(",", ":")) + "\n"
        with self._write_lock:
            self.stdout.write(line)
            self.stdout.flush()

    async def call(self, method: str, params: dict) -> Any:
        """Calls the host; its result, or raises `HostError`."""
        self._next_call += 1
        call_id = f"sdk-{self._next_call}"
        future = self.loop.create_future()
        self._pending[call_id] = future
        self._write({"jsonrpc": "2.0", "id": call_id, "method": method, "params": params})
        answer = await future
        error = answer.get("error")
        if error:
            data = error.get("data") or {}
            raise HostError(error.get("message", "refused"), data.get("code"), data.get("params"))
        return answer.get("result") or {}

    async def _request(self, request: dict):
        method = request.get("method")
        params = request.get("params") or {}
        try:
            result = await self._dispatch(method, params)
            self._write({"jsonrpc": "2.0", "id": request.get("id"), "result": result or {}})
        except _MethodNotFound:
            self._write({"jsonrpc": "2.0", "id": request.get("id"),
                         "error": {"code": -32601, "message": f"method not found: {method}"}})
        except Exception as error:  # a handler's failure is the host's to log, the plugin goes on
            traceback.print_exc(file=sys.stderr)
            self._write({"jsonrpc": "2.0", "id": request.get("id"),
                         "error": {"code": -32000, "message": f"{type(error).__name__}: {error}"}})
        if method == "stop":
            self._stopped.set()

    async def _dispatch(self, method: str, params: dict):
        plugin = self.plugin
        if method == "initialize":
            plugin.config = params.get("config") or {}
            plugin.bot = Bot.from_json(params.get("bot"))
            plugin.name = plugin.name or params.get("plugin", "")
            for handler in plugin._start:
                await self._invoke(handler, self.host)
            if plugin._every_event:
                return {"name": plugin.name}
            # Only the events it has handlers for: the host asks about no other.
            return {"name": plugin.name, "events": sorted(plugin._events)}
        if method == "stop":
            for handler in plugin._stop:
                await self._invoke(handler, self.host)
            return {}
        if method == "notification":
            for handler in plugin._notification:
                await self._invoke(handler, params.get("notification") or {})
            return {}
        if method == "threadSubscriptionChanged":
            for handler in plugin._subscription:
                await self._invoke(handler, int(params.get("parentMessageId") or 0), params.get("uid"),
                                   bool(params.get("isSubscribed")))
            return {}
        if method not in ("event", "handle"):
            raise _MethodNotFound()
        context = Context(
            self, params.get("context"), Bot.from_json(params.get("bot")), Event.from_json(params.get("event")),
            Command.from_json(params.get("command")), params.get("captures") or {})
        if method == "event":
            for handler in plugin._events.get(context.event.name, []) + plugin._every_event:
                await self._invoke(handler, context)
            return {}
        handler = plugin._commands.get(context.command.name.lower()) if context.command else None
        handler = handler or plugin._handle
        if handler:
            await self._invoke(handler, context)
        return {}

    @staticmethod
    async def _invoke(handler, *arguments):
        if inspect.iscoroutinefunction(handler):
            return await handler(*arguments)
        return await asyncio.to_thread(handler, *arguments)


class _MethodNotFound(Exception):
    pass
