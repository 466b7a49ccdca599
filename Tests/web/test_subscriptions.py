"""The thread subscription surfaces in the browser: the option, the bells, their state, the
optimistic toggle, the gate and the hide flags."""
import os
import time

from harness import WebChatTestCase

SCREENSHOTS = os.environ.get("PERCH_SCREENSHOTS")  # a folder: write the README's screenshots there


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
