import PerchChat
import PerchLock
import PerchMatch

/// Word-list results by message, so several bots seeing one message scan it once.
final class MatchCache: Sendable {
    private let entries = Lock<[MatchKey: Set<Int>]>([:])

    /// Keyed by the text itself, not by `editedAt`: that is in seconds, and a second edit within the
    /// same second was given the first edit's result (a clean edit, then one adding a listed word,
    /// went past the moderator).
    struct MatchKey: Hashable {
        var id: Int64
        var text: String
    }

    func lists(for message: Message, matcher: WordListMatcher) -> Set<Int> {
        guard matcher.listCount > 0, let text = message.text else { return [] }
        // A message not stored (a dry run's, id 0) is not remembered: the next one has id 0 too.
        guard message.id > 0 else { return matcher.matchingLists(in: text) }
        let key = MatchKey(id: message.id, text: text)
        if let cached = entries.withLock({ $0[key] }) { return cached }
        let result = matcher.matchingLists(in: text)
        entries.withLock { cache in
            if cache.count > 4096 { cache.removeAll(keepingCapacity: true) }
            cache[key] = result
        }
        return result
    }
}
