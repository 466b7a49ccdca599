import Foundation
import PerchChat
import PerchHTTP
import PerchTestSupport
import Testing

/// The HTTP API through a real socket.
@Suite struct HTTPAPITests {
    @Test func authentication() async throws {
        try await withHTTPChat { http in
            #expect(
                try await http.call("GET", "/v3/users/alice", as: .nobody).errorCode == "AUTH_ERR_AUTH_TOKEN_NOT_FOUND")
            let wrong = try await http.call("GET", "/v3/users/alice", as: .key("not-the-key"))
            #expect(wrong.status == 401 && wrong.errorCode == "AUTH_ERR_APIKEY_NOT_FOUND")
            // The key's prefix, or the key with more after it, is not the key.
            for near in [String(apiKey.dropLast()), apiKey + "0"] {
                #expect(
                    try await http.call("GET", "/v3/users/alice", as: .key(near)).errorCode
                        == "AUTH_ERR_APIKEY_NOT_FOUND")
            }
            let unknown = try await http.call("GET", "/v3/users/alice", as: .token("deadbeef"))
            #expect(unknown.status == 401 && unknown.errorCode == "AUTH_ERR_INVALID_TOKEN")
            let issued = try await http.call("POST", "/v3/users/carol/auth_tokens")
            let token = try #require(issued.data["authToken"] as? String)
            let me = try await http.call("GET", "/v3/users/carol", as: .token(token))
            #expect(me.status == 200 && me.data["name"] as? String == "Carol")
            // Only the app issues tokens; the token is stored hashed.
            #expect(try await http.call("POST", "/v3/users/carol/auth_tokens", as: .token(token)).status == 401)
            #expect(try await http.chat.service.tokenOwner(hash: token) == nil)
            #expect(try await http.call("GET", "/healthz", as: .nobody).status == 200)
            #expect(try await http.call("GET", "/readyz", as: .nobody).status == 200)
        }
    }

    @Test func messagesThreadsPinsAndSaves() async throws {
        try await withHTTPChat { http in
            let sent = try await http.call(
                "POST", "/v3/messages", as: .user("carol"),
                json: """
                    {"receiver": "room", "receiverType": "group", "muid": "m1", "data": {"text": "hello <@uid:bob>", "metadata": {"k": 1}}, "tags": ["t"]}
                    """)
            #expect(sent.status == 200)
            let id = try #require(sent.data["id"] as? Int)
            #expect(sent.data["mentionedUids"] as? [String] == ["bob"])
            let reply = try await http.call(
                "POST", "/v3/messages/\(id)/thread", as: .user("bob"), json: #"{"data": {"text": "in thread"}}"#)
            #expect(reply.data["parentMessageId"] as? Int == id)
            let thread = try await http.call("GET", "/v3/messages/\(id)/thread", as: .user("carol"))
            #expect(thread.list.map { $0["text"] as? String } == ["in thread"])
            let edited = try await http.call(
                "PUT", "/v3/messages/\(id)", as: .user("carol"), json: #"{"data": {"text": "edited"}}"#)
            #expect(edited.data["text"] as? String == "edited")
            #expect(
                try await http.call("PUT", "/v3/messages/\(id)", as: .user("bob"), json: #"{"data": {"text": "x"}}"#)
                    .status == 403)

            let denied = try await http.call("POST", "/v3/messages/\(id)/pin", as: .user("carol"))
            #expect(denied.status == 403 && denied.errorCode == "ERR_PERMISSION_DENIED")
            #expect(
                try await http.call("POST", "/v3/messages/\(id)/pin", as: .user("bob")).data["pinnedBy"] as? String
                    == "bob")
            let pins = try await http.call("GET", "/v3/groups/room/messages?pinned=true", as: .user("carol"))
            #expect(pins.list.map { $0["id"] as? Int } == [id])
            #expect(
                try await http.call("POST", "/v3/messages/\(id)/save", as: .user("carol")).data["savedAt"] as? Int != 0)
            let mine = try await http.call("GET", "/v3/messages?saved=true", as: .user("carol"))
            #expect(mine.list.map { $0["id"] as? Int } == [id])
            let others = try await http.call("GET", "/v3/messages?saved=true", as: .user("bob"))
            #expect(others.list.isEmpty)
            // This route lists saved messages only: without saved=true it names what to give.
            for path in ["/v3/messages", "/v3/messages?saved=false", "/v3/messages?saved=maybe"] {
                let refused = try await http.call("GET", path, as: .user("carol"))
                #expect(refused.status == 400 && refused.errorField == "saved", "\(path)")
            }
            // Saved messages span every conversation: a fetch that names one is refused, on the
            // conversations' routes and with uid or guid beside saved=true (not answered as if
            // `saved` or the conversation were not there).
            for path in [
                "/v3/groups/room/messages?saved=true", "/v3/users/bob/messages?saved=true",
                "/v3/messages/\(id)/thread?saved=true", "/v3/messages?saved=true&guid=room",
                "/v3/messages?saved=true&uid=bob",
            ] {
                let refused = try await http.call("GET", path, as: .user("carol"))
                #expect(refused.status == 400 && refused.errorCode == "ERR_BAD_REQUEST", "\(path)")
                #expect(refused.errorField == "saved", "\(path)")
            }
            #expect(
                try await http.call("GET", "/v3/groups/room/messages?saved=false&pinned=false", as: .user("bob"))
                    .list.count >= 1)
            #expect(
                try await http.call("POST", "/v3/messages/\(id)/thread/subscription", as: .user("alice")).data[
                    "threadSubscribed"] as? Bool == true)
            let threads = try await http.call("GET", "/v3/threads", as: .user("alice"))
            #expect(threads.list.map { $0["parentMessageId"] as? Int } == [id])
            #expect(
                try await http.call("DELETE", "/v3/messages/\(id)/thread/subscription", as: .user("alice")).status
                    == 200)

            // After leaving, the group's messages are gone for that user.
            #expect(try await http.call("POST", "/v3/groups/room/leave", as: .user("carol")).status == 200)
            let after = try await http.call("GET", "/v3/groups/room/messages", as: .user("carol"))
            #expect(after.status == 403 && after.errorCode == "ERR_GROUP_NOT_JOINED")
            #expect(
                try await http.call("GET", "/v3/messages/\(id)", as: .user("carol")).errorCode
                    == "ERR_MESSAGE_NO_ACCESS")
            #expect(try await http.call("GET", "/v3/messages/999999", as: .user("bob")).status == 404)
        }
    }

    @Test func conversationPagingCursors() async throws {
        try await withHTTPChat { http in
            for index in 0..<7 {
                _ = try await http.call(
                    "POST", "/v3/messages", as: .user("carol"),
                    json: #"{"receiver": "room", "receiverType": "group", "data": {"text": "m\#(index)"}}"#)
            }
            var seen: [String] = []
            var path = "/v3/groups/room/messages?limit=3&categories=message"
            while true {
                let page = try await http.call("GET", path, as: .user("bob"))
                seen = page.list.compactMap { $0["text"] as? String } + seen
                let meta = page.json["meta"] as? [String: Any]
                guard meta?["hasMore"] as? Bool == true,
                    let previous = (meta?["previous"] as? [String: Any])?["id"] as? Int
                else { break }
                path = "/v3/groups/room/messages?limit=3&categories=message&id=\(previous)&affix=prepend"
            }
            #expect(seen == (0..<7).map { "m\($0)" })
        }
    }

    static let malformed: [(name: String, method: String, path: String, body: String?, field: String)] = [
        ("malformed JSON", "POST", "/v3/messages", "{nope", "body"),
        (
            "nested too deep", "POST", "/v3/messages",
            String(repeating: "[", count: 30_000) + String(repeating: "]", count: 30_000), "body"
        ),
        ("not an object", "POST", "/v3/messages", "[1]", "body"),
        (
            "unknown field", "POST", "/v3/messages",
            #"{"receiver":"room","receiverType":"group","colour":1,"data":{"text":"x"}}"#, "colour"
        ),
        (
            "unknown nested field", "POST", "/v3/messages",
            #"{"receiver":"room","receiverType":"group","data":{"txt":"x"}}"#, "data.txt"
        ),
        ("wrong type", "POST", "/v3/messages", #"{"receiver":5,"receiverType":"group"}"#, "receiver"),
        ("missing receiver", "POST", "/v3/messages", #"{"receiverType":"group","data":{"text":"x"}}"#, "receiver"),
        (
            "wrong tag type", "POST", "/v3/messages",
            #"{"receiver":"room","receiverType":"group","tags":[1],"data":{"text":"x"}}"#, "tags"
        ),
        (
            "bad quote id", "POST", "/v3/messages",
            #"{"receiver":"room","receiverType":"group","quotedMessageId":"x","data":{"text":"x"}}"#, "quotedMessageId"
        ),
        ("bad limit", "GET", "/v3/groups/room/messages?limit=abc", nil, "limit"),
        ("limit out of range", "GET", "/v3/groups/room/messages?limit=1000", nil, "limit"),
        ("bad boolean", "GET", "/v3/groups/room/messages?hideReplies=maybe", nil, "hideReplies"),
        ("bad cursor", "GET", "/v3/groups/room/messages?id=-4", nil, "id"),
        ("bad affix", "GET", "/v3/groups/room/messages?affix=sideways", nil, "affix"),
        ("bad category", "GET", "/v3/groups/room/messages?categories=gossip", nil, "categories"),
        ("bad message id", "GET", "/v3/messages/abc", nil, "id"),
        ("bad threads cursor", "GET", "/v3/threads?cursor=zzz", nil, "cursor"),
        ("bad scope", "PUT", "/v3/groups/room/members/carol", #"{"scope":"king"}"#, "scope"),
        (
            "bad preference", "PUT", "/v3/notifications/preferences", #"{"groupPreferences":{"groupReplies":9}}"#,
            "groupReplies"
        ),
        ("saved without saved", "GET", "/v3/messages", nil, "saved"),
        // Past Int's range this trapped the host; a fraction was rounded down and taken.
        (
            "preference past Int's range", "PUT", "/v3/notifications/preferences",
            #"{"groupPreferences":{"groupReplies":-1e23}}"#, "groupReplies"
        ),
        (
            "fractional preference", "PUT", "/v3/notifications/preferences",
            #"{"oneOnOnePreferences":{"oneOnOneMessages":2.5}}"#, "oneOnOneMessages"
        ),
        ("preferences without a body", "PUT", "/v3/notifications/preferences", nil, "body"),
        (
            "mute schedule", "PUT", "/v3/notifications/preferences", #"{"mutePreferences":{"schedule":{}}}"#,
            "mutePreferences.schedule"
        ),
        (
            "dnd not a boolean", "PUT", "/v3/notifications/preferences", #"{"mutePreferences":{"dnd":1}}"#,
            "mutePreferences.dnd"
        ),
        ("mute without conversations", "PUT", "/v3/notifications/preferences/mute", "{}", "conversations"),
        (
            "mute of an unknown type", "PUT", "/v3/notifications/preferences/mute",
            #"{"conversations":[{"id":"room","type":"channel"}]}"#, "conversations[0].type"
        ),
        (
            "mute without an id", "DELETE", "/v3/notifications/preferences/mute",
            #"{"conversations":[{"type":"group"}]}"#, "conversations[0].id"
        ),
        (
            "mute with an unknown field", "PUT", "/v3/notifications/preferences/mute",
            #"{"conversations":[{"id":"room","type":"group","untill":5}]}"#, "conversations[0].untill"
        ),
        (
            "mute ending in the past", "PUT", "/v3/notifications/preferences/mute",
            #"{"conversations":[{"id":"room","type":"group"},{"id":"room","type":"group","until":5}]}"#,
            "conversations[1].until"
        ),
        ("unmute without a body", "DELETE", "/v3/notifications/preferences/mute", nil, "body"),
        ("user update without a body", "PUT", "/v3/users/bob", nil, "body"),
    ]

    @Test func malformedRequestsAreAnswered400WithTheField() async throws {
        try await withHTTPChat { http in
            for bad in Self.malformed {
                let answer = try await http.call(bad.method, bad.path, as: .user("bob"), json: bad.body)
                #expect(answer.status == 400, "\(bad.name): \(answer.status)")
                #expect(answer.errorField == bad.field, "\(bad.name): \(String(decoding: answer.body, as: UTF8.self))")
            }
            let invalid = try await http.call("POST", "/v3/messages", as: .user("bob"), body: Data([0x7B, 0xFF, 0x7D]))
            #expect(invalid.status == 400)
            #expect(invalid.errorField == "body")
            let large = try await http.call("POST", "/v3/messages", as: .user("bob"), body: Data(count: 70 * 1024))
            #expect(large.status == 413)
            #expect(try await http.call("GET", "/v3/nowhere", as: .user("bob")).status == 404)
            #expect(try await http.call("PATCH", "/v3/messages/1", as: .user("bob")).status == 405)
        }
    }

    /// RFC 9110: a 405 lists the path's methods in `Allow`, OPTIONS answers with them, and HEAD
    /// answers as GET does, without the body (before: 405 with no `Allow`, and HEAD and OPTIONS
    /// refused everywhere).
    @Test func methodsFollowHTTPSemantics() async throws {
        try await withHTTPChat { http in
            let sent = try await http.call(
                "POST", "/v3/messages", as: .user("bob"),
                json: #"{"receiver":"room","receiverType":"group","data":{"text":"hi"}}"#)
            let id = try #require(sent.data["id"] as? Int)
            let refused = try await http.call("PATCH", "/v3/messages/\(id)", as: .user("bob"))
            #expect(refused.status == 405)
            #expect(refused.headers["allow"] == "GET, HEAD, PUT, DELETE, OPTIONS")
            #expect(refused.errorField == "path")
            let options = try await http.call("OPTIONS", "/v3/messages/\(id)", as: .nobody)
            #expect(options.status == 204)
            #expect(options.headers["allow"] == "GET, HEAD, PUT, DELETE, OPTIONS")
            #expect(try await http.call("OPTIONS", "/v3/nowhere", as: .nobody).status == 404)
            let get = try await http.call("GET", "/v3/messages/\(id)", as: .user("bob"))
            let head = try await http.call("HEAD", "/v3/messages/\(id)", as: .user("bob"))
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            #expect(head.headers["content-length"] == String(get.body.count))
            #expect(try await http.call("HEAD", "/v3/messages/\(id)", as: .nobody).status == 401)
            // A stream owns its connection: HEAD is not one of its methods.
            let stream = try await http.call("HEAD", "/v3/events", as: .user("bob"))
            #expect(stream.status == 405)
            #expect(stream.headers["allow"] == "GET, OPTIONS")
        }
    }

    /// `uid`'s event stream (as `session`, when given), once it is open.
    func openStream(_ http: HTTPChat, as uid: String, session: String? = nil) async throws -> SSEClient {
        let stream = try SSEClient(
            port: http.server.port, path: "/v3/events" + (session.map { "?session=\($0)" } ?? ""),
            headers: ["apikey": apiKey, "onBehalfOf": uid])
        await onThread { stream.waitUntilOpen() }
        return stream
    }

    @Test func eventsResumeWithLastEventIDAndSavesSkipTheSavingConnection() async throws {
        try await withHTTPChat { http in
            let laptop = try await openStream(http, as: "bob", session: "laptop")
            let phone = try await openStream(http, as: "bob", session: "phone")
            var ids: [Int] = []
            for index in 0..<3 {
                let sent = try await http.call(
                    "POST", "/v3/messages", as: .user("carol"),
                    json: #"{"receiver": "room", "receiverType": "group", "data": {"text": "e\#(index)"}}"#)
                ids.append(sent.data["id"] as! Int)
            }
            _ = try await http.call(
                "POST", "/v3/messages/\(ids[0])/save", as: .user("bob"), headers: ["X-Perch-Session": "phone"])
            let onLaptop = await onThread { laptop.events(4) }
            #expect(
                onLaptop.map(\.name) == [
                    "onTextMessageReceived", "onTextMessageReceived", "onTextMessageReceived", "onMessageSaved",
                ])
            let onPhone = await onThread { phone.events(4, timeout: 1.5) }
            #expect(onPhone.map(\.name) == ["onTextMessageReceived", "onTextMessageReceived", "onTextMessageReceived"])

            // Resume after the first event: the rest, once each.
            guard onLaptop.count == 4 else { return }
            let resumed = try SSEClient(
                port: http.server.port, path: "/v3/events",
                headers: ["apikey": apiKey, "onBehalfOf": "bob", "Last-Event-ID": String(onLaptop[0].id)])
            let rest = await onThread { resumed.events(3) }
            #expect(rest.map(\.id) == Array(onLaptop.map(\.id).dropFirst()))
            // An idle stream gets heartbeats (every second in this fixture).
            _ = await onThread { resumed.events(99, timeout: 2.5) }
            #expect(resumed.buffer.contains(": heartbeat"))
        }
    }

    /// As CometChat's sender gets no event for its own message, a message sent with
    /// `X-Perch-Session` is not echoed to that session; the sender's other sessions, and everyone
    /// else, get it. Without the header every session of the sender gets it.
    @Test func aMessageSentFromASessionIsNotEchoedToIt() async throws {
        try await withHTTPChat { http in
            let laptop = try await openStream(http, as: "bob", session: "laptop")
            let phone = try await openStream(http, as: "bob", session: "phone")
            let carol = try await openStream(http, as: "carol")
            func post(_ text: String, headers: [String: String] = [:]) async throws {
                let sent = try await http.call(
                    "POST", "/v3/messages", as: .user("bob"),
                    json: #"{"receiver": "room", "receiverType": "group", "data": {"text": "\#(text)"}}"#,
                    headers: headers)
                #expect(sent.status == 200)
            }
            try await post("from the phone", headers: ["X-Perch-Session": "phone"])
            try await post("from a script")
            for stream in [laptop, carol] {
                #expect(
                    await onThread { stream.events(2) }.map(\.name) == [
                        "onTextMessageReceived", "onTextMessageReceived",
                    ])
                #expect(stream.buffer.contains("from the phone") && stream.buffer.contains("from a script"))
            }
            #expect(await onThread { phone.events(2, timeout: 1.5) }.map(\.name) == ["onTextMessageReceived"])
            #expect(!phone.buffer.contains("from the phone") && phone.buffer.contains("from a script"))
        }
    }

    @Test func aThousandRequestsFromFiftyConnections() async throws {
        try await withHTTPChat { http in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<1000 {
                    group.addTask {
                        if index % 4 == 0 {
                            return try await http.call(
                                "POST", "/v3/messages", as: .user("carol"),
                                json: #"{"receiver": "room", "receiverType": "group", "data": {"text": "c\#(index)"}}"#
                            ).status
                        }
                        return try await http.call("GET", "/v3/groups/room/messages?limit=5", as: .user("bob")).status
                    }
                }
                var all: [Int] = []
                for try await status in group { all.append(status) }
                return all
            }
            #expect(statuses.count == 1000)
            #expect(statuses.allSatisfy { $0 == 200 })
            let metrics = String(decoding: try await http.call("GET", "/metrics", as: .nobody).body, as: UTF8.self)
            #expect(metrics.contains("perch_http_requests_total{route=\"messages.send\",status=\"200\"} 250"))
            #expect(metrics.contains("perch_http_request_duration_seconds_count{route=\"messages.send\"} 250"))
            #expect(metrics.contains("perch_http_request_duration_seconds_bucket{le=\"2.5\",route=\"messages.send\"} "))
        }
    }
}
