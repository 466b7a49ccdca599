import Foundation
import PerchChat
import PerchHost
import PerchLock
import PerchTesting

/// A small config for host tests: alice owns `room` (bob admin, carol participant) and `other`.
public let hostConfig = """
    version: 1
    seed:
      users:
        - { uid: alice, name: Alice }
        - { uid: bob, name: Bob }
        - { uid: carol, name: Carol }
      groups:
        - guid: room
          name: Room
          owner: alice
          members:
            - { uid: bob, scope: admin }
            - { uid: carol }
        - guid: other
          name: Other
          owner: alice
          members:
            - { uid: carol }
    """

/// The bot file of ``botFile(_:extra:)`` with one rule: a message starting with `prefix` runs the
/// Swift plugin `plugin`; and the standard registry with `type` registered.
public func pluginBot<Plugin: BotPlugin>(_ type: Plugin.Type, on prefix: String) -> (
    file: String, registry: PluginRegistry
) {
    var registry = PluginRegistry.standard
    registry.register(type)
    let file = botFile(
        """
          - on: message
            when: { text_matches: "^\(prefix)" }
            do: [{ plugin: \(Plugin.name) }]
        """, extra: "plugins:\n  - name: \(Plugin.name)")
    return (file, registry)
}

/// A bot file with one bot `b` (uid `bot`) in `room` and `other`, as moderator, and these rules.
public func botFile(_ rules: String, extra: String = "") -> String {
    """
    name: b
    user: { uid: bot, name: Bot }
    system: true
    groups:
      - { guid: room, scope: moderator }
      - { guid: other, scope: moderator }
    \(extra)
    rules:
    \(rules)
    """
}

extension TestChat {
    /// The bot's messages in a conversation, oldest first, after the bots settled.
    public func botMessages(in receiver: Receiver, bot: String = "bot", viewer: String = "alice") async throws
        -> [Message]
    {
        try await settle()
        return try await messages(in: receiver, viewer: viewer).filter { $0.sender == bot }
    }
}

/// Asks `condition` every 50 ms until it says yes or `timeout` has passed: whether it said yes.
public func waitUntil(_ timeout: Duration, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return false
}

/// Waits for `process` to exit, at most `timeout` (then kills it): whether it exited in time. Not
/// `waitUntilExit()`, which holds one of the few threads of the tests' pool until the child exits,
/// for ever if it does not.
public func exited(_ process: ChildProcess, within timeout: Duration = .seconds(30)) async throws -> Bool {
    if try await waitUntil(timeout, { !process.isRunning }) { return true }
    process.terminate(SIGKILL)
    _ = try await waitUntil(.seconds(10)) { !process.isRunning }
    return false
}

/// What a program run to its end said: its exit status, its standard output and its standard error
/// (`errors` empty when they were asked for together, in `output`).
public struct ProgramRun: Sendable {
    public var status: Int32
    public var output: String
    public var errors: String
}

/// Runs `program` to its end, `input` on its standard input. `together`: its standard error goes
/// with its standard output, in order; else each is read apart (on two threads, so that neither
/// fills its pipe while the other is read). The waits are on a thread of their own, not one of the
/// tests' pool.
public func run(
    _ program: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
    input: String? = nil, together: Bool = true
) async throws -> ProgramRun {
    try await onThread {
        try runToEnd(
            program, arguments, environment: environment, directory: directory, input: input, together: together)
    }
}

private func runToEnd(
    _ program: String, _ arguments: [String], environment: [String: String]?, directory: String?,
    input: String?, together: Bool
) throws -> ProgramRun {
    // A ``ChildProcess``, as every child of the tests and the host's plugins, not Foundation's
    // `Process`, whose start read past a buffer when the tests had about 1,365 descriptors open (and
    // crashed them).
    let output = Pipe()
    let errors = together ? output : Pipe()
    let stdin = Pipe()
    let process = try ChildProcess(
        program, arguments, environment: environment, directory: directory,
        input: input == nil ? nil : stdin.fileHandleForReading.fileDescriptor,
        output: output.fileHandleForWriting.fileDescriptor, error: errors.fileHandleForWriting.fileDescriptor)
    try stdin.fileHandleForReading.close()
    try output.fileHandleForWriting.close()
    if !together { try errors.fileHandleForWriting.close() }
    if let input {
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
    }
    // Written on the reading thread only; read here after the group's wait.
    final class Said: @unchecked Sendable { var data = Data() }
    let said = Said()
    let apart = DispatchGroup()
    if !together {
        DispatchQueue.global().async(group: apart) { said.data = errors.fileHandleForReading.readDataToEndOfFile() }
    }
    let written = output.fileHandleForReading.readDataToEndOfFile()
    apart.wait()
    process.waitForExit()
    return ProgramRun(
        status: process.terminationStatus, output: String(decoding: written, as: UTF8.self),
        errors: String(decoding: said.data, as: UTF8.self))
}

/// A scratch directory for a test's own files (a plugin's script, what the plugin writes down),
/// removed when `body` returns or throws.
public func withScratchDirectory(_ body: (_ directory: String) async throws -> Void) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-scratch-\(UUID())").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try await body(directory)
}
