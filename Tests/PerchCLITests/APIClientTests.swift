import Foundation
import PerchChat
import PerchHTTP
import PerchLock
import PerchTestSupport
import PerchTesting
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
                        lines.withLock { $0.append(APIClient.describe(event: name, object)) }
                    }
                }
            }
            // Sent once the stream is open: it starts at the present.
            #expect(
                try await waitUntil(.seconds(20)) { http.chat.host.metrics.value("perch_sse_connections") >= 1 })
            let sent = try await client.call(
                "POST", "/v3/messages", body: ["receiver": "room", "receiverType": "group", "data": ["text": "hi"]])
            let id = try #require((sent as? [String: Any])?["id"] as? Int)
            let bob = APIClient(base: URL(string: http.base)!, apiKey: apiKey, onBehalfOf: "bob")
            _ = try await bob.call("POST", "/v3/messages/\(id)/pin")
            let pins = try await client.call("GET", "/v3/groups/room/messages?pinned=true") as? [[String: Any]]
            #expect(pins?.map(APIClient.describe) == ["#\(id) carol: hi 📌 by bob"])
            _ = try await bob.call("POST", "/v3/messages/\(id)/reactions/%F0%9F%91%80")
            _ = try await bob.call("DELETE", "/v3/messages/\(id)/pin")
            _ = try await client.call("DELETE", "/v3/messages/\(id)")
            let deadline = ContinuousClock.now + .seconds(5)
            while lines.withLock({ $0.count }) < 5, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            // A reaction names who reacted with what, an unpin who unpinned (the message no longer
            // says), a deletion who deleted (it said "(text)": a deleted message has no text).
            #expect(
                lines.withLock { $0 }.prefix(5) == [
                    "onTextMessageReceived #\(id) carol: hi", "onMessagePinned #\(id) carol: hi 📌 by bob",
                    "onMessageReactionAdded #\(id) carol: hi 📌 by bob — 👀 by bob",
                    "onMessageUnpinned #\(id) carol: hi — by bob", "onMessageDeleted #\(id) carol: (deleted by carol)",
                ])
            await #expect(throws: APIClient.Failure.self) { _ = try await client.call("GET", "/v3/messages/99999") }
            http.server.stop()
            _ = await tail.value
        }
    }

    /// `perch tail --notifications`: without `--as`, every user's notifications as they are routed
    /// (the app's view); with it, that user's only.
    @Test func theTerminalClientTailsNotifications() async throws {
        try await withHTTPChat { http in
            let everyone = APIClient(base: URL(string: http.base)!, apiKey: apiKey, onBehalfOf: "")
            let bobs = APIClient(base: URL(string: http.base)!, apiKey: apiKey, onBehalfOf: "bob")
            let lines = Lock<[String: [String]]>([:])
            let tailEveryone = Task {
                await onThread {
                    try? everyone.tail("/v3/notifications/stream") { event, object in
                        lines.withLock { $0["everyone", default: []].append(APIClient.describe(event: event, object)) }
                    }
                }
            }
            let tailBob = Task {
                await onThread {
                    try? bobs.tail("/v3/notifications/stream") { event, object in
                        lines.withLock { $0["bob", default: []].append(APIClient.describe(event: event, object)) }
                    }
                }
            }
            #expect(
                try await waitUntil(.seconds(20)) { http.chat.host.metrics.value("perch_sse_connections") >= 2 })
            let sent = try await http.chat.post("hi <@uid:bob>", as: "carol", to: .group("room"))
            let direct = try await http.chat.post("psst", as: "alice", to: .user("carol"))
            #expect(
                try await waitUntil(.seconds(10)) {
                    lines.withLock { ($0["everyone"]?.count ?? 0) >= 3 && ($0["bob"]?.count ?? 0) >= 1 }
                })
            try await Task.sleep(for: .milliseconds(100))
            let seen = lines.withLock { $0 }
            #expect(
                seen["everyone"]?.sorted() == [
                    "notification for alice (message): #\(sent.id) carol: hi <@uid:bob> in room",
                    "notification for bob (mention): #\(sent.id) carol: hi <@uid:bob> in room",
                    "notification for carol (message): #\(direct.id) alice: psst to carol",
                ])
            #expect(seen["bob"] == ["notification for bob (mention): #\(sent.id) carol: hi <@uid:bob> in room"])
            http.server.stop()
            _ = await tailEveryone.value
            _ = await tailBob.value
        }
    }

    /// `perch tail` through a restart of the host: the stream ends, the client tries again, and
    /// resumes after the last event it read, so an event sent while the host was down arrives too;
    /// a wrong key is an error at once, not a retry.
    /// `perch pins` and `perch threads` say when their list is empty (they printed nothing, which
    /// read as a command that did nothing), and count "1 reply".
    @Test func theListCommandsSayWhenTheListIsEmpty() async throws {
        try await withHTTPChat { http in
            let perch = { (words: [String]) in try await builtPerch(words, against: http) }
            #expect(try await perch(["pins", "--as", "carol", "--group", "room"]) == "no pinned messages\n")
            #expect(try await perch(["threads", "--as", "carol"]) == "no threads: carol follows none\n")
            let root = try await http.chat.post("a question", as: "carol", to: .group("room"))
            try await http.chat.post("an answer", as: "bob", to: .group("room"), thread: root.id)
            #expect(try await perch(["threads", "--as", "carol"]) == "#\(root.id) carol: a question  (1 reply)\n")
        }
    }

    /// `perch threads` orders by the last reply (a thread without one by its root's time), not by
    /// when the inbox row last moved, and pages; `perch pins` reads every page of pins.
    @Test func theListCommandsOrderByTheLastReplyAndPage() async throws {
        let config = hostConfig + "\nlimits: { pinsPerConversation: 250 }\n"
        try await withHTTPChat(config: config) { http in
            let perch = { (words: [String]) in try await builtPerch(words, against: http) }
            var roots: [Message] = []
            for text in ["first", "second", "third"] {
                let root = try await http.chat.post(text, as: "carol", to: .group("room"))
                _ = try await http.chat.service.subscribeToThread(root.id, as: "carol")
                roots.append(root)
                http.chat.clock.advance(by: 10)
            }
            // The oldest root gets the newest reply; carol then subscribes to the second again,
            // which moves its inbox row but is no reply.
            try await http.chat.post("news", as: "bob", to: .group("room"), thread: roots[0].id)
            http.chat.clock.advance(by: 10)
            _ = try await http.chat.service.unsubscribeFromThread(roots[1].id, as: "carol")
            _ = try await http.chat.service.subscribeToThread(roots[1].id, as: "carol")
            let firstPage = try await perch(["threads", "--as", "carol", "--limit", "2"])
            #expect(
                firstPage
                    == "#\(roots[0].id) carol: first  (1 reply)\n#\(roots[2].id) carol: third  (0 replies)\n"
                    + "page 1 of 2; --page 2 for more\n")
            let secondPage = try await perch(["threads", "--as", "carol", "--limit", "2", "--page", "2"])
            #expect(secondPage == "#\(roots[1].id) carol: second  (0 replies)\npage 2 of 2\n")

            for index in 0..<105 {
                let message = try await http.chat.post("pin \(index)", as: "alice", to: .group("room"))
                _ = try await http.chat.service.pin(message.id, as: "alice")
            }
            let pins = try await perch(["pins", "--as", "alice", "--group", "room"])
            #expect(pins.split(separator: "\n").count == 105)
        }
    }

    /// With no host at the address, the client says so in a line (it printed Foundation's error
    /// dump, "Error Domain=NSURLErrorDomain Code=-1004 ..."), and an address that cannot be one is
    /// named.
    @Test func aClientWithNoHostToTalkToSaysSo() async throws {
        // Nothing listens on port 1 of the loopback: the connection is refused.
        let nobody = APIClient(base: URL(string: "http://127.0.0.1:1")!, apiKey: apiKey, onBehalfOf: "carol")
        let refused = await #expect(throws: APIClient.Failure.self) { try await nobody.call("GET", "/v3/threads") }
        #expect(refused?.cannotConnect == true)
        #expect(
            refused?.description
                == "cannot connect to 127.0.0.1:1: is perch run running there? (the address is config.yaml's "
                + "server.listen, or --url)")
        let nowhere = APIClient(base: URL(string: "http://127.0.0.1:99999")!, apiKey: apiKey, onBehalfOf: "carol")
        let bad = await #expect(throws: APIClient.Failure.self) { try await nowhere.call("GET", "/v3/threads") }
        #expect(bad?.description == "http://127.0.0.1:99999 is not an address to reach the host at")
    }

    @Test func theTerminalClientFollowsTheStreamThroughARestartMissingNothing() async throws {
        try await withTestHost(config: hostConfig) { chat in
            let api = PerchAPI(
                service: chat.service, host: chat.host, apiKey: apiKey, metrics: chat.host.metrics,
                media: MediaSettings(directory: chat.directory + "/media", maximumBytes: 1024, allowedTypes: []),
                web: nil, maximumBodyBytes: 64 * 1024)
            func serve(on port: UInt16) throws -> HTTPServer {
                try HTTPServer(host: "127.0.0.1", port: port, maximumBodyBytes: 64 * 1024, heartbeat: .seconds(1)) {
                    await api.respond(to: $0)
                }
            }
            // Below the kernel's ephemeral ports (32768 and up here), which other tests' servers on
            // port 0 and every outgoing connection draw from: the port is still free when the
            // server comes back on it (in a full parallel run one of them took it once).
            var started: HTTPServer?
            for _ in 0..<100 where started == nil { started = try? serve(on: UInt16.random(in: 20_000..<32_000)) }
            let first = try #require(started)
            let port = first.port
            let base = URL(string: "http://127.0.0.1:\(port)")!
            let wrong = APIClient(base: base, apiKey: "not-the-key", onBehalfOf: "carol")
            #expect(throws: APIClient.Failure.self) { try wrong.tail { _, _ in } }

            let client = APIClient(base: base, apiKey: apiKey, onBehalfOf: "carol")
            final class Seen: Sendable {
                let lines = Mutex<[String]>([])
                let stopping = Mutex(false)
            }
            let seen = Seen()
            let follow = Task {
                await onThread { () -> Void in
                    try? client.follow(
                        retry: .milliseconds(100), stopping: { seen.stopping.withLock { $0 } },
                        say: { said in seen.lines.withLock { $0.append("said: " + said) } }
                    ) { _, object in
                        let text = (object["message"] as? [String: Any])?["text"] as? String ?? "?"
                        seen.lines.withLock { $0.append(text) }
                    }
                }
            }
            func waitFor(_ count: Int) async throws {
                let deadline = ContinuousClock.now + .seconds(10)
                while seen.lines.withLock({ $0.count }) < count, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            // Posted once the stream is open (it starts at the present): a fixed pause was too short
            // for the client to connect in a full parallel run.
            #expect(
                try await waitUntil(.seconds(20)) { chat.host.metrics.value("perch_sse_connections") >= 1 })
            _ = try await chat.post("before", as: "alice", to: .group("room"))
            try await waitFor(1)
            await onThread { first.stop() }
            _ = try await chat.post("while down", as: "alice", to: .group("room"))
            try await waitFor(2)
            let second = try serve(on: port)
            _ = try await chat.post("after", as: "alice", to: .group("room"))
            try await waitFor(5)
            #expect(
                seen.lines.withLock { $0 } == [
                    "before",
                    "said: the stream ended (the host stopped or restarted); connecting again every 0.1 seconds",
                    "said: connected again", "while down", "after",
                ])
            seen.stopping.withLock { $0 = true }
            await onThread { second.stop() }
            await follow.value
        }
    }
}

/// Runs the built `perch` with `words` against `http`'s host (`--url`, the API key); expects exit 0
/// and returns what it printed.
func builtPerch(_ words: [String], against http: HTTPChat) async throws -> String {
    let ran = try await run(
        HostCrashTests.buildDirectory + "/perch", words + ["--url", http.base],
        environment: ["PERCH_API_KEY": apiKey, "PATH": "/usr/bin:/bin"], together: false)
    #expect(ran.status == 0, "\(ran.errors)")
    return ran.output
}
