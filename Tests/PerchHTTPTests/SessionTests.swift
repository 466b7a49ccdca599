import Foundation
import PerchTestSupport
import Testing

/// Live-event sessions belong to the user who names them, are names the server writes back
/// safely, and free their stream's slot as soon as their client goes away.
@Suite struct SessionTests {
    @Test func anotherUserCannotKeepTheirMessagesOffSomeonesStreamWithItsSessionName() async throws {
        try await withHTTPChat { http in
            let port = http.server.port
            let stream = try SSEClient(
                port: port, path: "/v3/events?session=carols-tab", headers: ["apikey": apiKey, "onBehalfOf": "carol"])
            await onThread { stream.waitUntilOpen() }
            #expect(stream.buffer.contains(#"{"session":"carols-tab"}"#))
            // bob sends with carol's session name: it is his own session of that name, not hers.
            let sent = try await http.call(
                "POST", "/v3/messages", as: .user("bob"),
                json: #"{"receiver":"room","receiverType":"group","data":{"text":"from bob"}}"#,
                headers: ["X-Perch-Session": "carols-tab"])
            #expect(sent.status == 200)
            let events = await onThread { stream.events(1, timeout: 10) }
            #expect(events.map(\.name) == ["onTextMessageReceived"])
            #expect(stream.buffer.contains("from bob"))
            // carol's own send from that session does not come back to it.
            _ = try await http.call(
                "POST", "/v3/messages", as: .user("carol"),
                json: #"{"receiver":"room","receiverType":"group","data":{"text":"from carol"}}"#,
                headers: ["X-Perch-Session": "carols-tab"])
            _ = try await http.call(
                "POST", "/v3/messages", as: .user("alice"),
                json: #"{"receiver":"room","receiverType":"group","data":{"text":"from alice"}}"#)
            _ = await onThread { stream.events(2, timeout: 10) }
            #expect(stream.buffer.contains("from alice") && !stream.buffer.contains("from carol"))
        }
    }

    @Test func aSessionNameThatCouldBreakAStreamIsRefused() async throws {
        try await withHTTPChat { http in
            let port = http.server.port
            for name in ["a\r\ndata: injected", "a%0D%0Aevent:%20x", "a b", String(repeating: "x", count: 129), "é"] {
                let encoded = name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? name
                let answer = try await onThread {
                    try rawExchange(
                        port: port,
                        "GET /v3/events?session=\(encoded) HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: \(apiKey)\r\n"
                            + "onBehalfOf: carol\r\n\r\n")
                }
                let refused = RequestParsingTests.refusal(answer)
                #expect(refused.status == 400 && refused.field == "session", "\(name): \(answer)")
                #expect(!answer.contains("injected"))
            }
            let header = try await http.call(
                "GET", "/v3/groups/room/messages", as: .user("carol"), headers: ["X-Perch-Session": "a b"])
            #expect(header.status == 400 && header.errorField == "X-Perch-Session")
        }
    }

    /// Every stream's client closes, then all come back at once: each is taken, none waits for a
    /// heartbeat to free its slot.
    @Test func aReconnectStormFindsTheClosedStreamsSlotsFree() async throws {
        try await withHTTPChat(maximumStreams: 20, heartbeat: .seconds(30)) { http in
            let port = http.server.port
            let carol = ["apikey": apiKey, "onBehalfOf": "carol"]
            func open() async throws -> [SSEClient] {
                let streams = try (0..<20).map { _ in try SSEClient(port: port, path: "/v3/events", headers: carol) }
                for stream in streams { await onThread { stream.waitUntilOpen(timeout: 10) } }
                return streams
            }
            let first = try await open()
            #expect(first.allSatisfy { $0.buffer.contains("perch.session") })
            for stream in first { try stream.handle.close() }
            // A moment for the server to see the hang-ups, far below the 30 s heartbeat.
            var again: [SSEClient] = []
            for _ in 0..<50 {
                again = try await open()
                if again.allSatisfy({ $0.buffer.contains("perch.session") }) { break }
                for stream in again { try stream.handle.close() }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(again.count == 20 && again.allSatisfy { $0.buffer.contains("perch.session") })
            for stream in again { try stream.handle.close() }
        }
    }
}
