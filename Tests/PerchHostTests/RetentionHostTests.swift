import Foundation
import PerchChat
import PerchConfig
import PerchHost
import PerchService
import PerchTestSupport
import PerchTesting
import Testing

@testable import PerchSQLite

/// The event log's retention as a host runs it, and what its bots make of it: a bot back after
/// longer than the retention says what it missed and goes on, and a bot that starts holds the log
/// back from its cursor. (What a stream resumed from before the log's start is told is in
/// PerchHTTPTests' `StreamRetentionTests`.)
@Suite struct RetentionHostTests {
    static let week: Int64 = 7 * 86_400

    static let echo = botFile(
        """
          - on: message
            when: { text_matches: "^echo (?<word>\\\\w+)$" }
            do: [{ reply: "heard {word}" }]
        """)

    /// Hosts in turn on one data directory and one clock (`monotonic`: the hosts' rate and cursor
    /// clock).
    static func withHosts(
        monotonic: @escaping @Sendable () -> Double = BotHost.uptime,
        _ body: (_ start: () async throws -> BotHost, ManualClock, String) async throws -> Void
    ) async throws {
        let directory = try writeTestConfiguration(config: hostConfig, bots: ["b.yaml": echo])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loaded = ConfigurationLoader().load(configPath: directory + "/config.yaml")
        try #require(loaded.isValid, "\(loaded.findings)")
        let clock = ManualClock()
        try await body(
            {
                let host = BotHost(
                    configuration: loaded,
                    options: BotHost.Options(
                        dataDirectory: directory + "/data", clock: clock,
                        logger: HostLogger(minimum: .info, keepInMemory: true, sink: { _ in }),
                        monotonic: monotonic, schedulesFromTimer: false))
                try await host.start()
                return host
            }, clock, directory + "/data/perch.sqlite")
    }

    /// Waits until the bot's messages in `room` are `count`.
    static func botReplies(_ service: ChatService, count: Int) async throws -> [String] {
        for _ in 0..<2_000 {
            let replies = try await service.fetchPrevious(MessagesRequest(guid: "room", limit: 50), as: "alice")
                .messages.filter { $0.sender == "bot" }.compactMap(\.text)
            if replies.count >= count { return replies }
            try await Task.sleep(for: .milliseconds(5))
        }
        return []
    }

    @Test func aBotBackAfterLongerThanTheRetentionSaysWhatItMissedAndGoesOn() async throws {
        try await Self.withHosts { start, clock, path in
            var host = try await start()
            var service = try #require(await host.service)
            _ = try await service.send(MessageDraft(to: .group("room"), text: "echo one"), as: "alice")
            #expect(try await Self.botReplies(service, count: 1) == ["heard one"])
            await host.stop()

            // While the host is down, another process on the file (a second host, `perch send
            // --local`) takes messages and prunes a week.
            do {
                let store = try SQLiteChatStore(path: path)
                let other = ChatService(store: store, clock: clock)
                _ = try await other.send(MessageDraft(to: .group("room"), text: "echo two"), as: "alice")
                _ = try await other.pruneEventLog(olderThan: Self.week)
                clock.advance(by: Self.week + 1)
                _ = try await other.send(MessageDraft(to: .group("room"), text: "echo three"), as: "alice")
                #expect(try await other.pruneEventLog(olderThan: Self.week).events > 0)
                await store.close()
            }

            host = try await start()
            service = try #require(await host.service)
            #expect(try await Self.botReplies(service, count: 2) == ["heard one", "heard three"])
            let log = await host.options.logger.records
            #expect(log.contains { $0.contains("bot b missed events") && $0.contains("storage.eventRetentionDays") })
            #expect(host.metrics.value("perch_bot_missed_events_total", ["bot": "b"]) >= 1)
            await host.stop()
        }
    }

    /// A running bot may sleep through other rooms' events for longer than the retention without
    /// saving its cursor (here the hosts' monotonic clock stands still, so it never saves it while
    /// running); a pass keeps its cursor all the same, so nothing after it is pruned.
    @Test func aRunningBotHoldsTheLogBackHoweverLongSinceItSavedItsCursor() async throws {
        try await Self.withHosts(monotonic: { 0 }) { start, clock, _ in
            let host = try await start()
            let service = try #require(await host.service)
            let saved = try await service.cursor(consumer: "bot:b")
            for text in ["one", "two"] {
                _ = try await service.send(MessageDraft(to: .group("other"), text: text), as: "carol")
            }
            _ = await host.runRetention()
            clock.advance(by: Self.week + 1)
            _ = try await service.send(MessageDraft(to: .group("other"), text: "three"), as: "carol")
            _ = await host.runRetention()
            #expect(try await service.cursor(consumer: "bot:b") == saved)
            #expect(try await service.events(for: "bot", after: saved).missed == nil)
            await host.stop()
        }
    }

    /// The host keeps the outbox for the webhooks configured now, however long since one saved its
    /// cursor (the host was down, or its receiver is): their rows are not pruned. A webhook no
    /// longer configured holds nothing.
    @Test(arguments: [true, false])
    func aConfiguredWebhookHoldsTheOutboxBack(configured: Bool) async throws {
        let webhook = """
            notifications:
              webhooks:
                - { url: "http://127.0.0.1:9/hook", name: pager, secret: "${PAGER_SECRET}" }
            """
        try await withTestHost(
            config: hostConfig + "\n" + (configured ? webhook : ""),
            environment: ["PAGER_SECRET": "0123456789abcdef-pager"]
        ) { chat in
            let service = chat.service
            _ = try await service.send(MessageDraft(to: .group("room"), text: "hi <@uid:carol>"), as: "alice")
            let newest = try await service.newestNotificationSequence()
            try await service.advanceDelivery(of: "webhook:pager", to: 0)
            _ = await chat.host.runRetention()
            chat.clock.advance(by: Self.week + 1)
            _ = try await service.send(MessageDraft(to: .group("room"), text: "later"), as: "alice")
            let pruned = await chat.host.runRetention()
            #expect(pruned.outbox == (configured ? 0 : Int(newest)))
            let oldest = try await service.routedNotifications(after: 0, limit: 1).first?.seq
            #expect(oldest == (configured ? 1 : newest + 1))
        }
    }

    /// A bot saves its cursor again as it starts, so a pass right after the host comes back after a
    /// long stop keeps what the bot has not handled yet (its last save was longer ago than the
    /// retention). The hosts' monotonic clock stands still: a running bot never saves its cursor
    /// itself here, only the start does.
    @Test func aStartingBotHoldsTheLogBackFromItsCursor() async throws {
        try await Self.withHosts(monotonic: { 0 }) { start, clock, path in
            var host = try await start()
            await host.stop()
            let saved: Int64
            do {
                let store = try SQLiteChatStore(path: path)
                saved = try await store.read { try $0.cursor(consumer: "bot:b") } ?? -1
                let other = ChatService(store: store, clock: clock)
                _ = try await other.send(MessageDraft(to: .group("other"), text: "while away"), as: "carol")
                _ = try await other.send(MessageDraft(to: .group("other"), text: "later"), as: "carol")
                _ = try await other.pruneEventLog(olderThan: Self.week)
                await store.close()
            }
            clock.advance(by: Self.week + 1)
            host = try await start()
            let service = try #require(await host.service)
            #expect(try await service.store.read { try $0.oldestCursor(savedSince: clock.now()) } != nil)
            // The pass at start keeps every event after the bot's cursor.
            _ = await host.runRetention()
            let page = try await service.events(for: "bot", after: saved)
            #expect(page.missed == nil)
            await host.stop()
        }
    }
}
