"""The SDK end to end: a plugin written with it, in a real `perch run` started by the harness."""
import textwrap

from perch_sdk.testing import PerchTestHost

PLUGIN = textwrap.dedent('''
    from perch_sdk import Plugin

    plugin = Plugin("tour")

    @plugin.on_start
    async def up(host):
        # Outside any event: a message of the bot's own, made once (its muid) however often it starts.
        await host.send("room", "tour is up", muid="tour-up")

    @plugin.command("pinme")
    async def pin_me(ctx):
        await ctx.pin()
        pins = await ctx.messages(group="room", pinned=True)
        await ctx.reply(f"pins {[message.id for message in pins]}")

    @plugin.command("follow")
    async def follow(ctx):
        thread = int(ctx.command.args)
        await ctx.subscribe(thread=thread)
        await ctx.subscribe(who=ctx.bot.uid, thread=thread)
        threads, following = await ctx.threads()
        await ctx.direct_message(f"following {[row['parentMessageId'] for row in threads]} {following}")

    @plugin.command("count")
    def count(ctx):
        ctx.reply(f"count {ctx.storage.increment('n')}")

    plugin.run()
''')

BOT = textwrap.dedent('''
    name: tour
    user: { uid: tourbot, name: Tour }
    groups: [{ guid: room, scope: moderator }]
    plugins:
      - name: tour
        exec: [python3, plugins/tour.py]
    rules:
      - on: { command: pinme }
        do: [{ plugin: tour }]
      - on: { command: follow }
        do: [{ plugin: tour }]
      - on: { command: count }
        do: [{ plugin: tour }]
''')


def test_a_plugin_acts_at_start_and_through_the_host_calls():
    with PerchTestHost(bots={"tour.yaml": BOT}, files={"plugins/tour.py": PLUGIN}) as perch:
        perch.wait_for_message(lambda m: m.text == "tour is up" and m.sender == "tourbot")

        asked = perch.send("!pinme", as_user="bob")
        assert perch.wait_for_reply(asked).text == f"pins [{asked.id}]"

        root = perch.send("a thread worth following", as_user="carol")
        perch.send("!follow " + str(root.id), as_user="alice")
        note = perch.wait_for_message(lambda m: m.text.startswith("following"), group=None, user="tourbot")
        assert note.text == f"following [{root.id}] None"
        assert perch.api("GET", f"/v3/messages/{root.id}", as_user="alice")["threadSubscribed"] is True

        perch.wait_for_reply(perch.send("!count", as_user="bob"))
        assert perch.wait_for_reply(perch.send("!count", as_user="bob")).text == "count 2"

        perch.restart()
        perch.wait_for_reply(perch.send("!count", as_user="bob"))
        ups = [m for m in perch.messages() if m.text == "tour is up"]
        assert len(ups) == 1 and perch.messages()[-1].text == "count 3"
