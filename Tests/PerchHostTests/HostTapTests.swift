import Foundation
import PerchChat
import PerchConfig
import PerchHost
import PerchLock
import PerchService
import PerchTesting
import Testing

@testable import PerchSQLite

/// The host's two taps on what a bot sends: `leaving` as the message leaves the bot for the
/// service, before the service commits it (where peers-v1 observes the peers' replies), and
/// `outbound` once it is committed (where Perch's benchmark counts a reply).
@Suite struct HostTapTests {
    @Test func aReplyIsSeenLeavingTheBotBeforeItsCommitAndARefusedOneIsNotSeen() async throws {
        let rules = """
              - on: message
                when: { text_matches: '^n(?<n>[0-9]+)$' }
                do: [{ reply: "r{n}" }]
            """
        // Two replies pass; the third is refused by the rate limit (the clock stands still).
        let bot = botFile(rules, extra: "rate_limit: { per_minute: 1, burst: 2, per_conversation_per_minute: 60 }")
        let directory = try writeTestConfiguration(config: hostConfig, bots: ["b.yaml": bot])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loaded = ConfigurationLoader().load(configPath: directory + "/config.yaml")
        try #require(loaded.isValid)
        struct Seen: Equatable {
            var tap: String
            var bot: String
            var text: String
            /// The newest committed event's sequence when the tap ran.
            var committed: Int64
        }
        let store = Lock<SQLiteChatStore?>(nil)
        let seen = Lock<[Seen]>([])
        @Sendable func record(_ tap: String, _ bot: String, _ text: String?) {
            let committed = store.withLock { $0 }?.notifier.latest ?? -1
            seen.withLock { $0.append(Seen(tap: tap, bot: bot, text: text ?? "", committed: committed)) }
        }
        let muids = Lock<[String]>([])
        let host = BotHost(
            configuration: loaded,
            options: BotHost.Options(
                dataDirectory: directory + "/data", logger: HostLogger(minimum: .warning, sink: { _ in }),
                monotonic: { 0 }, schedulesFromTimer: false,
                outbound: { bot, message in record("outbound", bot, message.text) },
                leaving: { bot, draft in
                    muids.withLock { $0.append(draft.muid) }
                    record("leaving", bot, draft.text)
                }))
        try await host.start()
        let service = try #require(await host.service)
        store.withLock { $0 = service.store as? SQLiteChatStore }
        for index in 0..<3 {
            _ = try await service.send(MessageDraft(to: .group("room"), text: "n\(index)"), as: "carol")
        }
        let done = try await waitUntil(.seconds(20)) {
            host.metrics.value("perch_rate_limited_actions_total", ["bot": "b"]) == 1 && seen.withLock { $0.count } == 4
        }
        #expect(done)
        let committed = try await service.fetchPrevious(MessagesRequest(guid: "room", limit: 50), as: "carol")
            .messages.filter { $0.sender == "bot" }
        await host.stop()
        let taps = seen.withLock { $0 }
        // Each reply once at each tap, as the bot named it; the refused one at neither.
        #expect(taps.filter { $0.tap == "leaving" }.map(\.text).sorted() == ["r0", "r1"])
        #expect(taps.filter { $0.tap == "outbound" }.map(\.text).sorted() == ["r0", "r1"])
        #expect(taps.allSatisfy { $0.bot == "b" })
        #expect(committed.compactMap(\.text) == ["r0", "r1"])
        // Leaving: with its muid already given, before its commit (the commit came after the tap).
        #expect(Set(muids.withLock { $0 }) == Set(committed.map(\.muid)))
        for text in ["r0", "r1"] {
            let left = try #require(taps.first { $0.tap == "leaving" && $0.text == text })
            let sent = try #require(taps.first { $0.tap == "outbound" && $0.text == text })
            #expect(left.committed < sent.committed)
            #expect(taps.firstIndex(of: left)! < taps.firstIndex(of: sent)!)
        }
    }
}
