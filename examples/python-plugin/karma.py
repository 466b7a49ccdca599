#!/usr/bin/env python3
"""Karma, a Perch plugin written with the Python SDK (sdk/python): `alice++` anywhere gives alice a
point, `!karma alice` says her score, `!top` the three best. Scores live in the bot's storage,
under the plugin's own namespace, so they survive restarts."""
import sys

from perch_sdk import Plugin

plugin = Plugin("karma")


def scores(ctx_or_host):
    return ctx_or_host.storage.namespace("karma")


@plugin.on_start
async def started(host):
    print(f"karma starts for {plugin.bot.name}, emoji {plugin.config.get('emoji', '⭐')}", file=sys.stderr)


@plugin.on_message
async def plus_plus(ctx):
    """`name++`: a point for name (never for oneself)."""
    text = (ctx.message.text or "").strip()
    if not text.endswith("++") or " " in text:
        return
    who = text[:-2].lstrip("@")
    if not who or who == ctx.sender:
        return
    score = await scores(ctx).increment(who)
    await ctx.quote_reply(f"{who} has {score} {plugin.config.get('emoji', '⭐')}")


@plugin.command("karma")
async def karma(ctx):
    who = ctx.command.args.strip() or ctx.sender
    score = await scores(ctx).get(who) or 0
    await ctx.quote_reply(f"{who} has {score} {plugin.config.get('emoji', '⭐')}")


@plugin.command("top")
def top(ctx):
    """A plain `def` handler runs on a thread of its own; its calls wait for the host's answer."""
    best = sorted(scores(ctx).list().items(), key=lambda item: (-item[1], item[0]))[:3]
    ctx.reply(", ".join(f"{who} {score}" for who, score in best) or "no karma yet")


if __name__ == "__main__":
    plugin.run()
