import Foundation
import PerchMatch
import PerchRegex

/// A moderation list of 5,000 words against chat-sized messages: one Hyperscan scan a message.
func benchmarkWords() async throws {
    var generator = SystemRandomNumberGenerator()
    let letters = Array("abcdefghijklmnopqrstuvwxyz")
    func word(_ length: Int) -> String { String((0..<length).map { _ in letters.randomElement(using: &generator)! }) }
    let list = (0..<5_000).map { _ in word(Int.random(in: 5...10, using: &generator)) }
    let matcher = try WordListMatcher(lists: [list])
    let messages = (0..<10_000).map { index -> String in
        let words = (0..<12).map { _ in word(Int.random(in: 2...9, using: &generator)) }
        return (index % 10 == 0 ? words + [list[index % list.count]] : words).joined(separator: " ")
    }
    var hits = 0
    let start = DispatchTime.now().uptimeNanoseconds
    for message in messages where !matcher.matchingLists(in: message).isEmpty { hits += 1 }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let pattern = try Pattern("^!ping (\\d+)$")
    let regexStart = DispatchTime.now().uptimeNanoseconds
    var regexHits = 0
    for index in 0..<100_000 where pattern.firstMatch(in: "!ping \(index)") != nil { regexHits += 1 }
    let regexSeconds = Double(DispatchTime.now().uptimeNanoseconds - regexStart) / 1e9
    report(
        "words",
        [
            "words": 5_000, "messages": messages.count, "hits": hits,
            "microseconds_per_message": (seconds / Double(messages.count) * 1e6).rounded3,
            "messages_per_s": (Double(messages.count) / seconds).rounded(),
            "pcre2_ping_with_capture_per_s": (Double(regexHits) / regexSeconds).rounded(),
        ])
}
