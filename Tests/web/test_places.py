"""Finding a message where it was said, in a real browser: a quote inside the thread panel, a pinned
thread reply, and the saved messages of every conversation."""
import unittest

from harness import WebChatTestCase


class PlacesTests(WebChatTestCase):
    def test_a_quote_inside_the_thread_panel_scrolls_to_and_highlights_the_quoted_message(self):
        root = self.server.send("the plan", as_uid="alice")
        first = self.server.send("step one", as_uid="bob", parentId=root["id"])
        for index in range(30):
            self.server.send(f"filler {index}", as_uid="carol", parentId=root["id"])
        quoting = self.server.send("about step one", as_uid="dave", parentId=root["id"], quotedMessageId=first["id"])
        page = self.page("alice")
        page.open_group("general")
        page.message(root["id"])
        self.driver.execute_script(
            "arguments[0].querySelector('[data-testid=\"reply-count\"]').click()", page.message(root["id"]))
        page.wait_for(f'#side-body [data-id="{quoting["id"]}"]')
        quote = page.find(f'#side-body [data-id="{quoting["id"]}"] [data-testid="quoted"]')
        quote.click()
        page.wait_for(f'#side-body [data-id="{first["id"]}"].highlight')
        self.assertFalse(page.find("#toast").is_displayed() and "not in this conversation" in page.find("#toast").text)

    def test_a_pinned_thread_reply_shows_its_root_and_opens_in_its_thread(self):
        root = self.server.send("release checklist", as_uid="alice")
        reply = self.server.send("tests are green", as_uid="bob", parentId=root["id"])
        self.server.api("POST", f"/v3/messages/{reply['id']}/pin", as_uid="alice")
        page = self.page("alice")
        page.open_group("general")
        page.click('[data-testid="pins-toggle"]')
        item = page.wait_for(f'[data-testid="pinned-list"] [data-id="{reply["id"]}"]')
        self.assertIn("release checklist", item.find_element("css selector", '[data-testid="pinned-thread"]').text)
        item.find_element("css selector", '[data-testid="pinned-show"]').click()
        page.wait_for(f'#side-body [data-testid="thread-replies"] [data-id="{reply["id"]}"].highlight')
        self.assertEqual(page.find("#side").get_attribute("data-mode"), "thread")

    def test_the_saved_view_names_each_conversation_and_opens_it(self):
        in_group = self.server.send("keep this", as_uid="bob", group="announcements")
        direct = self.server.api("POST", "/v3/messages", {
            "receiver": "alice", "receiverType": "user", "data": {"text": "a private note"}}, as_uid="dave")
        for message in (in_group, direct):
            self.server.api("POST", f"/v3/messages/{message['id']}/save", as_uid="alice")
        page = self.page("alice")
        page.click('[data-testid="nav-saved"]')
        group_row = page.wait_for(f'[data-testid="saved-{in_group["id"]}"]')
        self.assertIn("# Announcements", group_row.text)
        self.assertIn("Dave", page.find(f'[data-testid="saved-{direct["id"]}"] [data-testid="saved-conversation"]').text)
        page.click(f'[data-testid="saved-{direct["id"]}"]')
        page.wait_for(f'#messages [data-id="{direct["id"]}"].highlight')
        self.assertEqual(page.find("#conv-title").text, "Dave")


class LongListsTests(WebChatTestCase):
    pins = 150
    saves = 150

    def test_pinned_and_saved_lists_past_a_page_show_to_their_end(self):
        ids = []
        for index in range(110):
            message = self.server.send(f"note {index}", as_uid="bob", group="announcements")
            self.server.api("POST", f"/v3/messages/{message['id']}/pin", as_uid="alice")
            self.server.api("POST", f"/v3/messages/{message['id']}/save", as_uid="alice")
            ids.append(message["id"])
        page = self.page("alice")
        page.open_group("announcements")
        page.wait_until(lambda: page.find('[data-testid="pins-toggle"]').text == "Pinned (110)", what="every pin")
        page.click('[data-testid="pins-toggle"]')
        page.wait_until(lambda: len(page.finds('[data-testid="pinned-list"] li')) == 110, what="the whole pin list")
        page.click('[data-testid="nav-saved"]')
        page.wait_until(lambda: len(page.finds('[data-testid^="saved-"][data-id]')) == 110, what="every saved message")
        self.assertTrue(page.finds(f'[data-testid="saved-{ids[0]}"]'), "the oldest save is there too")


if __name__ == "__main__":
    unittest.main()
