import PerchLock

/// A bot's Matrix account: its bot's uid, its Matrix id (from `whoami`) and its client.
struct MatrixAccount: Sendable {
    let uid: String
    let matrixID: String
    let client: MatrixClient
}

/// Why each account is not ready (nil: it syncs), for `/readyz`.
final class AccountHealth: Sendable {
    private let reasons = Lock<[String: String]>([:])

    /// Marks `uid` as waiting for its first sync.
    func starting(_ uid: String) { reasons.withLock { $0[uid] = "has not synced yet" } }

    func synced(_ uid: String) { _ = reasons.withLock { $0.removeValue(forKey: uid) } }

    func failing(_ uid: String, _ reason: String) { reasons.withLock { $0[uid] = reason } }

    /// The first account that is not ready, with why.
    var notReady: String? {
        reasons.withLock { reasons in
            reasons.keys.sorted().first.map { "the Matrix account of \($0) \(reasons[$0]!)" }
        }
    }
}

/// The events the relays sent and recorded lately (the last 4,096), so a sync that brings one
/// back records nothing more for it.
final class RelayedEvents: Sendable {
    private let events = Lock<(set: Set<String>, order: [String])>(([], []))

    func insert(_ event: String) {
        events.withLock { events in
            guard events.set.insert(event).inserted else { return }
            events.order.append(event)
            if events.order.count > 4_096 { events.set.remove(events.order.removeFirst()) }
        }
    }

    func contains(_ event: String) -> Bool { events.withLock { $0.set.contains(event) } }
}

/// How long to wait before the next try after `failures` failures in a row: 1, 2, 4 … up to 30
/// seconds, or what the server asked for (429's `retry_after_ms`) when it asked.
func backoff(after failures: Int, asked: Duration?) -> Duration {
    if let asked { return max(asked, .milliseconds(10)) }
    return .seconds(min(30, 1 << min(failures - 1, 5)))
}
