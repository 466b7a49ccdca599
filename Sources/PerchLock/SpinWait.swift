import CSched
import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Looking for work for a few tens of microseconds before going to sleep, on the threads a round
/// trip comes back to soon: the store's writer, the host's executor, a WebSocket's thread.
///
/// Why: a thread that sleeps leaves its CPU idle, and an idle CPU is slow to wake, most of all a
/// virtual one (the hypervisor has halted it and must schedule it again): when the next piece of
/// work comes within tens of microseconds, as in a round trip, looking for it costs less CPU than
/// the wake-up it saves, and the work starts sooner. Go's scheduler spins idle threads before
/// parking them for the same reason, as do glibc's adaptive mutexes and Seastar's reactor.
///
/// Looking never takes a CPU the work needs: a thread looks only when the process may run on more
/// than one CPU, with at most one thread fewer than the CPUs looking at a time, and for at most
/// ``budget`` after it ran out of work, so an idle host still sleeps. Where looks keep finding
/// nothing (a quiet socket, a writer between rare commits), the place stops looking but for a try
/// now and then (``SpinHistory``). `PERCH_SPIN_MICROSECONDS` sets the budget (0: never look; at
/// most 1,000; docs/configuration.md).
public enum SpinWait {
    /// How long a thread looks for work before it sleeps, in nanoseconds; zero when it never does.
    public static let budget: UInt64 = budget(
        microseconds: getenv("PERCH_SPIN_MICROSECONDS").flatMap { UInt64(String(cString: $0)) }, cpus: cpus)

    /// The default budget, in microseconds.
    public static let defaultMicroseconds: UInt64 = 50

    /// The CPUs the process may run on.
    private static let cpus = Int(perch_process_cpu_count())

    /// The threads looking now; at most one fewer than the process's CPUs.
    static let lookers = Lookers(limit: max(cpus - 1, 0))

    /// The budget, in nanoseconds, for a process on `cpus` CPUs with `microseconds` asked for (nil:
    /// the default).
    static func budget(microseconds: UInt64?, cpus: Int) -> UInt64 {
        guard cpus > 1 else { return 0 }
        return min(microseconds ?? defaultMicroseconds, 1_000) * 1_000
    }

    /// Asks `ready` again and again for `budget` nanoseconds: whether it said yes, or nil when the
    /// thread may not look (no budget, or `lookers` has no room).
    static func look(for budget: UInt64, among lookers: Lookers, _ ready: () -> Bool) -> Bool? {
        guard budget > 0, lookers.enter() else { return nil }
        defer { lookers.leave() }
        let until = DispatchTime.now().uptimeNanoseconds + budget
        repeat {
            // Several pauses between two looks (a look may be a system call, such as poll(2)).
            for _ in 0..<8 { perch_cpu_relax() }
            if ready() { return true }
        } while DispatchTime.now().uptimeNanoseconds < until
        return false
    }

    /// Asks `ready` until it says yes or `budget` nanoseconds have passed, counted among `lookers`
    /// (once only, when the thread may not look): whether it said yes.
    static func spin(for budget: UInt64, among lookers: Lookers, _ ready: () -> Bool) -> Bool {
        ready() || look(for: budget, among: lookers, ready) == true
    }

    /// The threads looking at once, up to a limit.
    final class Lookers: Sendable {
        let limit: Int
        private let count = Atomic<Int>(0)

        init(limit: Int) { self.limit = limit }

        /// Counts the caller among those looking, unless `limit` are looking already.
        func enter() -> Bool {
            var current = count.load(ordering: .relaxed)
            while current < limit {
                let (exchanged, original) = count.compareExchange(
                    expected: current, desired: current + 1, ordering: .relaxed)
                if exchanged { return true }
                current = original
            }
            return false
        }

        func leave() { count.subtract(1, ordering: .relaxed) }
    }
}

/// What one place that waits remembers of its looks (``SpinWait``): after four in a row found
/// nothing, it looks only every sixteenth time it waits, until a look finds work again. A quiet
/// WebSocket or a writer between rare commits then costs no CPU for looking, while a busy one
/// keeps looking. (glibc's adaptive mutexes likewise learn how long to spin from how long the
/// last spins took.) For one thread at a time.
public struct SpinHistory: Sendable {
    /// Looks in a row that found nothing, and waits since the last look while it skips them.
    private(set) var misses = 0
    private var skipped = 0
    static let missLimit = 4
    static let probeInterval = 16

    public init() {}

    /// Whether `ready` says yes, at once or within a look when this place looks now.
    public mutating func spin(_ ready: () -> Bool) -> Bool {
        spin(for: SpinWait.budget, among: SpinWait.lookers, ready)
    }

    /// ``spin(_:)`` with the budget in nanoseconds, counted among `lookers`.
    mutating func spin(for budget: UInt64, among lookers: SpinWait.Lookers, _ ready: () -> Bool) -> Bool {
        if ready() { return true }
        if misses >= Self.missLimit {
            skipped += 1
            guard skipped >= Self.probeInterval else { return false }
            skipped = 0
        }
        switch SpinWait.look(for: budget, among: lookers, ready) {
        case true?:
            misses = 0
            return true
        case false?:
            misses += 1
            return false
        case nil:
            return false
        }
    }
}

/// A semaphore for one waiter that looks for a signal for ``SpinWait/budget`` before it sleeps.
///
/// A `DispatchSemaphore` cannot be asked without a system call whether it was signalled (a wait
/// with a deadline in the past goes to the kernel on Linux), so the signals not yet taken are
/// counted beside it: the waiter looks at the count, and takes the semaphore's signal once the
/// count says it is there (or on its way: a signaller counts before it signals).
public final class SpinningSemaphore: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let pending = Atomic<Int>(0)
    private let spinning: Bool
    /// The waiter's own (one waiter at a time).
    private let history = Mutex(SpinHistory())

    /// A semaphore whose waiter looks first when `spinning` (else a plain one).
    public init(spinning: Bool = true) { self.spinning = spinning }

    public func signal() {
        pending.add(1, ordering: .releasing)
        semaphore.signal()
    }

    /// Waits for a signal until `deadline`: whether one came.
    @discardableResult
    public func wait(until deadline: DispatchTime = .distantFuture) -> Bool {
        if spinning, history.withLock({ $0.spin { pending.load(ordering: .acquiring) > 0 } }) {
            semaphore.wait()
        } else if semaphore.wait(timeout: deadline) != .success {
            return false
        }
        pending.subtract(1, ordering: .relaxed)
        return true
    }
}
