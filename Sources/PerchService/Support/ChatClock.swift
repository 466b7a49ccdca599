import Foundation
import PerchLock

/// Where the service reads the time: epoch seconds. Tests use ``ManualClock``.
public protocol ChatClock: Sendable {
    func now() -> Int64
}

/// The system's wall clock.
public struct SystemClock: ChatClock {
    public init() {}
    public func now() -> Int64 { Int64(Date().timeIntervalSince1970) }
}

/// A clock that moves only when told, for second-granular behaviour in tests.
public final class ManualClock: ChatClock {
    private let current: Lock<Int64>

    public init(_ start: Int64 = 1_800_000_000) { current = Lock(start) }

    public func now() -> Int64 { current.withLock { $0 } }

    public func advance(by seconds: Int64 = 1) { current.withLock { $0 += seconds } }

    public func set(_ seconds: Int64) { current.withLock { $0 = seconds } }
}

extension Duration {
    /// This duration for Dispatch's timers and waits (to the nanosecond).
    public var dispatchInterval: DispatchTimeInterval {
        .nanoseconds(Int(components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000))
    }
}
