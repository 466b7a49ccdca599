import Foundation
import PerchChat
import PerchLock
import PerchSQLite
import PerchService
import PerchTestSupport
import Synchronization
import Testing

@Suite struct HostCrashTests {
    static var buildDirectory: String {
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: executable).deletingLastPathComponent().path
    }

    func startHost(_ directory: String) throws -> ChildProcess {
        try ChildProcess(
            Self.buildDirectory + "/perch", ["run", "--config", directory + "/config.yaml", "--log-format", "json"])
    }

    func pongs(_ service: ChatService) async throws -> [String] {
        var texts: [String] = []
        var request = MessagesRequest(guid: "room", limit: 100)
        while true {
            let page = try await service.fetchNext(request, as: "alice")
            texts += page.messages.filter { $0.sender == "bot" }.compactMap(\.text)
            guard page.hasMore, let next = page.nextCursor else { break }
            request.messageId = next
        }
        return texts
    }

    /// A folder for `perch run`: config.yaml (the tests' seed and these `server` settings) and
    /// `bots/` with `bots` (file name: text). The caller removes it.
    func hostDirectory(_ name: String, server: String, bots: [String: String] = [:]) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "perch-\(name)-\(UUID().uuidString)"
        )
        .path
        try FileManager.default.createDirectory(atPath: directory + "/bots", withIntermediateDirectories: true)
        try (hostConfig + "\nserver:\n" + server).write(
            toFile: directory + "/config.yaml", atomically: true, encoding: .utf8)
        for (file, text) in bots {
            try text.write(toFile: directory + "/bots/" + file, atomically: true, encoding: .utf8)
        }
        return directory
    }

    /// `perch run` on `directory` (whose data directory is `data`), once its database is there and
    /// bot `b` consumes, with a service of this process on the same database.
    func startedHost(_ directory: String) async throws -> (
        host: ChildProcess, store: SQLiteChatStore, service: ChatService
    ) {
        let host = try startHost(directory)
        let database = directory + "/data/perch.sqlite"
        #expect(try await waitUntil(.seconds(20)) { FileManager.default.fileExists(atPath: database) })
        let store = try SQLiteChatStore(path: database)
        let service = ChatService(store: store)
        #expect(try await waitUntil(.seconds(20)) { (try? await service.cursor(consumer: "bot:b")) ?? 0 > 0 })
        return (host, store, service)
    }

    /// The host ignores SIGPIPE; the plugins it starts do not (an ignored signal stays ignored
    /// across exec, and a shell plugin's `producer | head` then wrote on into a closed pipe).
    @Test func aPluginGetsSIGPIPEBackToItsDefault() async throws {
        let script = pluginFixtures + "/signals_plugin.sh"
        let bot = botFile(
            """
              - on: { command: do }
                do: [{ plugin: signals }]
            """, extra: "hears: commands\nplugins:\n  - name: signals\n    exec: [sh, \"\(script)\"]")
        let directory = try hostDirectory(
            "pipe", server: "  listen: 127.0.0.1:0\n  dataDirectory: data\n", bots: ["plugin.yaml": bot])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (host, store, service) = try await startedHost(directory)
        _ = try await service.send(MessageDraft(to: .group("room"), text: "!do signals"), as: "carol")
        var answer: String?
        #expect(
            try await waitUntil(.seconds(30)) {
                answer = try await pongs(service).first { $0.hasPrefix("ignored ") }
                return answer != nil
            })
        let mask = answer.flatMap { UInt64($0.dropFirst("ignored ".count), radix: 16) }
        #expect(mask.map { $0 & 1 << UInt64(SIGPIPE - 1) } == 0, "SigIgn: \(answer ?? "no answer")")

        host.terminate()
        #expect(try await exited(host))
        #expect(host.terminationStatus == 0)
        await store.close()
    }

    /// Two hosts on one data directory would handle every event twice: the second refuses to start.
    @Test func oneHostPerDataDirectory() async throws {
        let directory = try hostDirectory("lock", server: "  listen: 127.0.0.1:0\n")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try startHost(directory)
        #expect(
            try await waitUntil(.seconds(20)) { FileManager.default.fileExists(atPath: directory + "/data/perch.lock") }
        )
        try await Task.sleep(for: .milliseconds(300))
        let second = try startHost(directory)
        let refused = try await waitUntil(.seconds(20)) { !second.isRunning }
        #expect(refused && second.terminationStatus == 1)
        #expect(first.isRunning)
        first.terminate()
        #expect(try await exited(first))
        #expect(first.terminationStatus == 0)
    }

    /// The host's own output says where the web chat is, when it serves one.
    @Test func theHostSaysWhereTheWebChatIs() async throws {
        let directory = try hostDirectory(
            "web",
            server: "  listen: 127.0.0.1:0\n  webDirectory: \(repositoryRoot)/web\n  apiKey: a-key-of-enough-length\n")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // `perch run` stopped by SIGTERM after two seconds, as a person would with Ctrl-C.
        func runForTwoSeconds(_ directory: String) async throws -> ProgramRun {
            let ran = try await run(
                "/usr/bin/timeout",
                [
                    "--preserve-status", "2", Self.buildDirectory + "/perch", "run", "--config",
                    directory + "/config.yaml",
                ],
                together: false)
            #expect(ran.status == 0, "\(ran.errors)")
            return ran
        }
        let ran = try await runForTwoSeconds(directory)
        let line = ran.errors.split(separator: "\n").first { $0.contains("web chat at") }
        #expect(line?.contains("web chat at http://127.0.0.1:") == true, "\(ran.errors)")
        // Without one (an empty webDirectory), nothing is said of it.
        let bare = try hostDirectory("noweb", server: "  listen: 127.0.0.1:0\n  webDirectory: \"\"\n")
        defer { try? FileManager.default.removeItem(atPath: bare) }
        let plain = try await runForTwoSeconds(bare)
        #expect(!plain.errors.contains("web chat"))
    }

    /// A data directory that cannot be made says why (it was told as another host holding it).
    @Test func aDataDirectoryThatCannotBeMadeSaysWhy() async throws {
        // Under a regular file: mkdir fails with ENOTDIR, for root too.
        let directory = try hostDirectory(
            "nodata", server: "  dataDirectory: config.yaml/data\n  listen: 127.0.0.1:0\n")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let refused = try await run(
            Self.buildDirectory + "/perch", ["run", "--config", directory + "/config.yaml"], together: false)
        #expect(refused.status == 1)
        #expect(
            refused.errors.contains(
                "cannot use the data directory: mkdir \(directory)/config.yaml: Not a directory"))
        #expect(!refused.errors.contains("another perch run"))
    }

    /// kill -9 during a stream of messages, restart: no bot reply lost, none duplicated.
    @Test func killNineDuringAStreamLosesAndDuplicatesNoReply() async throws {
        let bot = botFile(
            """
              - on: { command: ping }
                do: [{ reply: "pong {args}" }]
            """, extra: "rate_limit: { per_minute: 100000, burst: 10000, per_conversation_per_minute: 100000 }")
        let directory = try hostDirectory(
            "kill", server: "  dataDirectory: data\n  listen: 127.0.0.1:0\n", bots: ["ping.yaml": bot])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let started = try await startedHost(directory)
        let (store, service) = (started.store, started.service)
        var host = started.host

        // The stream keeps flowing while the host is killed and restarted.
        let total = 400
        let posted = Counter()
        let writer = Task {
            for index in 0..<total {
                _ = try await service.send(MessageDraft(to: .group("room"), text: "!ping \(index)"), as: "carol")
                posted.increment()
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        #expect(try await waitUntil(.seconds(20)) { try await pongs(service).count >= 20 })
        kill(host.processIdentifier, SIGKILL)
        #expect(try await exited(host))
        let postedAtKill = posted.value
        #expect(postedAtKill < total, "the kill should land during the stream")

        host = try startHost(directory)
        try await writer.value
        #expect(try await waitUntil(.seconds(60)) { try await pongs(service).count >= total })
        try await Task.sleep(for: .milliseconds(500))
        host.terminate()
        #expect(try await exited(host))
        #expect(host.terminationStatus == 0)

        let replies = try await pongs(service)
        #expect(replies.count == total)
        #expect(Set(replies) == Set((0..<total).map { "pong \($0)" }))
        await store.close()
    }
}

/// A counter shared between tasks.
final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
