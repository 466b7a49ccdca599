import Foundation
import PerchTestSupport
import Testing

@testable import PerchSQLite

/// A live-event stream resumed from before the event log's start is told what the retention removed
/// (`perch.gap` over SSE, a `gap` frame over the WebSocket), then gets the rest.
@Suite struct StreamRetentionTests {
    static let week: Int64 = 7 * 86_400

    /// Posts `text` in `room` as carol; returns the message id.
    static func post(_ http: HTTPChat, _ text: String) async throws -> Int {
        let sent = try await http.call(
            "POST", "/v3/messages", as: .user("carol"),
            json: #"{"receiver": "room", "receiverType": "group", "data": {"text": "\#(text)"}}"#)
        return sent.data["id"] as! Int
    }

    /// Leaves a pruned log behind: "old" a week and a second ago, then "new"; returns the last
    /// pruned sequence.
    static func pruneAWeek(_ http: HTTPChat) async throws -> Int64 {
        _ = try await post(http, "old")
        let service = http.chat.service
        _ = try await service.pruneEventLog(olderThan: Self.week)
        let through = try await service.store.latestEventSequence()
        http.chat.clock.advance(by: Self.week + 1)
        _ = try await post(http, "new")
        #expect(try await service.pruneEventLog(olderThan: Self.week).events == Int(through))
        return through
    }

    @Test func aStreamResumedFromBeforeTheLogsStartIsToldWhatItMissedThenGetsTheRest() async throws {
        try await withHTTPChat { http in
            let through = try await Self.pruneAWeek(http)
            let resumed = try SSEClient(
                port: http.server.port, path: "/v3/events",
                headers: ["apikey": apiKey, "onBehalfOf": "bob", "Last-Event-ID": "1"])
            let events = await onThread { resumed.events(1) }
            #expect(events.map(\.id) == [through + 1])
            let gap = "event: perch.gap\ndata: {\"from\":2,\"through\":\(through)}\n\n"
            #expect(resumed.buffer.contains(gap))
            #expect(resumed.buffer.range(of: gap)!.lowerBound < resumed.buffer.range(of: "\"new\"")!.lowerBound)

            // From after the start: no gap.
            let current = try SSEClient(
                port: http.server.port, path: "/v3/events",
                headers: ["apikey": apiKey, "onBehalfOf": "bob", "Last-Event-ID": String(through)])
            #expect(await onThread { current.events(1) }.map(\.id) == [through + 1])
            #expect(!current.buffer.contains("perch.gap"))

            // The WebSocket says it the same way.
            let port = http.server.port
            let frames = try await onThread { () throws -> [String] in
                let client = try WebSocketTestClient(
                    port: port, path: "/v3/ws?lastEventId=1", headers: ["apikey": apiKey, "onBehalfOf": "bob"])
                return (client.messages(until: { $0["type"] as? String == "event" }) ?? []).map { frame in
                    let data = frame["data"] as? [String: Any]
                    return "\(frame["type"] ?? "-") \(data?["from"] ?? "-")…\(data?["through"] ?? "-")"
                }
            }
            #expect(frames == ["session -…-", "gap 2…\(through)", "event -…-"])
        }
    }
}
