import Foundation
import PerchChat
import PerchConfig
import PerchHTTPClient
import PerchHost
import PerchService

/// A Perch host running in-process on a temporary directory, for testing bots and plugins.
///
/// ```swift
/// try await withTestHost(configDirectory: "path/with/config.yaml") { chat in
///     let question = try await chat.post("hey <@uid:helper>", as: "alice", to: .group("general"))
///     let answer = try await chat.waitForMessage(in: .group("general")) { $0.quotedMessageId == question.id }
///     #expect(answer.sender == "helper")
/// }
/// ```
public struct TestChat: Sendable {
    public let host: BotHost
    public let service: ChatService
    public let clock: ManualClock
    public let directory: String

    /// The host's log records so far (the last 1,000), for assertions.
    public var log: [String] { get async { await host.options.logger.records } }

    /// Posts `text` as `uid`.
    @discardableResult
    public func post(_ text: String, as uid: String, to receiver: Receiver, thread: Int64 = 0, quote: Int64 = 0)
        async throws -> Message
    {
        try await service.send(
            MessageDraft(to: receiver, text: text, parentMessageId: thread, quotedMessageId: quote), as: uid)
    }

    /// Waits (up to `timeout`) for a message in the conversation that satisfies `predicate`, as seen
    /// by `viewer` (default: the app).
    public func waitForMessage(
        in receiver: Receiver, viewer: String = User.system, timeout: Duration = .seconds(20),
        where predicate: @escaping @Sendable (Message) -> Bool
    ) async throws -> Message {
        try await waitFor(timeout: timeout, "a matching message in \(receiver)") {
            try await self.messages(in: receiver, viewer: viewer).last(where: predicate)
        }
    }

    /// Every message and custom message of a conversation, oldest first, as `viewer` sees them
    /// (for a group, by default as its owner; for a one-on-one, as the other user).
    public func messages(in receiver: Receiver, viewer: String = User.system) async throws -> [Message] {
        var request: MessagesRequest
        let reader: String
        switch receiver {
        case .group(let guid):
            request = MessagesRequest(guid: guid, categories: [.message, .custom], limit: 100)
            reader = viewer == User.system ? try await anyMember(of: receiver) : viewer
        case .user(let uid):
            request = MessagesRequest(uid: uid, categories: [.message, .custom], limit: 100)
            reader = viewer == User.system ? uid : viewer
        }
        var all: [Message] = []
        while true {
            let page = try await service.fetchNext(request, as: reader)
            all += page.messages
            guard page.hasMore, let next = page.nextCursor else { return all }
            request.messageId = next
        }
    }

    func anyMember(of receiver: Receiver) async throws -> String {
        guard case .group(let guid) = receiver else { return receiver.id }
        let group = try await service.group(guid, as: User.system)
        return group.owner
    }

    /// Polls `probe` until it returns a value or `timeout` passes.
    public func waitFor<T: Sendable>(
        timeout: Duration = .seconds(20), _ what: String = "the condition",
        _ probe: @escaping @Sendable () async throws -> T?
    ) async throws -> T {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let value = try await probe() { return value }
            guard ContinuousClock.now < deadline else { throw TestHostTimeout(what: what) }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until the bots are quiet: every bot has handled every event, including the events its
    /// own and other bots' reactions made (chains of bots settle too).
    /// The default `timeout` is generous on purpose: a stuck bot still fails the wait, and a test
    /// suite running many hosts at once on a small machine does not.
    public func settle(timeout: Duration = .seconds(20)) async throws {
        let bots = await host.configuration.bots.filter(\.bot.enabled).map { ($0.bot.name, $0.bot.user.uid) }
        let deadline = ContinuousClock.now + timeout
        while true {
            let latest = try await service.store.latestEventSequence()
            for (name, uid) in bots {
                _ = try await waitFor(
                    timeout: deadline - ContinuousClock.now, "bot \(name) to handle events to \(latest)"
                ) {
                    let cursor = try await self.service.cursor(consumer: BotIdentity.session(of: name))
                    if cursor >= latest { return true }
                    // A bot sleeps through the events it cannot see (other rooms') and its own
                    // doing (not others' reactions to its messages), and saves no cursor for them: it is
                    // done when none after its saved cursor is one it would handle.
                    let page = try await self.service.events(
                        for: uid, session: BotIdentity.session(of: name), after: cursor, limit: 10_000)
                    let handled = page.events.contains { $0.author != uid }
                    return !handled && !page.isFull && page.scannedThrough >= latest ? true : nil
                }
            }
            if try await service.store.latestEventSequence() == latest { return }
        }
    }
}

/// A wait of the harness that ran out.
public struct TestHostTimeout: Error, CustomStringConvertible {
    public var what: String
    public var description: String { "timed out waiting for \(what)" }
}

/// Writes config.yaml and the bot files (`bots/<name>`) into a new temporary directory and returns
/// its path; the caller removes it.
public func writeTestConfiguration(config: String, bots: [String: String]) throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-host-\(UUID().uuidString)")
        .path
    try FileManager.default.createDirectory(atPath: directory + "/bots", withIntermediateDirectories: true)
    try config.write(toFile: directory + "/config.yaml", atomically: true, encoding: .utf8)
    for (name, text) in bots { try text.write(toFile: directory + "/bots/" + name, atomically: true, encoding: .utf8) }
    return directory
}

/// Starts a host on a copy of the configuration in a temporary directory, runs `body`, and always
/// shuts the host down and removes the directory.
///
/// - Parameters:
///   - config: config.yaml's text.
///   - bots: bot files by name (`"helper.yaml": "..."`).
///   - registry: the Swift plugins to offer.
///   - executor: where the bots' consumers run (``BotHost/Options/executor``).
///   - httpClient: how plugins with `url` are posted to (``BotHost/Options/httpClient``): a fake one
///     answers for a service the test does not run; nil, as an embedder without one.
public func withTestHost(
    config: String, bots: [String: String] = [:], registry: PluginRegistry = .standard,
    environment: [String: String] = [:], executor: (any TaskExecutor)? = nil,
    httpClient: (any PluginHTTPClient)? = CurlPostClient(lanes: 4, name: "perch-test-plugin-http"),
    _ body: (TestChat) async throws -> Void
) async throws {
    let directory = try writeTestConfiguration(config: config, bots: bots)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try await withTestHost(
        configPath: directory + "/config.yaml", dataDirectory: directory + "/data", registry: registry,
        environment: environment, executor: executor, httpClient: httpClient, body)
}

/// Starts a host on an existing configuration (for example the repository's own), with its data in
/// `dataDirectory` (default: a temporary one), runs `body`, and always shuts the host down.
public func withTestHost(
    configPath: String, dataDirectory: String? = nil, registry: PluginRegistry = .standard,
    environment: [String: String] = [:], executor: (any TaskExecutor)? = nil,
    httpClient: (any PluginHTTPClient)? = CurlPostClient(lanes: 4, name: "perch-test-plugin-http"),
    _ body: (TestChat) async throws -> Void
) async throws {
    let data =
        dataDirectory
        ?? FileManager.default.temporaryDirectory.appendingPathComponent("perch-data-\(UUID().uuidString)").path
    defer { if dataDirectory == nil { try? FileManager.default.removeItem(atPath: data) } }
    let loaded = ConfigurationLoader(environment: environment, swiftPlugins: registry.names).load(
        configPath: configPath)
    guard loaded.isValid else { throw HostError(loaded.findings.map(\.description).joined(separator: "\n")) }
    let clock = ManualClock(1_800_000_000)
    let host = BotHost(
        configuration: loaded,
        options: BotHost.Options(
            dataDirectory: data, clock: clock, logger: HostLogger(minimum: .info, keepInMemory: true, sink: { _ in }),
            registry: registry, schedulesFromTimer: false, executor: executor, httpClient: httpClient))
    try await host.start()
    guard let service = await host.service else { throw HostError("the host has no service") }
    let chat = TestChat(host: host, service: service, clock: clock, directory: data)
    do {
        try await body(chat)
    } catch {
        await host.stop()
        throw error
    }
    await host.stop()
}
