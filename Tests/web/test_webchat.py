"""The web chat in a real headless browser (Debian's chromium): the thread-subscription
surfaces, quote replies, pins and saves, the threads inbox, preferences, and the bots'
work arriving live."""
import json
import os
import sqlite3
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from selenium.webdriver.common.by import By

from harness import Page, Server, browser

SCREENSHOTS = os.environ.get("PERCH_SCREENSHOTS")  # a folder: write the README's screenshots there


class WebChatTestCase(unittest.TestCase):
    ui = "    enabled: true\n"
    pins = 100
    saves = 100

    @classmethod
    def setUpClass(cls):
        cls.server = Server(ui=cls.ui, pins=cls.pins, saves=cls.saves)
        cls.driver = browser()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.server.stop()

    def tearDown(self):
        # The page served with a strict Content-Security-Policy: nothing it does may be refused.
        refused = [entry["message"] for entry in self.driver.get_log("browser")
                   if "Content Security Policy" in entry["message"] or "Refused to" in entry["message"]]
        self.assertEqual(refused, [], "the Content-Security-Policy refused what the page did")

    def page(self, uid="alice"):
        self.driver.delete_all_cookies()
        self.driver.get(self.server.url + "/")
        self.driver.execute_script("sessionStorage.clear()")
        return Page(self.driver, self.server, uid)


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


class SubscriptionTests(WebChatTestCase):
    def test_the_option_is_on_parents_only_whatever_the_reply_count_in_groups_and_one_on_one(self):
        page = self.page("alice")
        parent = self.server.send("a parent with no replies", "bob")
        page.open_group("general")
        items = page.sheet_items(parent["id"])
        self.assertEqual(items["action-subscription"].text, "Subscribe to thread")
        reply = self.server.send("a reply", "bob", parentId=parent["id"])
        # In the thread panel, a reply's sheet has no subscription option.
        items["action-thread"].click()
        page.wait_for(f'[data-testid="thread-replies"] [data-id="{reply["id"]}"]')
        reply_items = page.sheet_items(reply["id"], within='[data-testid="thread-replies"]')
        self.assertNotIn("action-subscription", reply_items)
        # One-on-one too.
        direct = self.server.api("POST", "/v3/messages", {
            "receiver": "alice", "receiverType": "user", "category": "message", "type": "text",
            "data": {"text": "just us"}}, as_uid="bob")
        page.click('[data-testid="conv-user-bob"]')
        self.assertIn("action-subscription", page.sheet_items(direct["id"]))

    def test_the_bell_renders_in_thread_mode_only_and_the_fallback_stays_hidden(self):
        page = self.page("alice")
        parent = self.server.send("bell test", "bob")
        page.open_group("general")
        self.assertEqual(page.finds('[data-testid="top-bell"]'), [])
        page.sheet_items(parent["id"])["action-thread"].click()
        bell = page.wait_for('[data-testid="top-bell"]')
        self.assertEqual(page.finds('[data-testid="fallback-bell"]'), [])
        # Unknown or unsubscribed: an enabled Subscribe; subscribed: the accessible name only.
        self.assertEqual(bell.get_attribute("aria-pressed"), "false")
        self.assertEqual(bell.get_attribute("aria-label"), "Subscribe to thread")
        bell.click()
        page.toast("Subscribed. You'll be notified about new replies in this thread.")
        bell = page.wait_until(lambda: page.find('[data-testid="top-bell"]').get_attribute("aria-pressed") == "true"
                               and page.find('[data-testid="top-bell"]'), what="the subscribed bell")
        self.assertEqual(bell.get_attribute("aria-label"), "Following")
        self.assertNotIn("Following", page.find("#side").text)  # not visible text
        self.assertTrue(self.server.api("GET", f"/v3/messages/{parent['id']}", as_uid="alice")["threadSubscribed"])
        bell.click()
        page.toast("Unsubscribed. Notifications are off until you reply or are mentioned.")
        page.wait_until(lambda: page.find('[data-testid="top-bell"]').get_attribute("aria-pressed") == "false")
        self.assertFalse(self.server.api("GET", f"/v3/messages/{parent['id']}", as_uid="alice")["threadSubscribed"])
        if SCREENSHOTS:
            self.driver.save_screenshot(os.path.join(SCREENSHOTS, "thread.png"))

    def test_state_comes_from_the_fetched_message(self):
        parent = self.server.send("already followed", "bob")
        self.server.api("POST", f"/v3/messages/{parent['id']}/thread/subscription", as_uid="alice")
        page = self.page("alice")
        page.open_group("general")
        self.assertEqual(page.sheet_items(parent["id"])["action-subscription"].text, "Unsubscribe from thread")

    def test_optimistic_flip_one_request_in_flight_and_revert_with_the_failure_toast(self):
        page = self.page("alice")
        parent = self.server.send("flaky network", "bob")
        page.open_group("general")
        page.sheet_items(parent["id"])["action-thread"].click()
        page.wait_for('[data-testid="top-bell"]')
        # Hold subscription requests for a second and count them; then make them fail.
        self.driver.execute_script("""
            window.__subscriptionCalls = 0;
            window.__failSubscriptions = false;
            const realFetch = window.fetch;
            window.fetch = async (url, init) => {
              if (String(url).includes('/thread/subscription')) {
                window.__subscriptionCalls++;
                await new Promise((resolve) => setTimeout(resolve, 1000));
                if (window.__failSubscriptions) throw new TypeError('Failed to fetch');
              }
              return realFetch(url, init);
            };""")
        page.find('[data-testid="top-bell"]').click()
        # Flipped at once, before the server answered; a second tap while in flight does nothing.
        self.assertEqual(page.find('[data-testid="top-bell"]').get_attribute("aria-pressed"), "true")
        page.find('[data-testid="top-bell"]').click()
        page.toast("Subscribed.")
        self.assertEqual(self.driver.execute_script("return window.__subscriptionCalls"), 1)
        # Now the server cannot be reached: the flip is reverted, the failure toast shows, and the
        # event bus hears nothing (it emits only what the server accepted).
        self.driver.execute_script("""
            window.__heard = [];
            window.perchThreadEvents.add('spy', (event) => window.__heard.push(event));
            window.__failSubscriptions = true;""")
        page.find('[data-testid="top-bell"]').click()
        self.assertEqual(page.find('[data-testid="top-bell"]').get_attribute("aria-pressed"), "false")
        page.toast("Couldn't update. Please try again.")
        self.assertEqual(page.find('[data-testid="top-bell"]').get_attribute("aria-pressed"), "true")
        self.assertTrue(self.server.api("GET", f"/v3/messages/{parent['id']}", as_uid="alice")["threadSubscribed"])
        self.assertEqual(self.driver.execute_script("return window.__heard"), [])
        self.driver.execute_script("window.__failSubscriptions = false")
        page.find('[data-testid="top-bell"]').click()
        page.toast("Unsubscribed.")
        self.assertEqual(self.driver.execute_script("return window.__heard"),
                         [{"parentMessageId": parent["id"], "isSubscribed": False}])

    def test_offline_taps_fail_visibly_and_queue_nothing(self):
        page = self.page("alice")
        parent = self.server.send("offline", "bob")
        page.open_group("general")
        page.sheet_items(parent["id"])["action-thread"].click()
        page.wait_for('[data-testid="top-bell"]')
        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
            "offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
        try:
            page.find('[data-testid="top-bell"]').click()
            page.toast("Couldn't update. Please try again.")
            self.assertEqual(page.find('[data-testid="top-bell"]').get_attribute("aria-pressed"), "false")
        finally:
            self.driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
                "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
        time.sleep(1.5)
        self.assertFalse(self.server.api("GET", f"/v3/messages/{parent['id']}", as_uid="alice")["threadSubscribed"])

    def test_a_toggle_in_the_action_sheet_updates_the_open_bell_without_a_refetch(self):
        page = self.page("alice")
        parent = self.server.send("sync me", "bob")
        page.open_group("general")
        page.sheet_items(parent["id"])["action-thread"].click()
        page.wait_for('[data-testid="top-bell"]')
        self.driver.execute_script("""
            window.__gets = 0;
            const realFetch = window.fetch;
            window.fetch = (url, init) => {
              if (!init || !init.method || init.method === 'GET') {
                if (String(url).startsWith('/v3/messages/')) window.__gets++;
              }
              return realFetch(url, init);
            };""")
        page.sheet_items(parent["id"])["action-subscription"].click()
        page.toast("Subscribed.")
        page.wait_until(lambda: page.find('[data-testid="top-bell"]').get_attribute("aria-pressed") == "true",
                        what="the bell to follow the action sheet")
        self.assertEqual(self.driver.execute_script("return window.__gets"), 0)
        self.assertEqual(page.sheet_items(parent["id"])["action-subscription"].text, "Unsubscribe from thread")

    def test_listener_ids_evict_duplicates_and_failures_emit_nothing(self):
        self.page("alice")
        calls = self.driver.execute_script("""
            const calls = [];
            window.perchThreadEvents.add('mine', () => calls.push('first'));
            window.perchThreadEvents.add('mine', () => calls.push('second'));
            window.perchThreadEvents.emit(1, true);
            window.perchThreadEvents.remove('mine');
            return calls;""")
        self.assertEqual(calls, ["second"])

    def test_thread_unavailable_when_access_is_gone(self):
        page = self.page("dave")
        parent = self.server.send("members only", "bob")
        page.open_group("general")
        page.sheet_items(parent["id"])["action-thread"].click()
        page.wait_for('[data-testid="top-bell"]')
        self.server.api("DELETE", "/v3/groups/general/members/dave", as_uid="alice")
        try:
            page.find('[data-testid="top-bell"]').click()
            page.toast("You no longer have access to this thread.")
            self.assertEqual(page.find('[data-testid="top-bell"]').get_attribute("aria-pressed"), "false")
        finally:
            self.server.api("POST", "/v3/groups/general/members", {"participants": ["dave"]}, as_uid="alice")


class GateClosedTests(WebChatTestCase):
    ui = "    enabled: false\n"

    def test_with_the_gate_closed_no_surface_renders(self):
        page = self.page("alice")
        parent = self.server.send("gated", "bob")
        page.open_group("general")
        items = page.sheet_items(parent["id"])
        self.assertNotIn("action-subscription", items)
        items["action-thread"].click()
        page.wait_for('[data-testid="reply-bar"]')
        self.assertEqual(page.finds('[data-testid="top-bell"]'), [])
        self.assertEqual(page.finds('[data-testid="fallback-bell"]'), [])


class HideOptionTests(WebChatTestCase):
    ui = "    enabled: true\n    hideOption: true\n"

    def test_hide_option_removes_the_option_and_keeps_the_bell(self):
        page = self.page("alice")
        parent = self.server.send("no option", "bob")
        page.open_group("general")
        items = page.sheet_items(parent["id"])
        self.assertNotIn("action-subscription", items)
        items["action-thread"].click()
        page.wait_for('[data-testid="top-bell"]')


class HideButtonTests(WebChatTestCase):
    ui = "    enabled: true\n    hideButton: true\n"

    def test_hide_button_removes_the_bells_and_keeps_the_option(self):
        page = self.page("alice")
        parent = self.server.send("no bell", "bob")
        page.open_group("general")
        items = page.sheet_items(parent["id"])
        self.assertIn("action-subscription", items)
        items["action-thread"].click()
        page.wait_for('[data-testid="reply-bar"]')
        self.assertEqual(page.finds('[data-testid="top-bell"]'), [])
        self.assertEqual(page.finds('[data-testid="fallback-bell"]'), [])


class FallbackBellTests(WebChatTestCase):
    ui = "    enabled: true\n    topBarBell: false\n"

    def test_own_messages_and_thread_replies_show_once_from_the_answer(self):
        # The sending page is not sent its own messages over the live stream (as CometChat's
        # sender is not; the user's other sessions are, tested over the API): it shows them from
        # the POST's answer, and counts its own thread reply in the parent's bar once.
        page = self.page("alice")
        page.open_group("general")
        parent = self.server.send("a parent", "bob")
        page.wait_for(f'#messages [data-id="{parent["id"]}"]')
        page.type('[data-testid="composer-text"]', "my own line")
        page.click('[data-testid="send"]')
        page.wait_until(lambda: [n for n in page.finds("#messages .msg") if "my own line" in n.text],
                        what="alice's own line")
        page.sheet_items(parent["id"])["action-thread"].click()
        page.type('[data-testid="thread-text"]', "my own reply")
        page.click('[data-testid="thread-send"]')
        page.wait_until(lambda: "my own reply" in page.find('[data-testid="thread-replies"]').text,
                        what="the reply in the thread panel")
        bar = f'#messages [data-id="{parent["id"]}"] [data-testid="reply-count"]'

        def held():
            count = self.server.api("GET", f"/v3/messages/{parent['id']}", as_uid="alice")["replyCount"]
            return f"{count} {'reply' if count == 1 else 'replies'}"

        # The bar counts every reply the server holds (a bot may answer in the thread too), the own
        # reply once, also after the live events settle.
        page.wait_for(bar)
        page.wait_until(lambda: page.find(bar).text == held(), what="the bar to count the thread's replies")
        self.server.send("bob's reply", "bob", parentId=parent["id"])
        page.wait_until(lambda: page.find(bar).text == held(), what="bob's reply counted")
        time.sleep(1)
        self.assertEqual(page.find(bar).text, held())
        self.assertEqual(page.find('[data-testid="thread-replies"]').text.count("my own reply"), 1)
        self.assertEqual(len([n for n in page.finds("#messages .msg") if "my own line" in n.text]), 1)

    def test_an_older_own_message_changed_elsewhere_stays_out_of_the_list(self):
        # A change to one's own message that the page has not loaded (older than its page of 100)
        # is not shown at the bottom as if it were new.
        old = self.server.send("an old line of mine", "alice")
        for index in range(100):
            self.server.send(f"filler {index}", "bob")
        page = self.page("alice")
        page.open_group("general")
        page.wait_until(lambda: [n for n in page.finds("#messages .msg") if "filler 99" in n.text],
                        what="the newest page")
        self.server.api("PUT", f"/v3/messages/{old['id']}", {"data": {"text": "edited elsewhere"}}, as_uid="alice")
        marker = self.server.send("after the edit", "bob")
        page.message(marker["id"])
        self.assertEqual([n for n in page.finds("#messages .msg") if "edited elsewhere" in n.text], [])

    def test_without_a_top_bar_bell_the_reply_count_bar_carries_the_fallback(self):
        page = self.page("alice")
        parent = self.server.send("fallback", "bob")
        page.open_group("general")
        page.sheet_items(parent["id"])["action-thread"].click()
        bell = page.wait_for('[data-testid="reply-bar"] [data-testid="fallback-bell"]')
        self.assertEqual(page.finds('[data-testid="top-bell"]'), [])
        bell.click()
        page.toast("Subscribed.")


class QuoteReplyTests(WebChatTestCase):
    def test_reply_starts_quote_mode_with_a_closable_preview_and_sends_the_quote(self):
        page = self.page("alice")
        original = self.server.send("the original", "bob")
        page.open_group("general")
        page.sheet_items(original["id"])["action-reply"].click()
        preview = page.wait_for('[data-testid="quote-preview"]')
        self.assertIn("the original", preview.text)
        page.click('[data-testid="quote-close"]')
        page.wait_until(lambda: not page.find('[data-testid="quote-preview"]').is_displayed())
        page.sheet_items(original["id"])["action-reply"].click()
        page.type('[data-testid="composer-text"]', "my quote reply")
        page.click('[data-testid="send"]')
        node = page.wait_until(lambda: [n for n in page.finds("#messages .msg") if "my quote reply" in n.text],
                               what="the quote reply")[0]
        self.assertIn("the original", node.find_element(By.CSS_SELECTOR, '[data-testid="quoted"]').text)
        sent_id = int(node.get_attribute("data-id"))
        self.assertEqual(self.server.api("GET", f"/v3/messages/{sent_id}", as_uid="alice")["quotedMessageId"],
                         original["id"])
        self.assertFalse(page.find('[data-testid="quote-preview"]').is_displayed())
        # Reply is disabled on a quote reply (1-depth).
        self.assertFalse(page.sheet_items(sent_id)["action-reply"].is_enabled())

    def test_delete_is_disabled_on_ones_own_message_while_it_has_quote_replies(self):
        page = self.page("alice")
        page.open_group("general")
        mine = self.server.send("alice's message", "alice")
        page.message(mine["id"])
        self.assertTrue(page.sheet_items(mine["id"])["action-delete"].is_enabled())
        self.server.send("quoting alice", "bob", quotedMessageId=mine["id"])
        page.wait_until(lambda: not page.sheet_items(mine["id"])["action-delete"].is_enabled(),
                        what="Delete to be disabled")

    def test_clicking_a_quote_scrolls_to_and_highlights_the_original(self):
        original = self.server.send("far up the list", "bob")
        for index in range(40):
            self.server.send(f"filler {index}", "carol")
        quote = self.server.send("see above", "carol", quotedMessageId=original["id"])
        page = self.page("alice")
        page.open_group("general")
        page.message(quote["id"]).find_element(By.CSS_SELECTOR, '[data-testid="quoted"]').click()
        target = page.wait_until(
            lambda: "highlight" in page.message(original["id"]).get_attribute("class") and page.message(original["id"]),
            what="the highlight")
        in_view = self.driver.execute_script("""
            const r = arguments[0].getBoundingClientRect();
            const box = document.querySelector('#messages').getBoundingClientRect();
            return r.top >= box.top && r.bottom <= box.bottom;""", target)
        self.assertTrue(in_view)

    def test_a_file_is_uploaded_sent_quoted_and_rendered_in_the_quote(self):
        page = self.page("alice")
        page.open_group("general")
        path = os.path.join(tempfile.mkdtemp(), "notes.txt")
        with open(path, "w") as f:
            f.write("some notes\n")
        page.find('[data-testid="file"]').send_keys(path)
        page.click('[data-testid="send"]')
        node = page.wait_until(lambda: [n for n in page.finds("#messages .msg")
                                        if n.find_elements(By.CSS_SELECTOR, '[data-testid="attachment"]')],
                               what="the file message")[-1]
        file_id = int(node.get_attribute("data-id"))
        self.assertIn("notes.txt", node.text)
        page.sheet_items(file_id)["action-reply"].click()
        self.assertIn("notes.txt", page.wait_for('[data-testid="quote-preview"]').text)
        page.type('[data-testid="composer-text"]', "about your file")
        page.click('[data-testid="send"]')
        reply = page.wait_until(lambda: [n for n in page.finds("#messages .msg") if "about your file" in n.text],
                                what="the quote of the file")[0]
        self.assertIn("notes.txt", reply.find_element(By.CSS_SELECTOR, '[data-testid="quoted"]').text)

    def test_quote_replies_work_one_on_one(self):
        page = self.page("alice")
        direct = self.server.api("POST", "/v3/messages", {
            "receiver": "alice", "receiverType": "user", "category": "message", "type": "text",
            "data": {"text": "private original"}}, as_uid="carol")
        page.click('[data-testid="conv-user-carol"]')
        page.sheet_items(direct["id"])["action-reply"].click()
        page.type('[data-testid="composer-text"]', "private quote")
        page.click('[data-testid="send"]')
        node = page.wait_until(lambda: [n for n in page.finds("#messages .msg") if "private quote" in n.text],
                               what="the one-on-one quote reply")[0]
        self.assertIn("private original", node.find_element(By.CSS_SELECTOR, '[data-testid="quoted"]').text)

    def test_the_message_menu_has_the_reaction_bar_copy_and_reply(self):
        # The message menu holds a reaction bar, a Copy button and a Reply button, in that order.
        page = self.page("dave")
        message = self.server.send("copy me, <@uid:bob>, exactly", "carol")
        page.open_group("general")
        items = page.sheet_items(message["id"])
        self.assertIn("react-👍", items)
        self.assertIn("action-reply", items)
        if SCREENSHOTS:
            self.driver.save_screenshot(os.path.join(SCREENSHOTS, "action-sheet.png"))
        # The page is served from loopback, a secure origin: the clipboard API is the one used.
        page.d.execute_script(
            "window.copied = []; navigator.clipboard.writeText = (text) => { window.copied.push(text); "
            "return Promise.resolve(); }")
        items["action-copy"].click()
        page.toast("Copied")
        # As shown: the mention as @Name, not its token.
        self.assertEqual(page.d.execute_script("return window.copied"), ["copy me, @Bob, exactly"])
        # A file without text has nothing to copy.
        upload = self.server.api("POST", "/v3/messages", {
            "receiver": "general", "receiverType": "group", "category": "message", "type": "file",
            "data": {"attachments": [{"name": "a.txt", "size": 1, "mimeType": "text/plain", "extension": "txt",
                                      "url": "https://files.example/a.txt"}]}}, as_uid="carol")
        self.assertNotIn("action-copy", page.sheet_items(upload["id"]))


    def test_ones_own_message_is_edited_in_the_composer(self):
        page = self.page("dave")
        mine = self.server.send("first draft", "dave")
        theirs = self.server.send("not yours", "carol")
        page.open_group("general")
        # Offered on one's own text message only.
        self.assertNotIn("action-edit", page.sheet_items(theirs["id"]))
        page.sheet_items(mine["id"])["action-edit"].click()
        text = page.find('[data-testid="composer-text"]')
        self.assertEqual(text.get_attribute("value"), "first draft")
        self.assertIn("Editing your message", page.find('[data-testid="quote-preview"]').text)
        self.assertEqual(page.find('[data-testid="send"]').text, "Save")
        # Closing the preview leaves the message as it was and the composer empty.
        page.click('[data-testid="quote-close"]')
        self.assertEqual((text.get_attribute("value"), page.find('[data-testid="send"]').text), ("", "Send"))
        page.sheet_items(mine["id"])["action-edit"].click()
        text.clear()
        page.type('[data-testid="composer-text"]', "second draft")
        page.click('[data-testid="send"]')
        page.wait_until(lambda: "second draft" in page.message(mine["id"]).text, what="the edited text")
        self.assertTrue(page.message(mine["id"]).find_elements(By.CSS_SELECTOR, '[data-testid="edited-mark"]'))
        self.assertEqual((text.get_attribute("value"), page.find('[data-testid="send"]').text), ("", "Send"))
        stored = self.server.api("GET", f"/v3/messages/{mine['id']}", as_uid="dave")
        self.assertEqual(stored["text"], "second draft")
        self.assertNotEqual(stored["editedAt"], 0)
        # Someone else's edit arrives live, marked.
        self.server.api("PUT", f"/v3/messages/{theirs['id']}", {"data": {"text": "yours now"}}, as_uid="carol")
        page.wait_until(lambda: "yours now" in page.message(theirs["id"]).text, what="carol's edit, live")
        self.assertTrue(page.message(theirs["id"]).find_elements(By.CSS_SELECTOR, '[data-testid="edited-mark"]'))
        # The shipped moderator's edit rule, tried from the page: an edit that adds a listed word
        # is deleted.
        page.sheet_items(mine["id"])["action-edit"].click()
        text.clear()
        page.type('[data-testid="composer-text"]', "now with spamword")
        page.click('[data-testid="send"]')
        page.wait_until(lambda: "This message was deleted" in page.message(mine["id"]).text,
                        what="the moderator deleting the edited message")


class AttachmentTests(WebChatTestCase):
    def test_an_attachment_elsewhere_is_opened_without_the_token(self):
        """A file message whose attachment is on another origin: clicking it opens the address as a
        plain link, and that origin's server never sees the user's auth token."""
        import http.server
        import threading
        seen = []

        class Recorder(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                seen.append({name.lower(): value for name, value in self.headers.items()})
                body = b"elsewhere"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *arguments):
                pass

        elsewhere = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        threading.Thread(target=elsewhere.serve_forever, daemon=True).start()
        try:
            link = f"http://127.0.0.1:{elsewhere.server_address[1]}/notes.txt"
            sent = self.server.api("POST", "/v3/messages", {
                "receiver": "general", "receiverType": "group", "category": "message", "type": "file",
                "data": {"attachments": [{"name": "notes.txt", "size": 9, "mimeType": "text/plain",
                                          "extension": "txt", "url": link}]}}, as_uid="carol")
            page = self.page("alice")
            page.open_group("general")
            node = page.wait_until(lambda: [n for n in page.finds("#messages .msg")
                                            if n.get_attribute("data-id") == str(sent["id"])],
                                   what="the file message")[0]
            anchor = node.find_element(By.CSS_SELECTOR, '[data-testid="attachment"]')
            self.assertEqual(anchor.get_attribute("href"), link)
            self.assertIn("noopener", anchor.get_attribute("rel"))
            tabs = set(self.driver.window_handles)
            anchor.click()
            page.wait_until(lambda: seen, what="the other origin's request")
            for handle in set(self.driver.window_handles) - tabs:
                self.driver.switch_to.window(handle)
                self.driver.close()
            self.driver.switch_to.window(list(tabs)[0])
            token = self.driver.execute_script("return state.token")
            self.assertTrue(token)
            self.assertNotIn("authtoken", seen[0])
            self.assertNotIn(token, json.dumps(seen))
        finally:
            elsewhere.shutdown()


class PinSaveTests(WebChatTestCase):
    pins = 2
    saves = 2

    def test_pin_is_offered_only_to_those_who_may_pin_and_the_limit_shows(self):
        bob = self.page("bob")
        message = self.server.send("participants cannot pin", "carol")
        bob.open_group("general")
        self.assertNotIn("action-pin", bob.sheet_items(message["id"]))
        alice = self.page("alice")
        alice.open_group("general")
        ids = [self.server.send(f"pin {i}", "carol")["id"] for i in range(3)]
        for message_id in ids[:2]:
            alice.message(message_id)
            alice.sheet_items(message_id)["action-pin"].click()
            alice.wait_until(lambda: alice.message(message_id).find_elements(
                By.CSS_SELECTOR, '[data-testid="pinned-mark"]'), what="the pin")
        self.assertIn("pin 1", alice.find('[data-testid="pin-banner"]').text)
        alice.sheet_items(ids[2])["action-pin"].click()
        alice.toast("limit 2")
        alice.click('[data-testid="pins-toggle"]')
        listed = alice.wait_for('[data-testid="pinned-list"]').text
        self.assertIn("pin 0", listed)
        self.assertIn("pin 1", listed)
        self.assertEqual(alice.sheet_items(ids[0])["action-pin"].text, "Unpin")

    def test_save_and_the_saved_view(self):
        page = self.page("dave")
        message = self.server.send("worth keeping", "carol")
        page.open_group("general")
        page.sheet_items(message["id"])["action-save"].click()
        page.wait_until(lambda: page.message(message["id"]).find_elements(By.CSS_SELECTOR, '[data-testid="saved-mark"]'))
        self.assertEqual(page.sheet_items(message["id"])["action-save"].text, "Unsave")
        page.click('[data-testid="nav-saved"]')
        self.assertIn("worth keeping", page.wait_for('[data-testid="saved-list"]').text)
        # The saves limit (2 here) shows with the server's limit.
        more = [self.server.send(f"keep {i}", "carol")["id"] for i in range(2)]
        page.open_group("general")
        page.sheet_items(more[0])["action-save"].click()
        page.wait_until(lambda: page.message(more[0]).find_elements(By.CSS_SELECTOR, '[data-testid="saved-mark"]'))
        page.sheet_items(more[1])["action-save"].click()
        page.toast("limit 2")


    def test_reactions_are_toggled_and_arrive_live(self):
        page = self.page("dave")
        message = self.server.send("ship it?", "carol")
        page.open_group("general")

        def chips():
            return [(chip.text, chip.get_attribute("aria-pressed"))
                    for chip in page.message(message["id"]).find_elements(By.CSS_SELECTOR, '[data-testid="reaction"]')]

        page.sheet_items(message["id"])["react-👍"].click()
        page.wait_until(lambda: chips() == [("👍 1", "true")], what="dave's reaction")
        thumbs = page.sheet_items(message["id"])["react-👍"]
        self.assertEqual((thumbs.get_attribute("title"), thumbs.get_attribute("aria-pressed")), ("Take back 👍", "true"))
        # Every quick reaction is offered; 👀 is added beside 👍, then taken back from the sheet.
        self.assertEqual([key for key in page.sheet_items(message["id"]) if key.startswith("react-")],
                         ["react-👍", "react-🎉", "react-❤️", "react-😂", "react-👀", "react-✅"])
        page.sheet_items(message["id"])["react-👀"].click()
        page.wait_until(lambda: chips() == [("👍 1", "true"), ("👀 1", "true")], what="dave's 👀")
        page.sheet_items(message["id"])["react-👀"].click()
        page.wait_until(lambda: chips() == [("👍 1", "true")], what="dave's 👀 taken back")
        # Others' reactions arrive live, and leave dave's own as they were.
        self.server.api("POST", f"/v3/messages/{message['id']}/reactions/%F0%9F%91%8D", as_uid="bob")
        self.server.api("POST", f"/v3/messages/{message['id']}/reactions/%F0%9F%8E%89", as_uid="bob")
        page.wait_until(lambda: chips() == [("👍 2", "true"), ("🎉 1", "false")], what="bob's reactions, live")
        # A chip toggles the viewer's own.
        page.message(message["id"]).find_elements(By.CSS_SELECTOR, '[data-testid="reaction"]')[0].click()
        page.wait_until(lambda: chips() == [("👍 1", "false"), ("🎉 1", "false")], what="dave's reaction taken back")


class InboxAndPreferencesTests(WebChatTestCase):
    def test_the_threads_inbox_orders_by_the_last_reply_never_by_updated_at(self):
        older = self.server.send("thread one", "alice")
        newer = self.server.send("thread two", "alice")
        self.server.send("reply to two", "bob", parentId=newer["id"])
        time.sleep(1.1)
        self.server.send("reply to one", "bob", parentId=older["id"])
        time.sleep(1.1)
        # A subscription change bumps thread two's updatedAt, not its activity.
        self.server.api("DELETE", f"/v3/messages/{newer['id']}/thread/subscription", as_uid="alice")
        self.server.api("POST", f"/v3/messages/{newer['id']}/thread/subscription", as_uid="alice")
        page = self.page("alice")
        page.click('[data-testid="nav-threads"]')
        inbox = page.wait_for('[data-testid="threads-inbox"]')
        rows = [row.get_attribute("data-testid") for row in inbox.find_elements(By.CSS_SELECTOR, ".thread-row")]
        self.assertLess(rows.index(f"thread-{older['id']}"), rows.index(f"thread-{newer['id']}"))
        if SCREENSHOTS:
            self.driver.save_screenshot(os.path.join(SCREENSHOTS, "threads.png"))
        page.click(f'[data-testid="thread-{older["id"]}"]')
        self.assertIn("reply to one", page.wait_for('[data-testid="thread-replies"]').text)

    def test_notification_preferences_are_read_and_written(self):
        page = self.page("carol")
        page.click('[data-testid="nav-prefs"]')
        select = page.wait_for('[data-testid="pref-groupReplies"]')
        self.assertEqual(select.get_attribute("value"), "SUBSCRIBE_TO_SUBSCRIBED_THREADS")
        select.find_element(By.CSS_SELECTOR, 'option[value="SUBSCRIBE_TO_MENTIONS"]').click()
        page.toast("Preferences saved.")
        stored = self.server.api("GET", "/v3/notifications/preferences", as_uid="carol")
        self.assertEqual(stored["groupPreferences"]["groupReplies"], 3)
        if SCREENSHOTS:
            self.driver.save_screenshot(os.path.join(SCREENSHOTS, "preferences.png"))

    def test_a_muted_conversation_and_do_not_disturb_silence_the_outbox(self):
        def outbox():
            return [row["messageId"] for row in self.server.api("GET", "/v3/notifications?limit=1000", as_uid="dave")]

        page = self.page("dave")
        page.open_group("general")
        toggle = page.wait_until(lambda: page.find('[data-testid="mute-toggle"]').is_displayed()
                                 and page.find('[data-testid="mute-toggle"]'), what="the mute toggle")
        self.assertEqual((toggle.text, toggle.get_attribute("aria-pressed")), ("Mute", "false"))
        toggle.click()
        page.toast("Conversation muted.")
        self.assertEqual((toggle.text, toggle.get_attribute("aria-pressed")), ("Unmute", "true"))
        muted = self.server.api("GET", "/v3/notifications/preferences/mute", as_uid="dave")["mutedConversations"]
        self.assertEqual(muted, [{"id": "general", "type": "group", "until": 0}])
        quiet = self.server.send("muted <@uid:dave>", "carol")
        self.assertNotIn(quiet["id"], outbox())
        # The state is the server's: a page opened afresh shows the conversation muted.
        page = self.page("dave")
        page.open_group("general")
        toggle = page.wait_until(lambda: page.find('[data-testid="mute-toggle"]').is_displayed()
                                 and page.find('[data-testid="mute-toggle"]'), what="the mute toggle")
        self.assertEqual(toggle.text, "Unmute")
        toggle.click()
        page.toast("Conversation unmuted.")
        heard = self.server.send("unmuted <@uid:dave>", "carol")
        page.wait_until(lambda: heard["id"] in outbox(), what="the notification after unmuting")
        # Do not disturb, from the preferences view, silences every conversation.
        page.click('[data-testid="nav-prefs"]')
        self.assertFalse(page.find('[data-testid="mute-toggle"]').is_displayed())
        dnd = page.wait_for('[data-testid="pref-dnd"]')
        self.assertFalse(dnd.is_selected())
        dnd.click()
        page.toast("Do not disturb is on")
        stored = self.server.api("GET", "/v3/notifications/preferences", as_uid="dave")
        self.assertTrue(stored["mutePreferences"]["dnd"])
        silent = self.server.send("dnd <@uid:dave>", "carol")
        self.assertNotIn(silent["id"], outbox())
        if SCREENSHOTS:
            self.driver.save_screenshot(os.path.join(SCREENSHOTS, "do-not-disturb.png"))
        dnd.click()
        page.toast("Do not disturb is off.")
        self.assertFalse(self.server.api("GET", "/v3/notifications/preferences", as_uid="dave")["mutePreferences"]["dnd"])


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

