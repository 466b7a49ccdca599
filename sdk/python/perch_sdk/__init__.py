"""Perch's plugin SDK for Python (standard library only): write a plugin with decorators, run it
with `plugin.run()` from the bot file's `exec:`, and test it against a real host with
`perch_sdk.testing`. docs/python-sdk.md walks through it."""
from .context import Context, Host, HostError, Storage
from .events import Bot, Command, Event, Message
from .plugin import EVENT_NAMES, Plugin

__all__ = ["Bot", "Command", "Context", "EVENT_NAMES", "Event", "Host", "HostError", "Message", "Plugin",
           "Storage"]
