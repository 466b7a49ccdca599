"""maubot's side of the Matrix bench: quote-replies to every message that mentions the bot, as
Perch's shipped helper bot does (bots/helper.yaml)."""
from maubot import MessageEvent, Plugin
from maubot.handlers import event
from mautrix.types import EventType


class MentionPlugin(Plugin):
    @event.on(EventType.ROOM_MESSAGE)
    async def mentioned(self, evt: MessageEvent) -> None:
        if evt.sender == self.client.mxid:
            return
        mentions = getattr(evt.content, "mentions", None)
        ids = list(getattr(mentions, "user_ids", None) or []) if mentions else []
        if self.client.mxid in ids or self.client.mxid in (evt.content.body or ""):
            await evt.reply(f"Hi {evt.sender}! I'm a maubot.", markdown=False)
