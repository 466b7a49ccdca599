import Foundation
import PerchTestSupport
import Testing

@testable import PerchHTTP

/// The notification centre over HTTP: listing (oldest or newest first, unread only), the unread
/// count, marking read, and notifications on the WebSocket.
@Suite struct NotificationEndpointTests {
    @Test func aClientListsCountsAndMarksItsNotificationsRead() async throws {
        try await withHTTPChat { http in
            for text in ["one <@uid:bob>", "two", "three"] {
                _ = try await http.call(
                    "POST", "/v3/messages", as: .user("carol"),
                    json: #"{"receiver":"room","receiverType":"group","data":{"text":"\#(text)"}}"#)
            }
            let newest = try await http.call("GET", "/v3/notifications?order=newest&limit=2", as: .user("bob"))
            #expect(newest.status == 200)
            #expect(
                newest.list.compactMap { ($0["message"] as? [String: Any])?["text"] as? String } == ["three", "two"])
            let meta = newest.json["meta"] as? [String: Any]
            #expect(meta?["unreadCount"] as? Int == 3)
            let before = try #require((meta?["next"] as? [String: Any])?["before"] as? Int)
            let older = try await http.call("GET", "/v3/notifications?order=newest&before=\(before)", as: .user("bob"))
            let first = try #require(older.list.first)
            #expect(first["reason"] as? String == "mention")
            #expect(first["readAt"] as? Int == 0)
            #expect((first["message"] as? [String: Any])?["sender"] as? String == "carol")

            let id = try #require(first["id"] as? Int)
            let marked = try await http.call(
                "POST", "/v3/notifications/read", as: .user("bob"), json: #"{"ids":[\#(id)]}"#)
            #expect(marked.status == 200)
            #expect(marked.data["seqs"] as? [Int] == [id] && marked.data["unreadCount"] as? Int == 2)
            let unread = try await http.call("GET", "/v3/notifications?unread=true", as: .user("bob"))
            #expect(unread.list.count == 2 && !unread.list.contains { $0["id"] as? Int == id })
            // Another user cannot mark bob's: nothing of theirs is marked, and bob's stays unread.
            let bobsNewest = try #require(newest.list.first?["id"] as? Int)
            let othersMark = try await http.call(
                "POST", "/v3/notifications/read", as: .user("alice"), json: #"{"ids":[\#(bobsNewest)]}"#)
            #expect(othersMark.status == 200 && othersMark.data["seqs"] as? [Int] == [])
            #expect(
                try await http.call("GET", "/v3/notifications?unread=true", as: .user("bob")).list.contains {
                    $0["id"] as? Int == bobsNewest
                })
            let all = try await http.call("POST", "/v3/notifications/read", as: .user("bob"), json: #"{"all":true}"#)
            #expect(all.data["unreadCount"] as? Int == 0)
            let none = try await http.call("GET", "/v3/notifications?unread=true", as: .user("bob"))
            #expect(none.list.isEmpty && (none.json["meta"] as? [String: Any])?["unreadCount"] as? Int == 0)

            for (query, field) in [
                ("order=sideways", "order"), ("unread=maybe", "unread"), ("order=newest&before=x", "before"),
            ] {
                let refused = try await http.call("GET", "/v3/notifications?\(query)", as: .user("bob"))
                #expect(refused.status == 400 && refused.errorField == field, "\(query)")
            }
            for (body, field) in [
                ("{}", "ids"), (#"{"ids":[],"all":true}"#, "ids"), (#"{"ids":"x"}"#, "ids"),
                (#"{"ids":[1.5]}"#, "ids[0]"),
                (#"{"ids":[]}"#, "ids"), (#"{"all":true,"extra":1}"#, "extra"),
            ] {
                let refused = try await http.call("POST", "/v3/notifications/read", as: .user("bob"), json: body)
                #expect(refused.status == 400 && refused.errorCode == "ERR_BAD_REQUEST", "\(body)")
                #expect(refused.errorField == field, "\(body)")
            }
        }
    }

    @Test func theWebSocketCarriesNotificationsAndOtherTabsReadMarks() async throws {
        try await withHTTPChat { http in
            let port = http.server.port
            let log = try await onThread { () throws -> [String] in
                let client = try WebSocketTestClient(port: port, headers: ["apikey": apiKey, "onBehalfOf": "bob"])
                defer { client.send(.close, WebSocket.closePayload(1000, "")) }
                _ = client.message()
                let other = try WebSocketTestClient(port: port, headers: ["apikey": apiKey, "onBehalfOf": "carol"])
                defer { other.send(.close, WebSocket.closePayload(1000, "")) }
                _ = other.message()
                _ = other.request(
                    1, "POST", "/v3/messages",
                    body: #"{"receiver":"room","receiverType":"group","data":{"text":"hi <@uid:bob>"}}"#)
                var log: [String] = []
                let frames = client.messages(until: { $0["type"] as? String == "notification" }, timeout: 10) ?? []
                let notification = frames.last?["data"] as? [String: Any]
                log.append(
                    "\(notification?["reason"] ?? "-") \((notification?["message"] as? [String: Any])?["text"] ?? "-")")
                let id = notification?["id"] as? Int ?? 0
                // Marked read from another tab of bob's: this one hears it.
                let tab = try WebSocketTestClient(port: port, headers: ["apikey": apiKey, "onBehalfOf": "bob"])
                defer { tab.send(.close, WebSocket.closePayload(1000, "")) }
                _ = tab.message()
                _ = tab.request(2, "POST", "/v3/notifications/read", body: #"{"ids":[\#(id)]}"#)
                let read = client.messages(until: { $0["event"] as? String == "onNotificationsRead" }, timeout: 10)
                let data = (read?.last?["data"] as? [String: Any])?["read"] as? [String: Any]
                log.append("read \(data?["seqs"] as? [Int] ?? []) \(data?["unreadCount"] ?? "-")")
                return log
            }
            #expect(log.count == 2)
            #expect(log.first == "mention hi <@uid:bob>")
            #expect(log.last?.hasPrefix("read [") == true && log.last?.hasSuffix("] 0") == true)
        }
    }
}
