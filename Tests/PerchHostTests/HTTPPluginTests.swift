import Foundation
import PerchChat
import PerchHTTPClient
import PerchHost
import PerchLock
import PerchTestSupport
import PerchTesting
import Testing

@testable import PerchHTTP

/// A plugin reached over HTTP (`url:`): the outgoing webhook of CometChat's and Slack's bots,
/// posted to a real server on loopback.
@Suite struct HTTPPluginTests {
    /// A service on loopback that records what it is posted and answers from a script.
    final class Service: Sendable {
        let requests = Lock<[HTTPRequest]>([])
        let answers: Lock<[HTTPResponse]>
        let delay: Duration
        let server: HTTPServer

        init(answers: [HTTPResponse], delay: Duration = .zero) throws {
            let requests = self.requests
            let script = Lock(answers)
            self.answers = script
            self.delay = delay
            server = try HTTPServer(host: "127.0.0.1", port: 0, maximumBodyBytes: 1 << 20) { request in
                requests.withLock { $0.append(request) }
                if delay > .zero { try? await Task.sleep(for: delay) }
                return script.withLock { $0.isEmpty ? .json(200, "") : $0.removeFirst() }
            }
        }

        var url: String { "http://127.0.0.1:\(server.port)/hook?token=in-the-query" }
        var received: [HTTPRequest] { requests.withLock { $0 } }

        func stop() async { await onThread { [server] in server.stop() } }
    }

    static func bot(url: String, secret: String? = nil, timeout: Int = 5000, headers: String? = nil) -> String {
        botFile(
            """
              - on: { command: ask }
                do: [{ plugin: relay }]
              - on: { command: ping }
                do: [{ reply: "pong" }]
            """,
            extra: """
                plugins:
                  - name: relay
                    url: "\(url)"
                    timeout_ms: \(timeout)
                \(secret.map { "    secret: \($0)" } ?? "")
                \(headers.map { "    headers: \($0)" } ?? "")
                    config: { team: ops }
                """)
    }

    @Test func eachActionPostsASignedRequestAndTheAnswersActionsRun() async throws {
        let service = try Service(answers: [
            .json(200, #"{"jsonrpc": "2.0", "id": 1, "result": {"actions": [{"quote_reply": "on it"}]}}"#),
            .json(200, #"{"actions": [{"reply": "a bare result"}]}"#),
            .json(204, ""),
        ])
        let secret = "a-secret-of-twenty-chars"
        let bot = Self.bot(
            url: service.url, secret: secret, headers: #"{Authorization: "Bearer t0ken", X-Team: ops}"#)
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) {
            chat in
            let asked = try await chat.post("!ask status", as: "carol", to: .group("room"))
            let answer = try await chat.waitForMessage(in: .group("room")) { $0.sender == "bot" }
            #expect(answer.text == "on it" && answer.quotedMessageId == asked.id)
            try await chat.post("!ask again", as: "carol", to: .group("room"))
            try await chat.post("!ask quietly", as: "carol", to: .group("room"))
            #expect(try await chat.botMessages(in: .group("room")).compactMap(\.text) == ["on it", "a bare result"])

            let posts = service.received
            #expect(posts.count == 3)
            let first = try #require(posts.first)
            #expect(first.method == "POST" && first.path == "/hook" && first.query["token"] == "in-the-query")
            #expect(first.header("content-type") == "application/json")
            // The bot file's headers go with each post (a token, for a service that takes one).
            #expect(first.header("authorization") == "Bearer t0ken" && first.header("x-team") == "ops")
            #expect(first.header("x-hub-signature-256") == WebhookSignature.value(secret: secret, body: first.body))
            let delivery = try #require(first.header("x-perch-delivery"))
            #expect(delivery.hasPrefix("b/") && delivery.hasSuffix("/relay"))
            let body = try JSONDecoder().decode(JSONValue.self, from: Data(first.body))
            #expect(body["jsonrpc"]?.stringValue == "2.0" && body["method"]?.stringValue == "handle")
            let params = try #require(body["params"])
            #expect(params["command"]?["name"]?.stringValue == "ask")
            #expect(params["command"]?["args"]?.stringValue == "status")
            #expect(params["plugin"]?.stringValue == "relay" && params["config"]?["team"]?.stringValue == "ops")
            #expect(params["bot"]?["uid"]?.stringValue == "bot")
            #expect(params["event"]?["name"]?.stringValue == "onTextMessageReceived")
            // Each event has its own delivery id.
            #expect(Set(posts.compactMap { $0.header("x-perch-delivery") }).count == 3)
        }
        await service.stop()
    }

    @Test func aFailingServiceIsTriedAgainAndARefusalRunsNothing() async throws {
        let service = try Service(answers: [
            .json(503, ""), .json(200, #"{"actions": [{"reply": "second try"}]}"#),
            .json(404, ""),
            .text(200, "not json"),
            .json(200, #"{"jsonrpc": "2.0", "id": 4, "error": {"code": -32000, "message": "nope"}}"#),
            .json(200, #"{"actions": [{"reply": "fine"}, {"explode": true}]}"#),
        ])
        // A long budget: the retry is what is tested, and a full parallel run beside two busy
        // loops (both CPUs taken) kept the retry's answer past the default 5 s, twice in three runs.
        let bot = Self.bot(url: service.url, timeout: 30_000)
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
            try await chat.post("!ask one", as: "carol", to: .group("room"))
            _ = try await chat.waitForMessage(in: .group("room")) { $0.sender == "bot" }
            for text in ["!ask two", "!ask three", "!ask four", "!ask five", "!ping"] {
                try await chat.post(text, as: "carol", to: .group("room"))
            }
            // The 503 was tried again with the same delivery id; the 404, the body that is not
            // JSON, the error and the answer with an unknown action ran nothing and were not.
            #expect(try await chat.botMessages(in: .group("room")).compactMap(\.text) == ["second try", "pong"])
            let posts = service.received
            #expect(posts.count == 6)
            #expect(posts[0].header("x-perch-delivery") == posts[1].header("x-perch-delivery"))
            #expect(chat.host.metrics.value("perch_handler_errors_total", ["bot": "b"]) == 4)
            #expect(chat.host.metrics.value("perch_plugin_timeouts_total", ["plugin": "relay"]) == 0)
            // The log says what went wrong and where, but not the URL's path or query (a token may
            // be in either).
            let log = await chat.log.joined(separator: "\n")
            #expect(log.contains("answered 404; nothing was tried again"))
            #expect(log.contains("unknown action 'explode'"))
            #expect(log.contains("http://127.0.0.1:") && !log.contains("in-the-query") && !log.contains("/hook"))
        }
        await service.stop()
    }

    /// examples/plugins/http_plugin.py, run as the service it is: it checks the signature and
    /// answers with a quote reply.
    @Test func thePythonExampleServiceAnswers() async throws {
        let directory = NSTemporaryDirectory() + "perch-http-plugin-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let portFile = directory + "/port"
        let secret = "the-example-service-secret"
        let process = try ChildProcess(
            "python3", [repositoryRoot + "/examples/plugins/http_plugin.py", "--port", "0", "--port-file", portFile],
            environment: ["SHOUT_SECRET": secret, "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"])
        defer { process.terminate(SIGKILL) }
        #expect(try await waitUntil(.seconds(20)) { FileManager.default.fileExists(atPath: portFile) })
        let port = try String(contentsOfFile: portFile, encoding: .utf8)
        let rule = "  - on: { command: shout }\n    do: [{ plugin: shout }]\n"
        func bot(_ secret: String) -> String {
            botFile(
                rule,
                extra: """
                    plugins:
                      - name: shout
                        url: http://127.0.0.1:\(port)/perch
                        secret: \(secret)
                        config: { suffix: "!!" }
                    """)
        }
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot(secret)]) { chat in
            let asked = try await chat.post("!shout hello there", as: "carol", to: .group("room"))
            let answer = try await chat.waitForMessage(in: .group("room")) { $0.sender == "bot" }
            #expect(answer.text == "HELLO THERE!! (for carol)" && answer.quotedMessageId == asked.id)
        }
        // Signed with another secret, the service refuses the post and nothing is said.
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot("not-the-service-secret")]) { chat in
            try await chat.post("!shout hello", as: "carol", to: .group("room"))
            #expect(try await chat.botMessages(in: .group("room")).isEmpty)
            #expect(chat.host.metrics.value("perch_handler_errors_total", ["bot": "b"]) == 1)
            #expect(await chat.log.joined().contains("answered 401"))
        }
    }

    /// A service that sends its answer a byte at a time never lets the connection go idle, so
    /// URLSession's own timeout never fires: the post is abandoned at `timeout_ms` all the same.
    @Test func aServiceThatAnswersAByteAtATimeIsAbandonedAtTheTimeout() async throws {
        let directory = NSTemporaryDirectory() + "perch-drip-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = """
            import os, sys, time
            from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
            class Drip(BaseHTTPRequestHandler):
                def do_POST(self):
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    self.send_response(200)
                    self.send_header("Content-Length", "200")
                    self.end_headers()
                    for _ in range(200):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(0.05)
                def log_message(self, *args):
                    pass
            server = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
            with open(sys.argv[1] + ".tmp", "w") as f:
                f.write(str(server.server_address[1]))
            os.rename(sys.argv[1] + ".tmp", sys.argv[1])
            server.serve_forever()
            """
        try script.write(toFile: directory + "/drip.py", atomically: true, encoding: .utf8)
        let portFile = directory + "/port"
        let process = try ChildProcess("python3", [directory + "/drip.py", portFile])
        defer { process.terminate(SIGKILL) }
        #expect(try await waitUntil(.seconds(20)) { FileManager.default.fileExists(atPath: portFile) })
        let port = try String(contentsOfFile: portFile, encoding: .utf8)
        let bot = Self.bot(url: "http://127.0.0.1:\(port)/", timeout: 500)
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
            let started = ContinuousClock.now
            try await chat.post("!ask drip", as: "carol", to: .group("room"))
            try await chat.post("!ping", as: "carol", to: .group("room"))
            _ = try await chat.waitForMessage(in: .group("room")) { $0.text == "pong" }
            // The answer takes 10 s to arrive; the ping waited for the post's 0.5 s, not for it
            // (and not less: URLSession gave up at once on timeouts under a second).
            let waited = ContinuousClock.now - started
            #expect(waited >= .milliseconds(500) && waited < .seconds(5))
            #expect(chat.host.metrics.value("perch_plugin_timeouts_total", ["plugin": "relay"]) == 1)
        }
    }

    /// With `lifecycle: true` the service is posted `start` when the host starts the bot and `stop`
    /// when it stops it; without it, only its rules' calls.
    @Test func aServiceThatAsksIsPostedStartAndStop() async throws {
        let service = try Service(answers: [])
        func methods() throws -> [String] {
            try service.received.map {
                try JSONDecoder().decode(JSONValue.self, from: Data($0.body))["method"]?.stringValue ?? "?"
            }
        }
        // A long timeout: a loaded machine may take seconds to answer a post on loopback.
        let asking = Self.bot(url: service.url, timeout: 60000).replacingOccurrences(
            of: "    config:", with: "    lifecycle: true\n    config:")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": asking]) { chat in
            #expect(try methods() == ["start"])
            let start = try #require(service.received.first)
            #expect(start.header("x-perch-delivery") == "b/start/relay")
            let params = try JSONDecoder().decode(JSONValue.self, from: Data(start.body))["params"]
            #expect(params?["bot"]?["uid"]?.stringValue == "bot" && params?["config"]?["team"]?.stringValue == "ops")
            try await chat.post("!ask", as: "carol", to: .group("room"))
            try await chat.settle()
        }
        #expect(try methods() == ["start", "handle", "stop"])
        #expect(service.received.last?.header("x-perch-delivery") == "b/stop/relay")
        service.requests.withLock { $0 = [] }
        try await withTestHost(config: hostConfig, bots: ["b.yaml": Self.bot(url: service.url)]) { _ in }
        #expect(try methods().isEmpty)
        await service.stop()
    }

    /// A service that does not take its `start` (down, or answering 5xx) is logged, and its plugin
    /// stays: the next post reaches it once it is back.
    @Test func aServiceThatRefusesItsStartIsStillPosted() async throws {
        let service = try Service(answers: [
            .json(503, ""), .json(503, ""), .json(503, ""),
            .json(200, #"{"actions": [{"reply": "back again"}]}"#),
        ])
        let asking = Self.bot(url: service.url, timeout: 60000).replacingOccurrences(
            of: "    config:", with: "    lifecycle: true\n    config:")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": asking]) { chat in
            let logged = await chat.log.filter { $0.contains("plugin relay start:") }
            #expect(
                logged.count == 1 && logged[0].contains("answered 503; tried 3 times; its posts go on"), "\(logged)")
            try await chat.post("!ask", as: "carol", to: .group("room"))
            _ = try await chat.waitForMessage(in: .group("room")) { $0.text == "back again" }
        }
        await service.stop()
    }

    /// The client is the host's to give: a test (or an embedder) gives its own, and a host without
    /// one refuses the bot at start, saying where, instead of failing each post.
    @Test func theHTTPClientIsTheHostsToGive() async throws {
        struct Fake: PluginHTTPClient {
            let posted = Lock<[String]>([])
            func post(_ url: URL, headers: [String: String], body: [UInt8], within time: Duration)
                async throws(PluginHTTPFailure) -> (status: Int, body: [UInt8])
            {
                posted.withLock { $0.append(url.absoluteString) }
                return (200, Array(#"{"actions": [{"reply": "from the fake"}]}"#.utf8))
            }
        }
        let fake = Fake()
        let bot = Self.bot(url: "https://nowhere.example/perch")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot], httpClient: fake) { chat in
            try await chat.post("!ask", as: "carol", to: .group("room"))
            #expect(try await chat.botMessages(in: .group("room")).compactMap(\.text) == ["from the fake"])
        }
        #expect(fake.posted.withLock { $0 } == ["https://nowhere.example/perch"])
        await #expect {
            try await withTestHost(config: hostConfig, bots: ["b.yaml": bot], httpClient: nil) { _ in }
        } throws: { error in
            "\(error)".contains("b.yaml:") && "\(error)".contains("plugins[0].url: this host has no HTTP client")
        }
    }

    @Test func aSlowOrAbsentServiceRunsOutOfTimeAndOtherRulesGoOn() async throws {
        let slow = try Service(answers: [], delay: .milliseconds(1500))
        try await withTestHost(config: hostConfig, bots: ["b.yaml": Self.bot(url: slow.url, timeout: 300)]) { chat in
            let started = ContinuousClock.now
            try await chat.post("!ask slowly", as: "carol", to: .group("room"))
            try await chat.post("!ping", as: "carol", to: .group("room"))
            _ = try await chat.waitForMessage(in: .group("room")) { $0.text == "pong" }
            #expect(ContinuousClock.now - started >= .milliseconds(300))
            #expect(try await chat.botMessages(in: .group("room")).compactMap(\.text) == ["pong"])
            #expect(chat.host.metrics.value("perch_plugin_timeouts_total", ["plugin": "relay"]) == 1)
        }
        await slow.stop()
        // Nothing listens: three tries, then the failure; the bot answers the next command.
        let gone = try Service(answers: [])
        let url = gone.url
        await gone.stop()
        try await withTestHost(config: hostConfig, bots: ["b.yaml": Self.bot(url: url)]) { chat in
            try await chat.post("!ask nobody", as: "carol", to: .group("room"))
            try await chat.post("!ping", as: "carol", to: .group("room"))
            #expect(try await chat.botMessages(in: .group("room")).compactMap(\.text) == ["pong"])
            #expect(chat.host.metrics.value("perch_handler_errors_total", ["bot": "b"]) == 1)
            // The client's words on the failure name the host and port, not the URL's query.
            let log = await chat.log.joined(separator: "\n")
            #expect(log.contains("cannot reach http://127.0.0.1:") && log.contains("tried 3 times"))
            #expect(!log.contains("in-the-query"))
        }
    }
}
