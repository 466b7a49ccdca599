import PerchLock

/// The running bots by name. Every consumer reads it at every event, so a reload takes effect
/// between two events of a bot; the host swaps it whole when it installs a configuration.
///
/// A lock, not an actor: the read is on the hot path of every event and takes a few nanoseconds
/// under the lock, where a hop onto an actor would suspend the consumer and queue it behind
/// whatever the actor is doing (a reload compiling word lists).
final class BotRoster: Sendable {
    private let bots = Lock<[String: BotRuntime]>([:])

    /// The running bot named `name`; nil once a reload removed it.
    subscript(name: String) -> BotRuntime? { bots.withLock { $0[name] } }

    /// Every running bot by name.
    var all: [String: BotRuntime] { bots.withLock { $0 } }

    var count: Int { bots.withLock { $0.count } }

    /// Puts `fresh` in place of the running bots; answers the bots it replaced.
    func replace(with fresh: [String: BotRuntime]) -> [String: BotRuntime] {
        bots.withLock { current in
            defer { current = fresh }
            return current
        }
    }
}
