"""The web chat's notification centre in a real browser: the unread badge, the list newest first,
opening a notification where it was said (in its thread for a reply), and read state shared with
the person's other sessions."""
import time
import unittest

from harness import Page, WebChatTestCase


class NotificationCentreTests(WebChatTestCase):
    def badge(self, page):
        badge = page.find('[data-testid="notif-badge"]')
        return int(badge.text or 0) if badge.is_displayed() else 0

    def unread(self):
        return self.server.api("GET", "/v3/notifications?unread=true&limit=1000", as_uid="bob")

    def test_the_badge_the_list_and_opening_a_notification_where_it_was_said(self):
        # Start from nothing unread, so the badge counts what this test sends.
        self.server.api("POST", "/v3/notifications/read", {"all": True}, as_uid="bob")
        page = self.page("bob")
        page.wait_until(lambda: self.badge(page) == 0, what="no unread notification")
        mention = self.server.send("lunch, <@uid:bob>?", as_uid="alice")
        root = self.server.send("release notes", as_uid="bob")
        reply = self.server.send("reviewed", as_uid="carol", parentId=root["id"])
        expected = len(self.unread())
        self.assertGreaterEqual(expected, 2)
        page.wait_until(lambda: self.badge(page) == expected, what="the unread badge")

        page.click('[data-testid="nav-notifications"]')
        rows = page.wait_until(lambda: page.finds('[data-testid^="notification-"][data-read]'), what="the list")
        ids = [int(row.get_attribute("data-testid").split("-")[1]) for row in rows]
        self.assertEqual(ids, sorted(ids, reverse=True), "newest first")
        # The reply names its thread; opening it opens the thread and highlights the reply.
        row = next(r for r in self.unread() if r["messageId"] == reply["id"])
        node = page.find(f'[data-testid="notification-{row["id"]}"]')
        self.assertIn("General", node.text)
        self.assertIn("Carol", node.text)
        self.assertIn("release notes", node.find_element("css selector", '[data-testid="notification-thread"]').text)
        node.click()
        page.wait_until(lambda: page.find("#side").is_displayed(), what="the thread panel")
        page.wait_for(f'#side-body [data-id="{reply["id"]}"].highlight')
        page.wait_until(lambda: self.badge(page) == expected - 1, what="the badge after opening one")
        self.assertNotIn(row["id"], [r["id"] for r in self.unread()])

        # Marked read in another session (the API as bob): this page hears it.
        mention_row = next(r for r in self.unread() if r["messageId"] == mention["id"])
        self.server.api("POST", "/v3/notifications/read", {"ids": [mention_row["id"]]}, as_uid="bob")
        page.wait_until(lambda: self.badge(page) == expected - 2, what="the badge after another tab read one")

        # Mark all read clears the badge; a new message brings it back, live.
        page.click('[data-testid="nav-notifications"]')
        page.click('[data-testid="notif-mark-all"]')
        page.wait_until(lambda: self.badge(page) == 0, what="no badge after marking all read")
        self.assertEqual(self.unread(), [])
        self.server.send("one more", as_uid="dave")
        page.wait_until(lambda: self.badge(page) == 1, what="the badge of a new notification")
        page.wait_until(lambda: page.finds('[data-testid^="notification-"][data-read="false"]'),
                        what="the new row in the open list")

    def test_a_hidden_tab_shows_the_browsers_notification_once_allowed(self):
        page = self.page("bob")
        # A headless tab is never hidden and asks nobody: stand in for the browser's side, as a
        # person who allowed notifications and looked away would have it.
        self.driver.execute_script("""
            window.shown = [];
            window.Notification = class {
                constructor(title, options) { window.shown.push({ title, body: options.body }); }
                close() {}
            };
            window.Notification.permission = 'granted';
            Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
        """)
        self.server.send("are you there, <@uid:bob>?", as_uid="carol")
        shown = page.wait_until(lambda: self.driver.execute_script("return window.shown"), what="a notification")
        self.assertEqual(shown[0]["title"], "Carol · # General")
        self.assertEqual(shown[0]["body"], "are you there, @Bob?")

    def test_a_conversation_opens_at_its_newest_message_with_the_composer_in_view(self):
        for index in range(60):
            self.server.send(f"filler {index}", as_uid="carol", group="announcements")
        self.driver.set_window_size(1000, 657)
        try:
            page = self.page("alice")
            page.open_group("announcements")
            page.wait_until(lambda: "filler 59" in page.find("#messages").text, what="the newest message")
            composer = page.find('[data-testid="composer-text"]')
            inner = self.driver.execute_script("return window.innerHeight")
            self.assertLessEqual(composer.location["y"] + composer.size["height"], inner, "the composer is in view")
            # The list scrolls, not the page, and it is at its end.
            self.assertEqual(self.driver.execute_script("return document.scrollingElement.scrollTop"), 0)
            at_end = self.driver.execute_script(
                "const l = document.querySelector('#messages'); return l.scrollHeight - l.scrollTop - l.clientHeight")
            self.assertLess(at_end, 5)
            newest = page.finds("#messages li")[-1]
            self.assertIn("filler 59", newest.text)
            self.assertTrue(self.driver.execute_script(
                "const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight",
                newest))
        finally:
            self.driver.set_window_size(1280, 860)


if __name__ == "__main__":
    unittest.main()
