import Foundation
import PerchConfig
import PerchHost

/// Resident memory after loading 200 YAML bots (three rules each: a regex, a 20-word list and a
/// command) into a running host on the embedded store; the start, and restarts on the same data
/// directory compiling the word lists and reading them back.
func benchmarkBots() async throws {
    let count = 200
    let directory =
        FileManager.default.temporaryDirectory.appendingPathComponent("perch-bots-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try FileManager.default.createDirectory(atPath: directory + "/bots", withIntermediateDirectories: true)
    let config = """
        version: 1
        seed:
          users: [{ uid: alice, name: Alice }]
          groups: [{ guid: general, name: General, owner: alice }]
        """
    try config.write(toFile: directory + "/config.yaml", atomically: true, encoding: .utf8)
    for index in 0..<count {
        let words = (0..<20).map { "word\(index)x\($0)" }.joined(separator: ", ")
        let bot = """
            name: bot\(index)
            user: { uid: bot\(index), name: Bot \(index) }
            groups: [general]
            rules:
              - name: tickets
                on: message
                when: { text_matches: '#(?<ticket>[0-9]+) bot\(index)' }
                do: [{ reply: "ticket {ticket}" }]
              - name: words
                on: message
                when: { contains_words: [\(words)] }
                do: [{ reply: "careful" }]
              - name: hello
                on: { command: hello\(index) }
                do: [{ reply: "hello {sender.name}" }]
            """
        try bot.write(toFile: directory + "/bots/bot\(index).yaml", atomically: true, encoding: .utf8)
    }
    let before = residentKilobytes()
    let loaded = ConfigurationLoader().load(configPath: directory + "/config.yaml")
    guard loaded.isValid else { throw BenchFailure(loaded.findings.map(\.description).joined(separator: "\n")) }
    let options = BotHost.Options(
        dataDirectory: directory + "/data", logger: HostLogger(minimum: .warning), schedulesFromTimer: false)
    let started = Date()
    let host = BotHost(configuration: loaded, options: options)
    try await host.start()
    let startSeconds = Date().timeIntervalSince(started)
    let after = residentKilobytes()
    await host.stop()
    // Restarts on the same data directory (the bots' users and memberships exist): without the
    // compiled word lists, then with them read back instead of compiled.
    func restart() async throws -> Double {
        let restarted = Date()
        let again = BotHost(configuration: loaded, options: options)
        try await again.start()
        let seconds = Date().timeIntervalSince(restarted)
        await again.stop()
        return seconds
    }
    try FileManager.default.removeItem(atPath: directory + "/data/words.hsdb")
    let compiling = try await restart()
    let cached = try await restart()
    report(
        "bots",
        [
            "bots": count, "rss_before_kib": before, "rss_after_200_bots_kib": after,
            "rss_per_bot_kib": Double(after - before) / Double(count), "start_s": startSeconds.rounded3,
            "restart_compiling_s": compiling.rounded3, "restart_with_cached_word_lists_s": cached.rounded3,
        ])
}

/// This process's resident set now (VmRSS), in KiB.
func residentKilobytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}

struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
