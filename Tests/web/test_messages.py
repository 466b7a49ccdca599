"""What a person does to messages in the browser: quote replies, edits, attachments, pins,
saves, reactions, the threads inbox, preferences and mutes."""
import json
import os
import tempfile
import time

from selenium.webdriver.common.by import By

from harness import WebChatTestCase

SCREENSHOTS = os.environ.get("PERCH_SCREENSHOTS")  # a folder: write the README's screenshots there


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
