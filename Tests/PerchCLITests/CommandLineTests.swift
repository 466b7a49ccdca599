import Foundation
import PerchCLI
import PerchTestSupport
import PerchTesting
import Synchronization
import Testing

/// Runs `body` with the shipped config.yaml and bots/ copied to a temporary directory (its data
/// directory `data` inside it), removed after.
func withShippedCopy(_ body: (_ directory: String) async throws -> Void) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-cli-\(UUID().uuidString)")
        .path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try FileManager.default.copyItem(atPath: repositoryRoot + "/bots", toPath: directory + "/bots")
    try FileManager.default.copyItem(atPath: repositoryRoot + "/config.yaml", toPath: directory + "/config.yaml")
    try await body(directory)
}

@Suite struct CommandLineTests {
    @Test func sendPostsIntoTheLocalDatabaseAndShowsTheBotsAnswers() async throws {
        try await withShippedCopy { directory in try await sendPosts(in: directory) }
        let usage = await SendCommand.run(
            try ParsedArguments(["send", "--as", "carol"], valued: ["as"]), print: { _ in }, printError: { _ in })
        #expect(usage == 64)
    }

    /// `perch dry-run` prints what the bots would do and nothing else: its start-up steps were
    /// a dozen log lines around the answer.
    @Test func aDryRunSaysWhatTheBotsWouldDoAndNothingElse() async throws {
        try await withShippedCopy { directory in
            let dry = try await run(
                HostCrashTests.buildDirectory + "/perch",
                [
                    "dry-run", "--config", directory + "/config.yaml", "--as", "dave", "--group", "general",
                    "buy badword",
                ],
                together: false)
            #expect(dry.status == 0, "\(dry.errors)")
            #expect(
                dry.output.split(separator: "\n") == [
                    "moderator / word-list:", "  - delete",
                    "  - direct_message: Your message in general was removed: it contains a word this space does not allow.",
                ])
            #expect(dry.errors.isEmpty)
            // A message the service would refuse: its code and reason, as `perch send` says them.
            let refused = try await run(
                HostCrashTests.buildDirectory + "/perch",
                ["dry-run", "--config", directory + "/config.yaml", "--as", "dave", "--group", "nope", "hi"],
                together: false)
            #expect(refused.status == 1)
            #expect(refused.output.isEmpty)
            #expect(refused.errors == "perch: ERR_GUID_NOT_FOUND: Group nope does not exist.\n", "\(refused.errors)")
        }
    }

    func sendPosts(in directory: String) async throws {
        try await withTestHost(configPath: directory + "/config.yaml", dataDirectory: directory + "/data") { chat in
            let lines = Mutex<[String]>([])
            let errors = Mutex<[String]>([])
            let parsed = try ParsedArguments(
                [
                    "send", "--config", directory + "/config.yaml", "--as", "carol", "--group", "general", "--wait",
                    "3",
                    "<@uid:helper> hello",
                ],
                valued: ["config", "as", "group", "to", "thread", "quote", "wait"], positional: 1)
            let code = await SendCommand.run(
                parsed, print: { line in lines.withLock { $0.append(line) } },
                printError: { line in errors.withLock { $0.append(line) } })
            #expect(code == 0, "\(errors.withLock { $0 })")
            let output = lines.withLock { $0 }
            #expect(output.first?.hasPrefix("sent #") == true)
            #expect(output.contains { $0.contains("helper: [quoting #") && $0.contains("Hi Carol!") })
            _ = chat
        }
    }
}

/// `perch verify`: every page of the configured database, read-only, beside a running host or
/// not; a damaged page is named and the exit code says so.
@Suite struct VerifyCommandTests {
    @Test func verifyChecksEveryPageAndSaysWhatIsDamaged() async throws {
        try await withShippedCopy { directory in try await verifies(in: directory) }
    }

    func verifies(in directory: String) async throws {
        let config = directory + "/config.yaml"
        func verify() -> (code: Int32, output: [String], errors: [String]) {
            let lines = Mutex<[String]>([])
            let errors = Mutex<[String]>([])
            let code = Perch.main(
                ["verify", "--config", config], print: { line in lines.withLock { $0.append(line) } },
                printError: { line in errors.withLock { $0.append(line) } })
            return (code, lines.withLock { $0 }, errors.withLock { $0 })
        }
        try await withTestHost(configPath: config, dataDirectory: directory + "/data") { chat in
            for index in 0..<300 { _ = try await chat.post("message \(index)", as: "alice", to: .group("general")) }
            // Beside the running host.
            let running = verify()
            #expect(running.code == 0, "\(running.errors)")
            #expect(running.output.first?.contains("every page and index whole") == true)
        }
        let stopped = verify()
        #expect(stopped.code == 0, "\(stopped.errors)")

        let path = directory + "/data/perch.sqlite"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let page = bytes.count / 2 / 2048 * 2048
        bytes.replaceSubrange(page..<page + 16, with: [UInt8](repeating: 0xFF, count: 16))
        try bytes.write(to: URL(fileURLWithPath: path))
        let damaged = verify()
        #expect(damaged.code == 1)
        #expect(damaged.errors.contains { $0.contains("damaged") }, "\(damaged.errors)")
        // Read-only: the file is as it was.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)

        try FileManager.default.removeItem(atPath: directory + "/data")
        let missing = verify()
        #expect(missing.code == 1)
        #expect(missing.errors.contains { $0.contains("no such file") })
        // Words verify does not take are usage errors, not ignored.
        for words in [["verify", "extra"], ["verify", "--bogus"], ["verify", "--format", "json"]] {
            #expect(Perch.main(words, print: { _ in }, printError: { _ in }) == 64, "\(words)")
        }
    }
}

@Suite struct FileWatcherTests {
    @Test func aChangedBotFileAsksForAReload() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "perch-watch-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory + "/bots", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "a".write(toFile: directory + "/bots/a.yaml", atomically: true, encoding: .utf8)
        let watcher = FileWatcher(paths: [directory + "/config.yaml", directory + "/bots"])
        let changed = Task { await watcher.nextChange() }
        try await Task.sleep(for: .milliseconds(100))
        try "b".write(toFile: directory + "/bots/b.yaml", atomically: true, encoding: .utf8)
        let finished = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await changed.value
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(5))
                return false
            }
            let first = await group.next()!
            group.cancelAll()
            return first
        }
        #expect(finished)
        changed.cancel()
    }
}
