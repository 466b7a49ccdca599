"""What a plugin is handed: the bot, the event, its message and the command, as typed objects.

Each keeps the JSON it came from in `raw`, for a field this module does not name."""
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class Bot:
    """The bot a request is for: its name in `bots/` and its user's uid."""
    name: str
    uid: str

    @classmethod
    def from_json(cls, data: Optional[dict]) -> "Bot":
        data = data or {}
        return cls(name=data.get("name", ""), uid=data.get("uid", ""))


@dataclass(frozen=True)
class Message:
    """A message as the API and the events show it (docs/chat-model.md)."""
    id: int
    sender: str
    receiver_type: str
    receiver_uid: str
    conversation_id: str
    type: str = "text"
    category: str = "message"
    text: Optional[str] = None
    parent_message_id: int = 0
    quoted_message_id: int = 0
    mentioned_uids: tuple = ()
    reply_count: int = 0
    sent_at: int = 0
    edited_at: int = 0
    deleted_at: int = 0
    metadata: Any = None
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_thread_reply(self) -> bool:
        """Whether it is a reply in a thread (its root is `parent_message_id`)."""
        return self.parent_message_id > 0

    @property
    def is_quote_reply(self) -> bool:
        return self.quoted_message_id > 0

    @property
    def thread_root(self) -> int:
        """The id of its thread's root: its parent's, or its own for a top-level message."""
        return self.parent_message_id or self.id

    @classmethod
    def from_json(cls, data: Optional[dict]) -> Optional["Message"]:
        if not data:
            return None
        return cls(
            id=int(data.get("id", 0)), sender=data.get("sender", ""), receiver_type=data.get("receiverType", ""),
            receiver_uid=data.get("receiverUid", ""), conversation_id=data.get("conversationId", ""),
            type=data.get("type", "text"), category=data.get("category", "message"), text=data.get("text"),
            parent_message_id=int(data.get("parentMessageId") or 0),
            quoted_message_id=int(data.get("quotedMessageId") or 0),
            mentioned_uids=tuple(data.get("mentionedUids") or ()), reply_count=int(data.get("replyCount") or 0),
            sent_at=int(data.get("sentAt") or 0), edited_at=int(data.get("editedAt") or 0),
            deleted_at=int(data.get("deletedAt") or 0), metadata=data.get("metadata"), raw=data)


@dataclass(frozen=True)
class Event:
    """One of the listener callbacks the bot hears: `onTextMessageReceived`, `onMessageEdited`,
    `onMessageReactionAdded`, `onGroupMemberJoined`, ... (`name`)."""
    name: str
    seq: int = 0
    conversation_id: str = ""
    message: Optional[Message] = None
    #: Who edited, deleted, pinned, saved or subscribed, when the event says.
    actor: Optional[str] = None
    #: On a reaction event: `{"uid", "reaction", "messageId"}`.
    reaction: Optional[dict] = None
    #: On a group member event: `{"uid", "guid", "scope", ...}`.
    member: Optional[dict] = None
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def sender(self) -> Optional[str]:
        """Whoever the event is from: who reacted, the member of a member event, else the
        message's sender."""
        if self.reaction:
            return self.reaction.get("uid")
        if self.member:
            return self.member.get("uid")
        return self.message.sender if self.message else None

    @classmethod
    def from_json(cls, data: Optional[dict]) -> "Event":
        data = data or {}
        return cls(
            name=data.get("name", ""), seq=int(data.get("seq") or 0), conversation_id=data.get("conversationId", ""),
            message=Message.from_json(data.get("message")), actor=data.get("actor"), reaction=data.get("reaction"),
            member=data.get("member"), raw=data)


@dataclass(frozen=True)
class Command:
    """A command message: `!echo hello` is `Command("echo", "hello")`."""
    name: str
    args: str = ""

    @classmethod
    def from_json(cls, data: Optional[dict]) -> Optional["Command"]:
        if not data:
            return None
        return cls(name=data.get("name", ""), args=data.get("args", ""))
