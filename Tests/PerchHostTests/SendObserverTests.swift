import Foundation
import PerchChat
import PerchConfig
import PerchHost
import PerchLock
import PerchService
import PerchTestSupport
import PerchTesting
import Testing

@testable import PerchSQLite

/// The host's two observers of what a bot sends: `willSend` as the message leaves the bot for the
/// service, before the service commits it, and `didSend` once it is committed.
@Suite struct SendObserverTests {
    struct Seen: Equatable {
        var observer: String
        var bot: String
        var text: String
        /// The newest committed event's sequence when the observer ran.
        var committed: Int64
    }

    /// What the observers saw, in the order they ran, and the muids `willSend` saw.
    final class Observed: Sendable {
        let store = Lock<SQLiteChatStore?>(nil)
        let seen = Lock<[Seen]>([])
        let muids = Lock<[String]>([])

        func record(_ observer: String, _ bot: String, _ text: String?) {
            let committed = store.withLock { $0 }?.notifier.latest ?? -1
            seen.withLock { $0.append(Seen(observer: observer, bot: bot, text: text ?? "", committed: committed)) }
        }

        func texts(_ observer: String) -> [String] {
            seen.withLock { $0 }.filter { $0.observer == observer }.map(\.text).sorted()
        }
    }

    /// Starts a host on `config` with the bot file `bot` and both observers, posts `texts` to `room` as
    /// carol, and waits until `done` says so; returns the observed and the bot's committed messages.
    func run(
        config: String = hostConfig, bot: String, registry: PluginRegistry = .standard, posting texts: [String],
        until done: @escaping @Sendable (BotHost, Observed) -> Bool
    ) async throws -> (Observed, [Message]) {
        let directory = try writeTestConfiguration(config: config, bots: ["b.yaml": bot])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loaded = ConfigurationLoader(swiftPlugins: registry.names).load(configPath: directory + "/config.yaml")
        try #require(loaded.isValid)
        let observed = Observed()
        let host = BotHost(
            configuration: loaded,
            options: BotHost.Options(
                dataDirectory: directory + "/data", logger: HostLogger(minimum: .error, sink: { _ in }),
                registry: registry, monotonic: { 0 }, schedulesFromTimer: false,
                willSend: { bot, draft in
                    observed.muids.withLock { $0.append(draft.muid) }
                    observed.record("willSend", bot, draft.text)
                },
                didSend: { bot, message in observed.record("didSend", bot, message.text) }))
        try await host.start()
        let service = try #require(await host.service)
        observed.store.withLock { $0 = service.store as? SQLiteChatStore }
        for text in texts { _ = try await service.send(MessageDraft(to: .group("room"), text: text), as: "carol") }
        #expect(try await waitUntil(.seconds(20)) { done(host, observed) })
        let sent = try await service.fetchPrevious(MessagesRequest(guid: "room", limit: 50), as: "carol").messages
            .filter { $0.sender == "bot" }
        await host.stop()
        return (observed, sent)
    }

    @Test func aReplyIsSeenAsItLeavesTheBotBeforeItsCommitAndOneTheRateLimitsRefuseIsNotSeen() async throws {
        let rules = """
              - on: message
                when: { text_matches: '^n(?<n>[0-9]+)$' }
                do: [{ reply: "r{n}" }]
            """
        // Two replies pass; the third is refused by the rate limit (the clock stands still).
        let bot = botFile(rules, extra: "rate_limit: { per_minute: 1, burst: 2, per_conversation_per_minute: 60 }")
        let (observed, committed) = try await run(bot: bot, posting: ["n0", "n1", "n2"]) { host, observed in
            host.metrics.value("perch_rate_limited_actions_total", ["bot": "b"]) == 1
                && observed.seen.withLock { $0.count } == 4
        }
        // Each reply once by each observer, as the bot named it; the refused one by neither.
        #expect(observed.texts("willSend") == ["r0", "r1"])
        #expect(observed.texts("didSend") == ["r0", "r1"])
        let seen = observed.seen.withLock { $0 }
        #expect(seen.allSatisfy { $0.bot == "b" })
        #expect(committed.compactMap(\.text) == ["r0", "r1"])
        // willSend: with its muid already given, before its commit (the commit came after it).
        #expect(Set(observed.muids.withLock { $0 }) == Set(committed.map(\.muid)))
        for text in ["r0", "r1"] {
            let left = try #require(seen.first { $0.observer == "willSend" && $0.text == text })
            let sent = try #require(seen.first { $0.observer == "didSend" && $0.text == text })
            #expect(left.committed < sent.committed)
            #expect(seen.firstIndex(of: left)! < seen.firstIndex(of: sent)!)
        }
    }

    /// A message the service refuses (here to a group that does not exist) has left the bot, and
    /// is never committed.
    @Test func aMessageTheServiceRefusesIsSeenByWillSendOnly() async throws {
        let (file, registry) = pluginBot(StrayPlugin.self, on: "go")
        let (observed, committed) = try await run(bot: file, registry: registry, posting: ["go"]) { _, observed in
            observed.texts("willSend").count == 2 && observed.texts("didSend").count == 1
        }
        #expect(observed.texts("willSend") == ["lost", "refused: ERR_GUID_NOT_FOUND"])
        #expect(observed.texts("didSend") == ["refused: ERR_GUID_NOT_FOUND"])
        #expect(committed.compactMap(\.text) == ["refused: ERR_GUID_NOT_FOUND"])
    }
}

/// Sends to a group that does not exist, then says in the room how the service answered.
struct StrayPlugin: BotPlugin {
    static let name = "stray"
    init(configuration: NoConfiguration) throws {}
    func handle(_ context: BotContext) async throws {
        do {
            try await context.send(MessageDraft(to: .group("nowhere"), text: "lost"))
            try await context.reply("sent")
        } catch {
            try await context.reply("refused: \(error.code.rawValue)")
        }
    }
}
