import Foundation
import Synchronization
import Testing

@testable import PerchCLI

@Suite struct APIClientTests {
    @Test func theTerminalClientSendsListsAndTails() async throws {
        try await withHTTPChat { http in
            let client = APIClient(base: URL(string: http.base)!, apiKey: apiKey, onBehalfOf: "carol")
            let lines = Mutex<[String]>([])
            let tail = Task {
                await onThread {
                    try? client.tail { name, object in
                        let text = (object["message"] as? [String: Any]).map(APIClient.describe) ?? ""
                        lines.withLock { $0.append("\(name) \(text)") }
                    }
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            let sent = try await client.call(
                "POST", "/v3/messages", body: ["receiver": "room", "receiverType": "group", "data": ["text": "hi"]])
            let id = try #require((sent as? [String: Any])?["id"] as? Int)
            _ = try await APIClient(base: URL(string: http.base)!, apiKey: apiKey, onBehalfOf: "bob")
                .call("POST", "/v3/messages/\(id)/pin")
            let pins = try await client.call("GET", "/v3/groups/room/messages?pinned=true") as? [[String: Any]]
            #expect(pins?.map(APIClient.describe) == ["#\(id) carol: hi 📌 by bob"])
            let deadline = ContinuousClock.now + .seconds(5)
            while lines.withLock({ $0.count }) < 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(
                lines.withLock { $0 }.prefix(2) == [
                    "onTextMessageReceived #\(id) carol: hi", "onMessagePinned #\(id) carol: hi 📌 by bob",
                ])
            await #expect(throws: APIClient.Failure.self) { _ = try await client.call("GET", "/v3/messages/99999") }
            http.server.stop()
            _ = await tail.value
        }
    }
}
