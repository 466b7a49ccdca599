import Foundation
import PerchChat
import PerchHost
import PerchTesting
import Testing

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
        let quiet = """
            name: q
            user: { uid: quiet, name: Quiet }
            groups: [{ guid: other }]
            rules:
              - on: message
                when: { text_matches: '^hello$' }
                do: [{ reply: "hi" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": busy, "q.yaml": quiet]) { chat in
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
}
