import Foundation
import PerchCLI
import PerchTesting
import Synchronization
import Testing

@Suite struct CommandLineTests {
    @Test func sendPostsIntoTheLocalDatabaseAndShowsTheBotsAnswers() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-send-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.copyItem(atPath: repositoryRoot + "/bots", toPath: directory + "/bots")
        try FileManager.default.copyItem(atPath: repositoryRoot + "/config.yaml", toPath: directory + "/config.yaml")
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
        let usage = await SendCommand.run(
            try ParsedArguments(["send", "--as", "carol"], valued: ["as"]), print: { _ in }, printError: { _ in })
        #expect(usage == 64)
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
