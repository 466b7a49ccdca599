"""The attack suite: a hostile client against a real `perch run`, one case for each class of hole
docs/security.md closes, and for what held. Run by `make test` (`scripts/attack-test`)."""
import hashlib
import hmac
import json
import os
import socket
import threading
import time
import unittest
import urllib.parse

from host import HOOK_SECRET, Host, error_of, raw_exchange, websocket_frame


class AttackCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.host = Host()

    @classmethod
    def tearDownClass(cls):
        cls.host.stop()

    def head(self, extra="", method="GET", path="/v3/groups/general/messages", body=None, as_uid="carol"):
        """A request's bytes with the key and `as_uid`, and `extra` header lines."""
        text = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: {self.host.key}\r\nonBehalfOf: {as_uid}\r\n"
        text += extra
        if body is not None:
            text += f"Content-Type: application/json\r\nContent-Length: {len(body.encode())}\r\n\r\n{body}"
        else:
            text += "\r\n"
        return text


class AttachmentAttacks(AttackCase):
    def upload_to_secret(self):
        status, answer, _ = self.host.call(
            "POST", "/v3/media?name=plan.txt", as_uid="alice", raw=b"the plan", headers={"Content-Type": "text/plain"})
        self.assertEqual(status, 200, answer)
        attachment = answer["data"]
        status, answer, _ = self.host.call("POST", "/v3/messages", {
            "receiver": "secret", "receiverType": "group", "type": "file", "data": {"attachments": [attachment]}},
            as_uid="alice")
        self.assertEqual(status, 200, answer)
        return attachment

    def test_a_file_of_a_private_group_is_not_opened_by_attaching_it_elsewhere(self):
        attachment = self.upload_to_secret()
        url = attachment["url"]
        self.assertEqual(self.host.call("GET", url, as_uid="mallory")[0], 403)
        for link in [url, self.host.url + url, "https://elsewhere.example" + url]:
            forged = dict(attachment, url=link)
            status, answer, _ = self.host.call("POST", "/v3/messages", {
                "receiver": "general", "receiverType": "group", "type": "file", "data": {"attachments": [forged]}},
                as_uid="mallory")
            self.assertEqual((status, error_of(answer).get("code")), (403, "ERR_MESSAGE_NO_ACCESS"), link)
        status, answer, _ = self.host.call("GET", url, as_uid="mallory")
        self.assertEqual(status, 403)
        self.assertNotIn("the plan", json.dumps(answer))

    def test_an_attachment_elsewhere_is_an_http_address(self):
        for link in ["javascript:alert(document.cookie)", "data:text/html,<script>alert(1)</script>",
                     "file:///etc/passwd", "/web/app.js", "https://x@evil.example/"]:
            status, answer, _ = self.host.call("POST", "/v3/messages", {
                "receiver": "general", "receiverType": "group", "type": "file",
                "data": {"attachments": [{"name": "a", "size": 1, "mimeType": "text/plain", "extension": "txt",
                                          "url": link}]}}, as_uid="mallory")
            self.assertEqual((status, error_of(answer).get("details", {}).get("field")),
                             (400, "attachments[0].url"), link)


class ActingForOthersAttacks(AttackCase):
    def test_a_user_cannot_create_a_group_in_someone_elses_name(self):
        token = self.host.token("mallory")
        for owner in ["alice", "echo", "app_system"]:
            for credentials in [{"as_uid": "mallory"}, {"token": token}]:
                status, answer, _ = self.host.call(
                    "POST", "/v3/groups", {"guid": f"g-{owner}-{len(credentials)}", "name": "G", "owner": owner},
                    **credentials)
                self.assertEqual((status, error_of(answer).get("code")), (403, "ERR_PERMISSION_DENIED"), owner)


class ConnectionExhaustionAttacks(AttackCase):
    def test_half_sent_requests_leave_health_and_metrics_reachable(self):
        sockets = []
        try:
            for index in range(1200):
                connection = socket.create_connection(("127.0.0.1", self.host.port), timeout=5)
                connection.sendall(f"GET /v3/users/{index} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-".encode())
                sockets.append(connection)
            for path in ["/healthz", "/readyz", "/metrics"]:
                started = time.time()
                status, _, text = raw_exchange(self.host.port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                self.assertEqual(status, 200, f"{path}: {text[:200]}")
                self.assertLess(time.time() - started, 3, path)
            status, _, _ = self.host.call("GET", "/v3/groups/general/messages", as_uid="carol")
            self.assertEqual(status, 200)
        finally:
            for connection in sockets:
                connection.close()

    def test_a_head_that_never_ends_is_told_so(self):
        with socket.create_connection(("127.0.0.1", self.host.port), timeout=10) as connection:
            connection.sendall(b"GET /v3/users HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
            answer = connection.recv(4096).decode()
        self.assertTrue(answer.startswith("HTTP/1.1 408"), answer)
        self.assertIn('"code":"ERR_BAD_REQUEST"', answer)


    def test_a_body_sent_a_byte_at_a_time_is_cut_off(self):
        with socket.create_connection(("127.0.0.1", self.host.port), timeout=15) as connection:
            connection.sendall(self.head("Content-Type: application/json\r\nContent-Length: 200\r\n",
                                         method="POST", path="/v3/messages").encode())
            started = time.time()
            closed = False
            while time.time() - started < 15 and not closed:
                try:
                    connection.sendall(b" ")
                    connection.settimeout(1)
                    closed = connection.recv(4096) == b""
                except socket.timeout:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
        self.assertTrue(closed)
        self.assertLess(time.time() - started, 8)


class NonReadingClientAttacks(AttackCase):
    def test_clients_that_do_not_read_hold_bounded_memory_which_returns_when_they_leave(self):
        for index in range(60):
            self.host.send("x" * 3000 + f" {index}", "alice")
        before = self.host.rss_mib()
        sockets = []
        request = websocket_frame(json.dumps(
            {"id": 1, "method": "GET", "path": "/v3/groups/general/messages?limit=100"}))
        for _ in range(100):
            connection, status = self.host.websocket("carol")
            self.assertEqual(status, 101)
            connection.setblocking(False)
            sockets.append(connection)
        deadline = time.time() + 8
        while time.time() < deadline:
            for connection in sockets:
                try:
                    connection.send(request * 20)
                except (BlockingIOError, OSError):
                    pass
            time.sleep(0.05)
        during = self.host.rss_mib()
        for connection in sockets:
            connection.close()
        time.sleep(3)
        after = self.host.rss_mib()
        # A hundred sockets, each allowed 256 KiB of answers waiting and the answers in progress
        # (some 200 KiB each), its thread and its reader: well under 2.5 MiB a socket.
        self.assertLess(during - before, 250, f"{before:.0f} → {during:.0f} MiB")
        # What the sockets held goes back; what stays is the heap's reserve (a few MiB an arena).
        self.assertLess(after - before, 50, f"{before:.0f} → {during:.0f} → {after:.0f} MiB")


class HostAndOriginAttacks(AttackCase):
    def test_a_rebinding_page_gets_no_token(self):
        body = json.dumps({"uid": "alice"})
        for host, origin in [("evil.example", "http://evil.example"), (f"evil.example:{self.host.port}", None)]:
            extra = f"Origin: {origin}\r\n" if origin else ""
            status, answer, text = raw_exchange(
                self.host.port,
                f"POST /v3/web/sign-in HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}")
            self.assertEqual(status, 421, text)
            self.assertNotIn("authToken", text)

    def test_another_sites_page_cannot_post(self):
        body = json.dumps({"receiver": "general", "receiverType": "group", "data": {"text": "csrf"}})
        status, _, text = raw_exchange(self.host.port, self.head(
            f"Origin: http://evil.example\r\n", method="POST", path="/v3/messages", body=body))
        self.assertEqual(status, 403, text)
        plain = (f"POST /v3/messages HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: {self.host.key}\r\nonBehalfOf: carol\r\n"
                 f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n{body}")
        self.assertEqual(raw_exchange(self.host.port, plain)[0], 415)
        connection, status = self.host.websocket("carol", origin="http://evil.example")
        connection.close()
        self.assertEqual(status, 403)


class SessionAttacks(AttackCase):
    def test_a_session_name_cannot_inject_lines_into_a_stream(self):
        for name in ["a\r\nevent: forged", "a\ndata: x"]:
            status, _, text = raw_exchange(self.host.port, self.head(
                path="/v3/events?session=" + urllib.parse.quote(name)))
            self.assertEqual(status, 400, text)
            self.assertNotIn("forged", text)

    def test_another_users_session_name_does_not_hide_their_messages(self):
        connection = socket.create_connection(("127.0.0.1", self.host.port), timeout=10)
        connection.sendall(self.head(path="/v3/events?session=carol-tab").encode())
        time.sleep(0.5)
        self.host.call("POST", "/v3/messages", {"receiver": "general", "receiverType": "group",
                                                "data": {"text": "hidden?"}},
                       as_uid="mallory", headers={"X-Perch-Session": "carol-tab"})
        seen = b""
        deadline = time.time() + 10
        while b"hidden?" not in seen and time.time() < deadline:
            seen += connection.recv(65536)
        connection.close()
        self.assertIn(b"hidden?", seen)

    def test_a_reconnect_storm_finds_closed_streams_slots_free(self):
        for _ in range(2):
            streams = []
            for _ in range(150):
                connection = socket.create_connection(("127.0.0.1", self.host.port), timeout=10)
                connection.sendall(self.head(path="/v3/events").encode())
                streams.append(connection)
            answers = [connection.recv(4096) for connection in streams]
            self.assertTrue(all(answer.startswith(b"HTTP/1.1 200") for answer in answers),
                            [answer[:40] for answer in answers if not answer.startswith(b"HTTP/1.1 200")][:3])
            for connection in streams:
                connection.close()
            time.sleep(0.5)


class LeakAndNoiseAttacks(AttackCase):
    def test_a_scope_change_tells_an_outsider_nothing_of_who_is_in_a_private_group(self):
        member = self.host.call("PUT", "/v3/groups/secret/members/bob", {"scope": "moderator"}, as_uid="mallory")
        stranger = self.host.call("PUT", "/v3/groups/secret/members/carol", {"scope": "moderator"}, as_uid="mallory")
        self.assertEqual((member[0], error_of(member[1]).get("code")), (stranger[0], error_of(stranger[1]).get("code")))

    def test_a_plugin_flooding_its_output_writes_a_few_log_lines(self):
        status, answer, _ = self.host.send("!flood", "carol")
        self.assertEqual(status, 200, answer)
        deadline = time.time() + 60
        while "flooded" not in json.dumps(self.host.call("GET", "/v3/groups/general/messages?limit=5",
                                                         as_uid="carol")[1]) and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(1)
        log = self.host.log_text()
        self.assertLess(log.count("flood line"), 300)
        self.assertLess(log.count("not a JSON-RPC response"), 300)


class ParsingAttacks(AttackCase):
    def test_a_nul_in_the_path_or_the_query_is_refused(self):
        for path in ["/v3/messages/1%00", "/web/app.js%00.png", "/v3/groups/general/messages?limit=5%00x"]:
            status, answer, text = raw_exchange(self.host.port, self.head(path=path))
            self.assertEqual((status, error_of(answer).get("code")), (400, "ERR_BAD_REQUEST"), text)

    def test_ambiguous_framing_and_duplicate_credentials_are_refused(self):
        body = json.dumps({"receiver": "general", "receiverType": "group", "data": {"text": "smuggled"}})
        cases = [
            f"Content-Length: 5\r\n",
            "Transfer-Encoding: chunked\r\n",
            f"apikey: {self.host.key}\r\n",
            "onBehalfOf: alice\r\n",
            "authtoken: x\r\nauthtoken: y\r\n",
        ]
        for extra in cases:
            status, _, text = raw_exchange(
                self.host.port, self.head(extra, method="POST", path="/v3/messages", body=body))
            self.assertIn(status, (400, 411), f"{extra!r}: {text}")
        chunked = self.head("Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n", method="POST",
                            path="/v3/messages").replace("\r\n\r\n", "\r\n\r\nffffffffffffffff\r\n")
        started = time.time()
        status, _, _ = raw_exchange(self.host.port, chunked, timeout=5)
        self.assertEqual(status, 411)
        self.assertLess(time.time() - started, 4)
        duplicate = '{"receiver":"general","receiver":"secret","receiverType":"group","data":{"text":"x"}}'
        status, answer, _ = raw_exchange(self.host.port, self.head(method="POST", path="/v3/messages", body=duplicate))
        self.assertEqual(status, 400, answer)

    def test_what_the_http_library_would_answer_itself_is_json(self):
        for request, status in [
            ("GET / HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n", 505),
            ("GET /" + "a" * 10000 + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 414),
            ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + "b" * 20000 + "\r\n\r\n", 431),
            ("NOT HTTP AT ALL\r\n\r\n", 400),
        ]:
            answered, answer, text = raw_exchange(self.host.port, request)
            self.assertEqual(answered, status, text[:200])
            self.assertEqual(error_of(answer).get("code"), "ERR_BAD_REQUEST", text[:200])


class CostlyExpressionAttacks(AttackCase):
    def test_a_catastrophic_pattern_is_cut_and_counted(self):
        self.host.send("a" * 60 + "!", "mallory")
        self.host.send("!echo still here", "mallory")
        deadline = time.time() + 20
        while time.time() < deadline:
            texts = [message.get("text") for message in self.host.call(
                "GET", "/v3/groups/general/messages?limit=20", as_uid="carol")[1]["data"]]
            if "still here" in texts:
                break
            time.sleep(0.1)
        self.assertIn("still here", texts)
        _, _, text = raw_exchange(self.host.port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        self.assertIn('perch_regex_budget_exceeded_total{bot="greedy",rule="all-a"} 1', text)


class WhatHeld(AttackCase):
    def test_credentials_are_required_and_checked(self):
        self.assertEqual(self.host.call("GET", "/v3/users", key=False)[0], 401)
        self.assertEqual(self.host.call("GET", "/v3/users", key=False, headers={"apikey": "wrong-key-12345678"})[0], 401)
        self.assertEqual(self.host.call("GET", "/v3/users", token="not-a-token")[0], 401)
        self.assertEqual(self.host.call("POST", "/v3/users/alice/auth_tokens", token=self.host.token("carol"))[0], 401)

    def test_private_groups_and_kicked_members(self):
        self.assertEqual(self.host.call("GET", "/v3/groups/secret", as_uid="mallory")[0], 404)
        self.assertEqual(self.host.call("GET", "/v3/groups/secret/messages", as_uid="mallory")[0], 403)
        self.host.call("POST", "/v3/groups/general/members", {"participants": ["echo"]}, as_uid="alice")
        self.assertEqual(self.host.call("DELETE", "/v3/groups/general/members/mallory", as_uid="alice")[0], 200)
        self.assertEqual(self.host.call("GET", "/v3/groups/general/messages", as_uid="mallory")[0], 403)
        self.assertEqual(self.host.send("back?", "mallory")[0], 403)
        self.host.call("POST", "/v3/groups/general/members", {"participants": ["mallory"]}, as_uid="alice")

    def test_webhooks_take_a_valid_signature_only(self):
        body = json.dumps({"ref": "main"}).encode()
        signature = "sha256=" + hmac.new(HOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
        headers = {"Content-Type": "application/json"}
        good = self.host.call("POST", "/v3/hooks/push", raw=body, key=False,
                              headers=dict(headers, **{"X-Hub-Signature-256": signature}))
        self.assertEqual(good[0], 200, good[1])
        bad = self.host.call("POST", "/v3/hooks/push", raw=body + b" ", key=False,
                             headers=dict(headers, **{"X-Hub-Signature-256": signature}))
        self.assertEqual(bad[0], 401)

    def test_path_traversal_reaches_no_file(self):
        for path in ["/web/../config.yaml", "/web/..%2Fconfig.yaml", "/web/%2e%2e/config.yaml",
                     "/v3/media/..%2F..%2Fconfig.yaml"]:
            status, _, text = raw_exchange(self.host.port, self.head(path=path))
            self.assertIn(status, (400, 404), path)
            self.assertNotIn("apiKey", text)

    def test_huge_and_deep_bodies_are_refused(self):
        big = json.dumps({"receiver": "general", "receiverType": "group", "data": {"text": "x" * 200000}})
        self.assertEqual(self.host.call("POST", "/v3/messages", raw=big.encode(), as_uid="carol")[0], 413)
        deep = "[" * 2000 + "]" * 2000
        status, answer, _ = self.host.call("POST", "/v3/messages", raw=deep.encode(), as_uid="carol")
        self.assertEqual(status, 400, answer)

    def test_streams_over_the_limit_are_refused_and_requests_go_on(self):
        host = Host(max_streams=3)
        try:
            held = [host.websocket("carol")[0] for _ in range(3)]
            refused, status = host.websocket("carol")
            refused.close()
            self.assertEqual(status, 503)
            self.assertEqual(host.call("GET", "/v3/groups/general/messages", as_uid="carol")[0], 200)
            for connection in held:
                connection.close()
        finally:
            host.stop()


class DurabilityAttack(unittest.TestCase):
    def test_kill_9_loses_no_acknowledged_message(self):
        host = Host()
        try:
            acknowledged = []
            lock = threading.Lock()
            stop = threading.Event()

            def sender(name):
                index = 0
                while not stop.is_set():
                    try:
                        status, answer, _ = host.send(f"{name} {index}", "carol")
                    except OSError:
                        return
                    if status == 200:
                        with lock:
                            acknowledged.append(answer["data"]["id"])
                    index += 1

            threads = [threading.Thread(target=sender, args=(f"s{n}",)) for n in range(4)]
            for thread in threads:
                thread.start()
            time.sleep(2)
            host.kill()
            stop.set()
            for thread in threads:
                thread.join(30)
            self.assertGreater(len(acknowledged), 50)
            host.launch()
            for message_id in acknowledged:
                status, answer, _ = host.call("GET", f"/v3/messages/{message_id}", as_uid="carol")
                self.assertEqual(status, 200, (message_id, answer))
        finally:
            host.stop()


if __name__ == "__main__":
    unittest.main()
