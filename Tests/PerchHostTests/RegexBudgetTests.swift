import Foundation
import PerchChat
import PerchHost
import PerchTestSupport
import PerchTesting
import Testing

/// A rule whose pattern backtracks catastrophically on a message does not hold the bot: the match
/// is cut at its budget, the rule does not fire, and the cut is counted.
@Suite struct RegexBudgetTests {
    @Test func aCatastrophicPatternIsCutCountedAndTheOtherRulesGoOn() async throws {
        let rules = """
              - name: greedy
                on: message
                when: { text_matches: '^(a+)+$' }
                do: [{ reply: "all a" }]
              - name: ping
                on: { command: ping }
                do: [{ reply: "pong" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            try await chat.post("aaaa", as: "carol", to: .group("room"))
            try await chat.post(String(repeating: "a", count: 60) + "!", as: "carol", to: .group("room"))
            try await chat.post("!ping", as: "carol", to: .group("room"))
            let replies = try await chat.botMessages(in: .group("room")).compactMap(\.text)
            #expect(replies == ["all a", "pong"])
            #expect(
                chat.host.metrics.value("perch_regex_budget_exceeded_total", ["bot": "b", "rule": "greedy"]) == 1)
            #expect(await chat.log.contains { $0.contains("rule greedy: text_matches ran out of its budget") })
        }
    }
}
