import Foundation
import PerchChat
import PerchConfig
import PerchHost
import PerchService
import PerchTestSupport
import PerchTesting
import Testing

@testable import PerchSQLite

/// A conversation's events are handled in order even when a bot's final sends do not wait for
/// their commits (they queue for the writer, which commits in arrival order).
@Suite struct PipelineTests {
    static let generous = "rate_limit: { per_minute: 10000, burst: 1000, per_conversation_per_minute: 10000 }"

    @Test func aBurstInOneConversationIsAnsweredOnceEachInOrder() async throws {
        let rules = """
              - on: message
                when: { text_matches: '^n(?<n>[0-9]+)$' }
                do: [{ reply: "r{n}" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules, extra: Self.generous)]) { chat in
            try await withThrowingTaskGroup(of: Void.self) { group in
                // Two conversations at once, each posted in order without waiting for answers.
                for room in ["room", "other"] {
                    group.addTask {
                        for index in 0..<60 { try await chat.post("n\(index)", as: "carol", to: .group(room)) }
                    }
                }
                try await group.waitForAll()
            }
            for room in ["room", "other"] {
                let replies = try await chat.waitFor(timeout: .seconds(20)) { () -> [String]? in
                    let texts = try await chat.messages(in: .group(room)).filter { $0.sender == "bot" }.compactMap(
                        \.text)
                    return texts.count >= 60 ? texts : nil
                }
                #expect(replies == (0..<60).map { "r\($0)" })
            }
            try await chat.settle()
            #expect(try await chat.botMessages(in: .group("room")).count == 60)
        }
    }

    @Test func aRuleWithSeveralStepsKeepsThemInOrderPerEvent() async throws {
        let rules = """
              - on: message
                when: { text_matches: '^n(?<n>[0-9]+)$' }
                do: [{ reply: "a{n}" }, { reply: "b{n}" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules, extra: Self.generous)]) { chat in
            for index in 0..<20 { try await chat.post("n\(index)", as: "carol", to: .group("room")) }
            let replies = try await chat.waitFor(timeout: .seconds(20)) { () -> [String]? in
                let texts = try await chat.messages(in: .group("room")).filter { $0.sender == "bot" }.compactMap(\.text)
                return texts.count >= 40 ? texts : nil
            }
            #expect(replies == (0..<20).flatMap { ["a\($0)", "b\($0)"] })
        }
    }
}

/// A bot in one room sleeps through another room's traffic (the store does not wake it for events
/// it cannot see, so its saved cursor may stay behind them), and the harness still knows when every
/// bot is done.
@Suite struct QuietBotTests {
    @Test func aBotInAnotherRoomSleepsThroughTrafficAndSavesItsCursorWhenItWorks() async throws {
        let busy = botFile(
            """
              - on: message
                when: { text_matches: '^n(?<n>[0-9]+)$' }
                do: [{ reply: "r{n}" }]
            """, extra: PipelineTests.generous)
        try await withTestHost(config: hostConfig, bots: ["b.yaml": busy, "q.yaml": Self.quiet]) { chat in
            for index in 0..<30 { try await chat.post("n\(index)", as: "bob", to: .group("room")) }
            // Every bot is done (the quiet one had nothing to read) without waiting for a tick.
            #expect(try await chat.botMessages(in: .group("room")).count == 30)
            // Its own room's message wakes it; it answers and saves its cursor past everything read.
            let hello = try await chat.post("hello", as: "carol", to: .group("other"))
            let answer = try await chat.waitForMessage(in: .group("other")) { $0.sender == "quiet" }
            #expect(answer.text == "hi")
            try await chat.settle()
            #expect(try await chat.service.cursor(consumer: "bot:q") >= hello.id)
        }
    }

    /// A bot that just answered has a cursor to save; until it does, it still sleeps through another
    /// room's traffic (the poll tick, not every commit, comes round to save it). Here the host's
    /// monotonic clock stands still, so the cursor is never due to be saved while the host runs.
    @Test func aBotWithACursorToSaveStillSleepsThroughAnotherRoom() async throws {
        let directory = try writeTestConfiguration(config: hostConfig, bots: ["q.yaml": Self.quiet])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loaded = ConfigurationLoader().load(configPath: directory + "/config.yaml")
        try #require(loaded.isValid)
        let host = BotHost(
            configuration: loaded,
            options: BotHost.Options(
                dataDirectory: directory + "/data", logger: HostLogger(minimum: .warning, sink: { _ in }),
                monotonic: { 0 }, schedulesFromTimer: false))
        try await host.start()
        let service = try #require(await host.service)
        let store = try #require(service.store as? SQLiteChatStore)
        func answers() async throws -> Int {
            try await service.fetchPrevious(MessagesRequest(guid: "other", limit: 50), as: "carol").messages
                .filter { $0.sender == "quiet" }.count
        }
        func waitUntil(_ condition: () async throws -> Bool) async throws {
            for _ in 0..<2_000 where try await !condition() { try await Task.sleep(for: .milliseconds(5)) }
            #expect(try await condition())
        }
        _ = try await service.send(MessageDraft(to: .group("other"), text: "hello"), as: "carol")
        try await waitUntil { try await answers() == 1 }
        // The bot waits again, its cursor moved and not saved: each of 20 messages of another room
        // passes it over. The poll tick ends its wait (it has a cursor to save), and a tick may
        // take a commit of this process for another's and wake everyone: a run of messages
        // without one counts (on a loaded machine, not every run is).
        var counted = false
        for _ in 0..<20 where !counted {
            try await waitUntil { store.notifier.waiting >= 1 }
            let (passedOver, sweeps) = (store.notifier.passedOver, store.notifier.sweeps)
            for index in 0..<20 {
                _ = try await service.send(MessageDraft(to: .group("room"), text: "n\(index)"), as: "bob")
            }
            guard store.notifier.sweeps == sweeps else { continue }
            #expect(store.notifier.passedOver >= passedOver + 20)
            counted = true
        }
        #expect(counted)
        // Its own room still wakes it.
        _ = try await service.send(MessageDraft(to: .group("other"), text: "hello"), as: "carol")
        try await waitUntil { try await answers() == 2 }
        await host.stop()
    }

    static let quiet = """
        name: q
        user: { uid: quiet, name: Quiet }
        groups: [{ guid: other }]
        rules:
          - on: message
            when: { text_matches: '^hello$' }
            do: [{ reply: "hi" }]
        """
}
