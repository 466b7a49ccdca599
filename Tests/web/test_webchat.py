"""The web chat in a real headless browser (Debian's chromium): signing in, the bots' work
arriving live, development sign-in off, a page back after the event log's retention, and the
stream limit."""
import json
import os
import sqlite3
import time
import unittest
import urllib.error
import urllib.request

from selenium.webdriver.common.by import By

from harness import Page, Server, browser, WebChatTestCase

SCREENSHOTS = os.environ.get("PERCH_SCREENSHOTS")  # a folder: write the README's screenshots there


class SignInAndLiveTests(WebChatTestCase):
    def test_sign_in_never_exposes_the_api_key(self):
        page = self.page("alice")
        self.assertNotIn(self.server.key, self.driver.page_source)
        storage = self.driver.execute_script("return JSON.stringify(Object.assign({}, sessionStorage))")
        self.assertNotIn(self.server.key, storage)
        self.assertIn("perch.token", storage)
        self.assertEqual(page.find("#me-name").text, "Alice")

    def test_mention_autocomplete_and_the_helpers_quote_reply_arrive_live(self):
        page = self.page("alice")
        page.open_group("general")
        box = page.type('[data-testid="composer-text"]', "hello @hel")
        page.click('[data-testid="mention-helper"]')
        box.send_keys("are you there")
        self.assertEqual(box.get_attribute("value"), "hello <@uid:helper> are you there")
        page.click('[data-testid="send"]')
        # The helper bot quote-replies; the reply arrives over the live stream and shows the quote.
        reply = page.wait_until(lambda: [n for n in page.finds("#messages .msg")
                                         if "I'm a Perch bot" in n.text], what="the helper's reply")[0]
        quoted = reply.find_element(By.CSS_SELECTOR, '[data-testid="quoted"]')
        self.assertIn("hello @Helper are you there", quoted.text)
        if SCREENSHOTS:
            self.driver.save_screenshot(os.path.join(SCREENSHOTS, "conversation.png"))

    def test_an_announcement_is_auto_pinned_live(self):
        page = self.page("alice")
        page.open_group("announcements")
        page.type('[data-testid="composer-text"]', "Release on Friday")
        page.click('[data-testid="send"]')
        banner = page.wait_until(
            lambda: page.find('[data-testid="pin-banner"]').is_displayed()
            and "Release on Friday" in page.find('[data-testid="pin-banner"]').text and page.find(
                '[data-testid="pin-banner"]'), what="the pinned banner")
        self.assertIn("Alice", banner.text)
        page.wait_for('[data-testid="pinned-mark"]')

    def test_help_lists_the_follow_commands_on_lines_of_their_own(self):
        page = self.page("carol")
        page.open_group("general")
        page.type('[data-testid="composer-text"]', "!help")
        page.click('[data-testid="send"]')
        answer = page.wait_until(lambda: [n for n in page.finds("#messages .msg")
                                          if "Thread Follow's commands:" in n.text], what="the help answer")[0]
        # A message's line breaks show as they were sent (pre-wrap), not run together.
        text = answer.find_element(By.CSS_SELECTOR, ".text").text
        self.assertEqual([line.split(" ")[0] for line in text.split("\n")], ["Thread", "!follow", "!unfollow"])

    def test_messages_from_others_arrive_live(self):
        page = self.page("alice")
        page.open_group("general")
        sent = self.server.send("live from bob", "bob")
        self.assertIn("live from bob", page.message(sent["id"]).text)


class DevSignInOffTests(unittest.TestCase):
    def test_sign_in_is_refused_when_development_sign_in_is_off(self):
        server = Server(dev_sign_in=False)
        try:
            with self.assertRaises(urllib.error.HTTPError) as refused:
                request = urllib.request.Request(server.url + "/v3/web/sign-in", method="POST",
                                                 data=json.dumps({"uid": "alice"}).encode(),
                                                 headers={"Content-Type": "application/json"})
                urllib.request.urlopen(request)
            self.assertEqual(refused.exception.code, 403)
            driver = browser()
            try:
                driver.get(server.url + "/")
                notice = Page.__new__(Page)
                notice.d = driver
                self.assertIn("Development sign-in is off", notice.wait_for("#signin-off").text)
                self.assertEqual(driver.find_elements(By.CSS_SELECTOR, '[data-testid^="signin-"]'), [])
            finally:
                driver.quit()
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main()


class EventGapTests(WebChatTestCase):
    """A page away for longer than the server keeps its events (storage.eventRetentionDays): its
    stream comes back with an old Last-Event-ID, is told what it missed (perch.gap), and the page
    fetches its conversation again instead of showing only what came after the gap."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        cls.driver = browser()

    def test_a_page_back_after_the_retention_fetches_its_conversation_again(self):
        page = self.page("alice")
        page.open_group("general")
        first = self.server.send("before the stop", as_uid="bob")
        page.message(first["id"])  # it came live: the page has a Last-Event-ID to resume from

        def away():
            self.server.send_local("while away one", as_uid="bob")
            self.server.send_local("while away two", as_uid="bob")
            # What a retention pass a week later leaves (RetentionTests checks the pass itself):
            # every event but the newest gone, and the log's start recorded.
            with sqlite3.connect(self.server.database()) as db:
                newest = db.execute("SELECT max(seq) FROM events").fetchone()[0]
                db.execute("DELETE FROM events WHERE seq < ?", (newest,))
                db.execute("INSERT INTO log_starts (log, pruned_through) VALUES ('events', ?)", (newest - 1,))

        self.server.restart(away)
        # The newest event would come live anyway; the one before it only by fetching again.
        page.wait_until(lambda: "while away one" in page.find("#messages").text, timeout=45,
                        what="the conversation fetched again")
        texts = page.find("#messages").text
        self.assertIn("before the stop", texts)
        self.assertIn("while away two", texts)


class StreamLimitTests(WebChatTestCase):
    """A server whose one stream is taken: the web chat's event stream is refused 503 with
    Retry-After, and the page waits that long before it asks again (a crowd turned away does not
    come back every second), then gets its stream and live messages once a place is free."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(max_streams=1)
        cls.driver = browser()

    def test_a_refused_stream_waits_as_told_then_comes_back(self):
        held = self.server.hold_websocket("bob")
        try:
            page = self.page("alice")
            page.open_group("general")
            attempts = "return performance.getEntriesByType('resource')" \
                ".filter((entry) => entry.name.endsWith('/v3/events')).length"
            page.wait_until(lambda: self.driver.execute_script(attempts) >= 1, what="a refused stream")
            time.sleep(3)
            # Retry-After is 5 s: one refusal so far (a page retrying every second would have four).
            self.assertEqual(self.driver.execute_script(attempts), 1)
        finally:
            self.server.release_websocket(held)
        # Once the place is free the page's next attempt (within 7.5 s of the first) gets the
        # stream, and messages arrive live again.
        page.wait_until(lambda: self.driver.execute_script("return Boolean(state.session)"), timeout=15,
                        what="the live stream")
        sent = self.server.send("after the wait", as_uid="bob")
        self.assertIn("after the wait", page.message(sent["id"]).text)
