import PerchLock

/// One line a minute for a warning that repeats, as the kernel's and journald's rate-limited logs
/// do: a bot whose replies are all refused (its rate limit in a busy room, a pin it may not make)
/// would otherwise write a line for every message it hears, and a full disk a line for every call.
///
/// As the kernel's `printk_ratelimit` (an interval and a burst): the first `burst` warnings of a kind
/// in a window of `window` seconds are logged; the rest of that window are only counted; the next
/// one after the window is logged with that count, and opens a new window. Counters
/// (`perch_handler_errors_total`, `perch_rate_limited_actions_total`) still count each.
public final class RepeatedWarnings: Sendable {
    private struct Window {
        /// When the window opened.
        var openedAt: Double
        /// Warnings of the kind logged in it.
        var logged: Int
        /// Warnings of the kind held back in it.
        var heldBack: Int
    }

    public let window: Double
    public let burst: Int
    private let kinds = Lock<[String: Window]>([:])

    /// How many kinds are kept before the finished ones are forgotten.
    static let keptKinds = 1_024

    /// The kinds kept now (tests).
    var keptCount: Int { kinds.withLock { $0.count } }

    public init(window: Double = 60, burst: Int = 10) {
        self.window = window
        self.burst = max(1, burst)
    }

    /// Whether the warning of `kind` at `time` is to be logged: `nil` holds it back, a number logs it
    /// and says how many of its kind were held back before it.
    public func admit(_ kind: String, at time: Double) -> Int? {
        kinds.withLock { kinds in
            // Kinds may name what varies (a path in a server's message): past `keptKinds`, those
            // whose window is over are forgotten (a new line opens them again), so the table does
            // not grow with every kind ever seen; one that held lines back is kept ten windows more,
            // for the count its next line carries.
            if kinds.count >= Self.keptKinds, kinds[kind] == nil {
                kinds = kinds.filter {
                    let age = time - $0.value.openedAt
                    return age >= 0 && age < window * ($0.value.heldBack > 0 ? 10 : 1)
                }
            }
            // A clock set back (the service's is the wall clock) opens a new window rather than
            // holding the kind back until the clock is past the old one again.
            if var open = kinds[kind], time >= open.openedAt, time - open.openedAt < window {
                defer { kinds[kind] = open }
                guard open.logged < burst else {
                    open.heldBack += 1
                    return nil
                }
                open.logged += 1
                return 0
            }
            let heldBack = kinds[kind]?.heldBack ?? 0
            kinds[kind] = Window(openedAt: time, logged: 1, heldBack: 0)
            return heldBack
        }
    }

    /// ``admit(_:at:)`` as the end of the line to log: `nil` holds the warning back; otherwise
    /// nothing, or ` (N more like it since the last such line, not logged)`.
    public func suffix(_ kind: String, at time: Double) -> String? {
        admit(kind, at: time).map { $0 == 0 ? "" : " (\($0) more like it since the last such line, not logged)" }
    }
}
