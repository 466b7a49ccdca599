"""The Matrix backend end to end: the shipped bots, pointed at a real Synapse, doing what they do
on the embedded service, and the host's promises under kill -9, an outage and rate limits.
Run by `make test` (scripts/matrix-test)."""
import json
import threading
import time
import unittest
import urllib.parse

from perch import BOUNCER, LURKER, PINNER, TRACKER, Perch
from synapse import Synapse

BOTS = ["helper", "announcer", "moderator", "follow", "threadwatch", "pinner", "lurker", "tracker", "bouncer"]


def wait_for(check, timeout=30, interval=0.2):
    """Polls `check` until it answers something true (returned) or `timeout` passes (None)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        answer = check()
        if answer:
            return answer
        time.sleep(interval)
    return None


def relation(event):
    return event.get("content", {}).get("m.relates_to", {})


class World:
    """A Synapse with people (alice made the rooms), the bots' accounts, the rooms the bots use,
    and Perch running the shipped bots there."""

    def __init__(self, message_rate=None, digest_seconds=2):
        self.synapse = Synapse(message_rate=message_rate)
        self.alice = self.synapse.register("alice")
        self.bob = self.synapse.register("bob")
        self.carol = self.synapse.register("carol")
        if message_rate:
            # Only the bots are held to the low rate: people held to it too paced the bots' answers
            # to the rate, and the bots then never met a 429.
            overseer = self.synapse.register("overseer", admin=True)
            for person in (self.alice, self.bob, self.carol):
                overseer.call("POST", f"/_synapse/admin/v1/users/{urllib.parse.quote(person.id)}/override_ratelimit",
                              {"messages_per_second": 0, "burst_count": 0})
        self.bots = {uid: self.synapse.register(uid) for uid in BOTS}
        ids = {uid: user.id for uid, user in self.bots.items()}
        moderators = {ids["moderator"]: 50, ids["announcer"]: 50, ids["bouncer"]: 50, self.bob.id: 100}
        invite = list(ids.values()) + [self.bob.id, self.carol.id]
        self.general = self.alice.create_room("general", "General", invite, {"users": moderators})
        self.announcements = self.alice.create_room("announcements", "Announcements", invite, {"users": moderators})
        # A room where pinning needs 100, and the pinner bot is a moderator (50): Perch's rules let it
        # pin, the homeserver does not.
        self.locked = self.alice.create_room(
            "locked", "Locked", invite, {"users": {ids["pinner"]: 50}, "events": {"m.room.pinned_events": 100}})
        # Mapped, but no bot is in it at start: a bot invited later joins, and what came before is history.
        self.late = self.alice.create_room("late", "Late", [self.bob.id, self.carol.id])
        self.vault = self.alice.create_room("vault", "Vault", invite, preset="private_chat")
        self.alice.set_state(self.vault, "m.room.encryption", {"algorithm": "m.megolm.v1.aes-sha2"})
        for person in (self.bob, self.carol):
            for room in (self.general, self.announcements, self.locked, self.late):
                person.join(room)
        self.perch = Perch(
            self.synapse, {uid: user.token for uid, user in self.bots.items()},
            {"general": "#general:perch.test", "announcements": self.announcements, "locked": "#locked:perch.test",
             "vault": self.vault, "late": self.late},
            digest_seconds=digest_seconds, extra_bots={"pinner.yaml": PINNER, "lurker.yaml": LURKER, "tracker.yaml": TRACKER,
                        "bouncer.yaml": BOUNCER})

    def destroy(self):
        self.perch.destroy()
        self.synapse.destroy()

    def replies_to(self, room, event, sender=None):
        """The events of `room` that quote `event` (`m.in_reply_to`, not a thread's fallback)."""
        found = []
        for item in self.alice.timeline(room, 200):
            rel = relation(item)
            if rel.get("m.in_reply_to", {}).get("event_id") != event or rel.get("is_falling_back"):
                continue
            if sender is None or item["sender"] == sender:
                found.append(item)
        return found

    def direct_messages(self, person, bot):
        """The messages `bot` sent `person` in their direct chat (joined on its invite)."""
        for room in person.invites():
            person.join(room)
        found = []
        for room in person.call("GET", "/_matrix/client/v3/joined_rooms")["joined_rooms"]:
            if room in (self.general, self.announcements, self.locked, self.vault, self.late):
                continue
            found += [e for e in person.timeline(room) if e["sender"] == bot.id and e["type"] == "m.room.message"]
        return found


class ShippedBotsOnMatrix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.world = World()

    @classmethod
    def tearDownClass(cls):
        cls.world.destroy()

    def test_a_mention_gets_a_quote_reply(self):
        world = self.world
        helper = world.bots["helper"]
        mention = world.alice.say(world.general, f"hello {helper.id}", mentions=[helper.id])
        replies = wait_for(lambda: world.replies_to(world.general, mention, helper.id))
        self.assertIsNotNone(replies, world.perch.log_text()[-2000:])
        self.assertEqual(len(replies), 1)
        self.assertIn("Hi alice!", replies[0]["content"]["body"])
        self.assertIn(world.alice.id, replies[0]["content"]["m.mentions"]["user_ids"])

    def test_a_mention_without_m_mentions_is_heard_by_the_matrix_id_in_the_text(self):
        world = self.world
        helper = world.bots["helper"]
        mention = world.bob.say(world.general, f"{helper.id}: are you there?")
        self.assertIsNotNone(wait_for(lambda: world.replies_to(world.general, mention, helper.id)))

    def test_an_announcement_is_pinned_and_a_participants_is_not(self):
        world = self.world
        announcement = world.alice.say(world.announcements, "The office is closed on Friday")
        chatter = world.carol.say(world.announcements, "noted")
        pinned = wait_for(lambda: announcement in world.alice.state(
            world.announcements, "m.room.pinned_events").get("pinned", []))
        self.assertTrue(pinned, world.perch.log_text()[-2000:])
        time.sleep(1)
        self.assertNotIn(chatter, world.alice.state(world.announcements, "m.room.pinned_events").get("pinned", []))

    def test_a_thread_reply_is_detected_by_its_relation(self):
        world = self.world
        watcher = world.bots["threadwatch"]
        root = world.carol.say(world.general, "Lunch plans?")
        reply = world.bob.say(world.general, "Pizza", thread=root)
        found = wait_for(lambda: [e for e in world.alice.timeline(world.general, 50)
                                  if e["sender"] == watcher.id and relation(e).get("event_id") == root])
        self.assertTrue(found, world.perch.log_text()[-2000:])
        self.assertEqual(relation(found[0]).get("rel_type"), "m.thread")
        self.assertIn("Lunch plans?", found[0]["content"]["body"])
        # The top-level message is no thread reply: the watcher said nothing of it.
        self.assertFalse([e for e in world.alice.timeline(world.general, 50)
                          if e["sender"] == watcher.id and relation(e).get("event_id") == reply])

    def test_follow_brings_replies_by_direct_message_and_unfollow_stops_them(self):
        world = self.world
        follow = world.bots["follow"]
        root = world.bob.say(world.general, "Who reviews the release notes?")
        world.alice.say(world.general, "!follow", thread=root)
        # The answer is alice's alone: a direct message, nothing in the thread.
        answered = wait_for(lambda: [e for e in world.direct_messages(world.alice, follow)
                                     if "Subscribed." in e["content"]["body"]])
        self.assertTrue(answered, world.perch.log_text()[-2000:])
        before = len(world.direct_messages(world.alice, follow))
        reply = world.carol.say(world.general, "I can take them", thread=root)
        digest = wait_for(lambda: world.direct_messages(world.alice, follow)[before:], timeout=30)
        self.assertTrue(digest, world.perch.log_text()[-2000:])
        self.assertIn("I can take them", digest[-1]["content"]["body"])
        self.assertIn(reply, digest[-1]["content"]["body"])
        world.alice.say(world.general, "!unfollow", thread=root)
        wait_for(lambda: [e for e in world.direct_messages(world.alice, follow)
                          if e["content"]["body"].startswith("Unsubscribed.")])
        count = len(world.direct_messages(world.alice, follow))
        world.carol.say(world.general, "Done, by the way", thread=root)
        time.sleep(6)
        self.assertEqual(len(world.direct_messages(world.alice, follow)), count)
        self.assertFalse([e for e in world.alice.timeline(world.general, 80)
                          if e["sender"] == follow.id and relation(e).get("event_id") == root])

    def test_a_mapped_room_joined_on_invite_is_heard_from_the_join_on_and_others_are_declined(self):
        world = self.world
        helper, lurker = world.bots["helper"], world.bots["lurker"]
        # The lurker answers every message it hears: the two before it joined are history.
        world.alice.say(world.late, "is anyone listening?")
        world.bob.say(world.late, "not yet")
        world.alice.call("POST", f"/_matrix/client/v3/rooms/{urllib.parse.quote(world.late, safe='')}/invite",
                         {"user_id": lurker.id})
        joined = wait_for(lambda: world.alice.state(world.late, "m.room.member", lurker.id).get("membership") == "join")
        self.assertTrue(joined, world.perch.log_text()[-2000:])
        world.alice.say(world.late, "and now?")
        heard = lambda: [e for e in world.alice.timeline(world.late) if e["sender"] == lurker.id
                         and e["type"] == "m.room.message"]
        self.assertTrue(wait_for(heard), world.perch.log_text()[-2000:])
        time.sleep(2)
        self.assertEqual(len(heard()), 1, [e["content"]["body"] for e in heard()])
        elsewhere = world.bob.create_room("elsewhere", "Elsewhere", [helper.id])
        declined = wait_for(lambda: world.bob.state(elsewhere, "m.room.member", helper.id).get("membership") == "leave")
        self.assertTrue(declined, world.perch.log_text()[-2000:])
        self.assertIn("declined an invite", world.perch.log_text())

    def test_a_bot_reacts_kicks_and_bans_on_the_homeserver(self):
        world = self.world
        bouncer = world.bots["bouncer"]
        dave = world.synapse.register("dave")
        dave.join(world.general)
        wave = dave.say(world.general, "!wave")
        reacted = wait_for(lambda: [e for e in world.alice.timeline(world.general) if e["type"] == "m.reaction"
                                    and e["sender"] == bouncer.id and relation(e).get("event_id") == wave])
        self.assertTrue(reacted, world.perch.log_text()[-2000:])
        self.assertEqual(relation(reacted[0]).get("key"), "👋")
        dave.say(world.general, "!kickme")
        membership = lambda: world.alice.state(world.general, "m.room.member", dave.id).get("membership")
        self.assertEqual(wait_for(lambda: membership() if membership() == "leave" else None), "leave",
                         world.perch.log_text()[-2000:])
        dave.join(world.general)
        dave.say(world.general, "!banme")
        self.assertEqual(wait_for(lambda: membership() if membership() == "ban" else None), "ban",
                         world.perch.log_text()[-2000:])

    def test_a_bots_own_thread_subscription_is_made_with_msc4306(self):
        world = self.world
        tracker = world.bots["tracker"]
        root = world.alice.say(world.general, "Release checklist")
        world.bob.say(world.general, "Step one done", thread=root)
        path = (f"/_matrix/client/unstable/io.element.msc4306/rooms/{urllib.parse.quote(world.general, safe='')}"
                f"/thread/{urllib.parse.quote(root, safe='')}/subscription")
        subscribed = wait_for(lambda: tracker.call("GET", path, expect_ok=False).get("status") is None)
        self.assertTrue(subscribed, world.perch.log_text()[-2000:])
        # People's follows are Perch's own: nobody's account was subscribed for them.
        self.assertEqual(world.bob.call("GET", path, expect_ok=False).get("status"), 404)

    def test_an_edit_that_adds_a_listed_word_is_redacted_by_the_moderator(self):
        world = self.world
        moderator = world.bots["moderator"]
        message = world.carol.say(world.general, "see my page")
        world.carol.edit(world.general, message, "see my page, it has a scamlink")
        redacted = wait_for(lambda: [e for e in world.alice.timeline(world.general, 50)
                                     if e["type"] == "m.room.redaction" and e["sender"] == moderator.id
                                     and (e.get("redacts") or e["content"].get("redacts")) == message])
        self.assertTrue(redacted, world.perch.log_text()[-2000:])
        self.assertTrue(redacted[0]["content"].get("reason"))

    def test_a_pin_refused_for_lack_of_power_is_logged_and_counted(self):
        world = self.world
        world.carol.say(world.locked, "pin me if you can")
        logged = wait_for(lambda: "M_FORBIDDEN" in world.perch.log_text() and "pinner" in world.perch.log_text())
        self.assertTrue(logged, world.perch.log_text()[-2000:])
        metrics = world.perch.metrics()
        self.assertIn('errcode="M_FORBIDDEN"', metrics)
        self.assertTrue(any(line.startswith("perch_matrix_errors_total") and 'account="pinner"' in line
                            for line in metrics.splitlines()), metrics)
        self.assertEqual(world.alice.state(world.locked, "m.room.pinned_events").get("pinned", []), [])
        self.assertTrue(world.perch.ready())

    def test_check_connect_names_missing_power_and_encrypted_rooms_and_start_reports_them(self):
        world = self.world
        code, output = world.perch.check_connect()
        self.assertEqual(code, 1, output)
        self.assertIn("matrix: ok: bot helper signs in as @helper:perch.test", output)
        self.assertIn("matrix: ok: the homeserver offers thread subscriptions (MSC4306)", output)
        self.assertIn("matrix: error: bot pinner may not pin in locked: m.room.pinned_events needs power 100, and "
                      "@pinner:perch.test has 50", output)
        self.assertIn("matrix: warning: the room of vault", output)
        self.assertIn("is encrypted", output)
        self.assertIn("matrix: ok: bot moderator is in general with the power its rules need", output)
        self.assertIn("the room of group vault", world.perch.log_text())
        self.assertIn("is encrypted", world.perch.log_text())

    def test_kill_9_mid_burst_and_a_restart_repeat_nothing(self):
        world = self.world
        helper = world.bots["helper"]
        mentions = [world.bob.say(world.general, f"{helper.id} question {n}", mentions=[helper.id]) for n in range(8)]
        wait_for(lambda: world.replies_to(world.general, mentions[1], helper.id), timeout=10, interval=0.05)
        world.perch.kill()
        world.perch.start()
        for mention in mentions:
            self.assertTrue(wait_for(lambda: world.replies_to(world.general, mention, helper.id)),
                            world.perch.log_text()[-2000:])
        time.sleep(2)
        for mention in mentions:
            self.assertEqual(len(world.replies_to(world.general, mention, helper.id)), 1, mention)

    def test_synapse_stopped_and_restarted_mid_burst_loses_nothing(self):
        world = self.world
        helper = world.bots["helper"]
        mentions = [world.carol.say(world.general, f"{helper.id} ping {n}", mentions=[helper.id]) for n in range(6)]
        world.synapse.stop()
        self.assertTrue(wait_for(lambda: not world.perch.ready(), timeout=30), "readyz stayed ready")
        time.sleep(2)
        world.synapse.start()
        self.assertTrue(wait_for(world.perch.ready, timeout=60), world.perch.log_text()[-2000:])
        for mention in mentions:
            self.assertTrue(wait_for(lambda: world.replies_to(world.general, mention, helper.id), timeout=60),
                            world.perch.log_text()[-2000:])
        time.sleep(2)
        for mention in mentions:
            self.assertEqual(len(world.replies_to(world.general, mention, helper.id)), 1, mention)


class RateLimitedHomeserver(unittest.TestCase):
    """A Synapse whose message rate is low: its 429s are waited out, and every reply goes out once."""

    @classmethod
    def setUpClass(cls):
        cls.world = World(message_rate="{per_second: 1, burst_count: 2}")

    @classmethod
    def tearDownClass(cls):
        cls.world.destroy()

    def test_429_is_honoured_and_every_reply_goes_out_once(self):
        world = self.world
        helper = world.bots["helper"]
        mentions = []
        for n in range(6):
            mentions.append(world.alice.say(world.general, f"{helper.id} burst {n}", mentions=[helper.id]))
        for mention in mentions:
            self.assertTrue(wait_for(lambda: world.replies_to(world.general, mention, helper.id), timeout=60),
                            world.perch.log_text()[-2000:])
        metrics = world.perch.metrics()
        limited = [line for line in metrics.splitlines()
                   if line.startswith("perch_matrix_rate_limited_total") and 'account="helper"' in line]
        self.assertTrue(limited and float(limited[0].split()[-1]) > 0, metrics)
        for mention in mentions:
            self.assertEqual(len(world.replies_to(world.general, mention, helper.id)), 1)


if __name__ == "__main__":
    unittest.main()
