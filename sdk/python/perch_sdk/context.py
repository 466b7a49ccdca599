"""What a handler acts through: the host's calls (docs/plugins.md, "Calling the host") as methods.

Every method is a call to the host, made as the bot's user. In an `async def` handler await it; in
a plain `def` handler (run on a thread of its own) call it, and it waits for the host's answer."""
import asyncio
from typing import Any, Optional

from .events import Bot, Command, Event, Message


class HostError(Exception):
    """The host refused a call: `code` is the chat service's (`ERR_PERMISSION_DENIED`, ...) when it
    was the service, with its `params`; else None, and `str(error)` says why."""

    def __init__(self, message: str, code: Optional[str] = None, params: Optional[dict] = None):
        super().__init__(message)
        self.code = code
        self.params = params or {}


class _Caller:
    """Calls the host, in a request's context (`context` is its id) or outside any event (None)."""

    def __init__(self, runtime, context: Optional[int]):
        self._runtime = runtime
        self._context = context

    def _call(self, method: str, params: Optional[dict] = None):
        params = {key: value for key, value in (params or {}).items() if value is not None}
        if self._context is not None:
            params["context"] = self._context
        coroutine = self._runtime.call(method, params)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._runtime.loop:
            return coroutine
        # A plain handler, on a thread of its own: wait here for the answer.
        return asyncio.run_coroutine_threadsafe(coroutine, self._runtime.loop).result()

    @staticmethod
    def _then(answer, pick):
        """`pick` applied to a call's result (None without one): awaitable when the call was."""
        if asyncio.iscoroutine(answer):
            async def picked():
                result = await answer
                return pick(result) if pick else None
            return picked()
        return pick(answer) if pick else None


class Storage(_Caller):
    """The bot's key-value store (docs/plugins.md, "Storage"); `namespace` keeps a plugin's keys
    apart from the bot's others. Values are JSON: str, int, float, bool, list, dict or None."""

    def __init__(self, runtime, context: Optional[int], namespace: Optional[str] = None):
        super().__init__(runtime, context)
        self._namespace = namespace

    def namespace(self, name: str) -> "Storage":
        return Storage(self._runtime, self._context, name)

    def _storage(self, method: str, params: dict, pick=None):
        params = dict(params, namespace=self._namespace)
        return self._then(self._call("host.storage." + method, params), pick)

    def get(self, key: str):
        """The value, or None when absent or expired."""
        return self._storage("get", {"key": key}, lambda result: result.get("value"))

    def set(self, key: str, value: Any, expires_in: Optional[int] = None):
        """Sets the value (None removes it), expiring `expires_in` seconds from now when given."""
        return self._storage("set", {"key": key, "value": value, "expiresIn": expires_in})

    def delete(self, key: str):
        return self._storage("delete", {"key": key})

    def increment(self, key: str, by: int = 1):
        """Adds `by` to an integer (0 when absent) in one transaction; the new value."""
        return self._storage("increment", {"key": key, "by": by}, lambda result: result.get("value"))

    def compare_and_set(self, key: str, expected: Any, new: Any):
        """Sets `new` only when the value is `expected` now (None: absent); whether it did."""
        return self._storage(
            "compareAndSet", {"key": key, "expected": expected, "new": new}, lambda result: bool(result.get("set")))

    def list(self, prefix: str = ""):
        """The live values whose keys start with `prefix`, as a dict in key order."""
        return self._storage(
            "list", {"prefix": prefix}, lambda result: {item["key"]: item["value"] for item in result["values"]})


class Host(_Caller):
    """What a plugin may do with no event in hand: send anywhere its bot may post, read, store.
    `PluginRuntime.host` outside any request; the base of `Context`."""

    def __init__(self, runtime, context: Optional[int] = None):
        super().__init__(runtime, context)
        self.storage = Storage(runtime, context)

    def send(self, receiver: str, text: str, receiver_type: str = "group", thread: Optional[int] = None,
             quote: Optional[int] = None, notify: bool = False, muid: Optional[str] = None):
        """Sends `text` to the group (or, with `receiver_type="user"`, the person) `receiver`, in the
        thread of `thread`, quoting `quote`; `muid` makes a repeat a no-op. Answers the message."""
        return self._message(self._call("host.send", {
            "receiverType": receiver_type, "receiver": receiver, "text": text, "parentMessageId": thread,
            "quotedMessageId": quote, "notify": notify or None, "muid": muid}))

    def messages(self, group: Optional[str] = None, user: Optional[str] = None, thread: Optional[int] = None,
                 pinned: bool = False, saved: bool = False, before: Optional[int] = None, limit: int = 30):
        """A page of messages as the bot sees them, oldest first: a group's, a one-on-one's, a
        thread's; `pinned=True` a conversation's pins; `saved=True` alone the bot's saved ones."""
        answer = self._call("host.messages", {
            "guid": group, "uid": user, "parentMessageId": thread, "pinned": pinned or None,
            "saved": saved or None, "before": before, "limit": limit})
        return self._then(answer, lambda result: [Message.from_json(item) for item in result["messages"]])

    def threads(self, group: Optional[str] = None, user: Optional[str] = None, limit: int = 30,
                after: Optional[dict] = None):
        """The bot's threads inbox (the threads it subscribes to): `(threads, next)`, where `next` is
        the `after` of the next page, or None."""
        answer = self._call("host.threads", {"guid": group, "uid": user, "limit": limit, "after": after})
        return self._then(answer, lambda result: (result["threads"], result.get("next")))

    def subscribe(self, who: Optional[str] = None, thread: Optional[int] = None):
        """Subscribes `who` (default: the event's sender) to the thread of `thread` (default: the
        event's message's thread). Someone other than the sender or the bot needs the bot file's
        `allow_subscribing_others: true`."""
        return self._then(self._call("host.subscribe", {"who": who, "parentMessageId": thread}), None)

    def unsubscribe(self, who: Optional[str] = None, thread: Optional[int] = None):
        return self._then(self._call("host.unsubscribe", {"who": who, "parentMessageId": thread}), None)

    def _message(self, answer):
        return self._then(answer, lambda result: Message.from_json(result.get("message")))


class Context(Host):
    """A request's event, bot and command, and every action of the bot-file vocabulary on its
    message, as the bot's user."""

    def __init__(self, runtime, context: int, bot: Bot, event: Event, command: Optional[Command],
                 captures: dict):
        super().__init__(runtime, context)
        self.bot = bot
        self.event = event
        self.message = event.message
        self.command = command
        self.captures = captures

    @property
    def sender(self) -> Optional[str]:
        return self.event.sender

    def reply(self, text: str, notify: bool = False):
        """Sends `text` in the message's conversation, at the top level."""
        return self._then(self._call("host.reply", {"text": text, "notify": notify or None}), None)

    def reply_in_thread(self, text: str, notify: bool = False):
        return self._then(self._call("host.reply_in_thread", {"text": text, "notify": notify or None}), None)

    def quote_reply(self, text: str, notify: bool = False):
        """Quote-replies to the message (in its thread when it is a thread reply)."""
        return self._then(self._call("host.quote_reply", {"text": text, "notify": notify or None}), None)

    def direct_message(self, text: str, notify: bool = False):
        """Sends `text` one-on-one to the sender."""
        return self._then(self._call("host.direct_message", {"text": text, "notify": notify or None}), None)

    def react(self, reaction: str):
        return self._then(self._call("host.react", {"reaction": reaction}), None)

    def unreact(self, reaction: str):
        return self._then(self._call("host.unreact", {"reaction": reaction}), None)

    def pin(self, as_system: bool = False, when_full: Optional[str] = None):
        """Pins the message, as `app_system` with `as_system` (bots with `system: true`);
        `when_full="unpin_oldest"` makes room in a full conversation."""
        return self._then(self._call("host.pin", {
            "as": "app_system" if as_system else None, "when_full": when_full}), None)

    def unpin(self):
        return self._then(self._call("host.unpin"), None)

    def save(self):
        return self._then(self._call("host.save"), None)

    def delete(self):
        return self._then(self._call("host.delete"), None)

    def kick(self):
        return self._then(self._call("host.kick"), None)

    def ban(self):
        return self._then(self._call("host.ban"), None)
