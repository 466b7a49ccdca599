import PerchLock

/// A token bucket: `burst` actions at once, refilled at `perMinute`.
final class TokenBucket: Sendable {
    private let state: Lock<(tokens: Double, at: Double?)>
    let perSecond: Double
    let capacity: Double

    init(perMinute: Int, burst: Int) {
        perSecond = Double(perMinute) / 60
        capacity = Double(max(1, burst))
        state = Lock((Double(max(1, burst)), nil))
    }

    func take(at time: Double) -> Bool {
        state.withLock { state in
            if let last = state.at { state.tokens = min(capacity, state.tokens + (time - last) * perSecond) }
            state.at = time
            guard state.tokens >= 1 else { return false }
            state.tokens -= 1
            return true
        }
    }

    /// Whether the bucket has refilled by `time`: then it is as a new one.
    func isFull(at time: Double) -> Bool {
        state.withLock { state in
            guard let last = state.at else { return true }
            return state.tokens + (time - last) * perSecond >= capacity
        }
    }
}

/// A bot's bucket for each conversation it acts in. A full bucket is the same as a new one, so once
/// `kept` are held the full ones are dropped: a bot answering thousands of one-on-one conversations
/// keeps only those it acted in lately.
final class ConversationBuckets: Sendable {
    static let kept = 4_096
    let perMinute: Int
    let burst: Int
    private let buckets = Lock<[String: TokenBucket]>([:])

    init(perMinute: Int, burst: Int) {
        self.perMinute = perMinute
        self.burst = burst
    }

    func bucket(for conversation: String, at time: Double) -> TokenBucket {
        buckets.withLock { buckets in
            if let bucket = buckets[conversation] { return bucket }
            if buckets.count >= Self.kept { buckets = buckets.filter { !$0.value.isFull(at: time) } }
            let bucket = TokenBucket(perMinute: perMinute, burst: burst)
            buckets[conversation] = bucket
            return bucket
        }
    }

    /// The buckets held (tests).
    var count: Int { buckets.withLock { $0.count } }
}
