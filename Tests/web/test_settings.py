"""The web chat hears what the configuration says, without a restart, and what the server knows
that the page did not load: a reload's copy, switches, reply type and bots; subscription state
changed elsewhere; quote replies in threads."""
import os
import signal
import time
import unittest

from harness import WebChatTestCase


class LiveSettingsTests(WebChatTestCase):
    def menu_labels(self, page, message_id):
        return {key: item.text for key, item in page.sheet_items(message_id).items()}

    def test_a_reload_reaches_an_open_page_copy_switches_reply_type_and_bots(self):
        message = self.server.send("hello there", as_uid="bob")
        page = self.page("alice")
        page.open_group("general")
        labels = self.menu_labels(page, message["id"])
        self.assertEqual(labels["action-copy"], "Copy")
        self.assertEqual(labels["action-reply"], "Reply")
        self.assertIn("action-subscription", labels)
        self.assertTrue(page.finds('[data-testid="conv-user-threadwatch"]'))

        path = os.path.join(self.server.dir, "config.yaml")
        with open(path) as f:
            original = f.read()
        changed = original.replace(
            "ui:\n  threadSubscription:\n    enabled: true\n",
            "ui:\n  replyType: NONE\n  threadSubscription:\n    enabled: true\n    hideOption: true\n").replace(
            "strings:\n", "strings:\n  MESSAGE_COPY: Kopieren\n")
        self.assertNotEqual(changed, original)
        watcher = os.path.join(self.server.dir, "bots", "thread-watcher.yaml")
        with open(watcher) as f:
            kept = f.read()
        added = os.path.join(self.server.dir, "bots", "greeter.yaml")
        try:
            with open(path, "w") as f:
                f.write(changed)
            os.remove(watcher)
            with open(added, "w") as f:
                f.write("name: greeter\nuser: { uid: greeter, name: Greeter }\ngroups: [general]\nrules:\n"
                        "  - on: { command: hi }\n    do: [{ reply: hello }]\n")
            self.server.process.send_signal(signal.SIGHUP)
            time.sleep(1)
            self.driver.execute_script("document.dispatchEvent(new Event('visibilitychange'))")
            page.wait_until(lambda: not page.finds('[data-testid="conv-user-threadwatch"]'),
                            what="the removed bot leaving the people")
            page.wait_until(lambda: page.finds('[data-testid="conv-user-greeter"]'), what="the added bot")
            # Its joining is the app's doing, not the group owner's, who did nothing.
            page.open_group("general")
            joined = page.wait_until(
                lambda: [n.text for n in page.finds("#messages li.action") if n.text.endswith("added greeter")],
                what="the added bot's joining")
            self.assertEqual(joined[-1], "app_system added greeter")
            labels = self.menu_labels(page, message["id"])
            self.assertEqual(labels["action-copy"], "Kopieren")
            self.assertNotIn("action-reply", labels)
            self.assertNotIn("action-subscription", labels)
        finally:
            if os.path.exists(added):
                os.remove(added)
            with open(path, "w") as f:
                f.write(original)
            with open(watcher, "w") as f:
                f.write(kept)
            self.server.process.send_signal(signal.SIGHUP)
            time.sleep(1)

    def test_the_option_shows_its_state_with_an_icon_and_hears_a_change_made_elsewhere(self):
        root = self.server.send("a thread to follow", as_uid="bob")
        page = self.page("alice")
        page.open_group("general")
        option = page.sheet_items(root["id"])["action-subscription"]
        self.assertEqual(option.get_attribute("data-subscribed"), "false")
        self.assertTrue(option.find_elements("css selector", "svg"))
        self.assertEqual(option.text, "Subscribe to thread")
        # Subscribed in another session (the API as alice): this page hears it.
        self.server.api("POST", f"/v3/messages/{root['id']}/thread/subscription", as_uid="alice")
        page.wait_until(
            lambda: page.sheet_items(root["id"])["action-subscription"].get_attribute("data-subscribed") == "true",
            what="the option to follow the change")
        self.assertEqual(page.sheet_items(root["id"])["action-subscription"].text, "Unsubscribe from thread")

    def test_subscription_state_is_fetched_again_when_the_tab_is_shown(self):
        page = self.page("alice")
        page.open_group("general")
        self.driver.execute_script("""
            window.fetched = [];
            const original = window.fetch;
            window.fetch = (url, options) => { window.fetched.push(String(url)); return original(url, options); };
        """)
        self.driver.execute_script("document.dispatchEvent(new Event('visibilitychange'))")
        page.wait_until(lambda: [u for u in self.driver.execute_script("return window.fetched")
                                 if u.startswith("/v3/groups/general/messages")],
                        what="the conversation fetched again")

    def test_delete_is_disabled_by_a_quote_reply_in_a_thread_posted_before_the_page_loaded(self):
        mine = self.server.send("my point", as_uid="alice")
        root = self.server.send("elsewhere", as_uid="bob")
        self.server.send("quoting alice", as_uid="carol", parentId=root["id"], quotedMessageId=mine["id"])
        page = self.page("alice")
        page.open_group("general")
        page.wait_until(lambda: page.sheet_items(mine["id"])["action-delete"].get_attribute("disabled") is not None,
                        what="delete disabled")
        # A message of one's own without quote replies can be deleted.
        free = self.server.send("nobody quoted this", as_uid="alice")
        page.message(free["id"])
        time.sleep(0.5)
        self.assertIsNone(page.sheet_items(free["id"])["action-delete"].get_attribute("disabled"))


if __name__ == "__main__":
    unittest.main()
