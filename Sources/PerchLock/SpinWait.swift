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
/// virtual one (the hypervisor has halted it and must schedule it again). On the bench machine
/// the WebSocket round trip's median fell from 0.235 to 0.172 ms with the server looking for 50
/// µs before it slept, at the same CPU a run: the wake-ups it saves cost about what the looking
/// does (BENCHMARKS.md, twelfth session). Go's scheduler spins idle threads before parking them
/// for the same reason, as do glibc's adaptive mutexes and Seastar's reactor.
///
/// Looking never takes a CPU the work needs: a thread looks only when the process may run on more
/// than one CPU, only while fewer threads than its CPUs less one are looking, and for at most
/// ``budget`` after it ran out of work, so an idle host still sleeps. `PERCH_SPIN_MICROSECONDS`
/// sets the budget (0: never look; at most 1,000; docs/configuration.md).
public enum SpinWait {
    /// How long a thread looks for work before it sleeps, in nanoseconds; zero when it never does.
    public static let budget: UInt64 = budget(
        microseconds: getenv("PERCH_SPIN_MICROSECONDS").flatMap { UInt64(String(cString: $0)) },
        cpus: Int(perch_process_cpu_count()))

    /// The default budget, in microseconds.
    public static let defaultMicroseconds: UInt64 = 50

    /// The threads looking now; at most one fewer than the process's CPUs.
    static let lookers = Lookers(limit: max(Int(perch_process_cpu_count()) - 1, 0))

    /// The budget, in nanoseconds, for a process on `cpus` CPUs with `microseconds` asked for (nil:
    /// the default).
    static func budget(microseconds: UInt64?, cpus: Int) -> UInt64 {
        guard cpus > 1 else { return 0 }
        return min(microseconds ?? defaultMicroseconds, 1_000) * 1_000
    }

    /// Asks `ready` until it says yes or ``budget`` has passed (once only, when the thread may not
    /// look): whether it said yes.
    public static func spin(_ ready: () -> Bool) -> Bool {
        spin(for: budget, among: lookers, ready)
    }

    /// ``spin(_:)`` with the budget in nanoseconds, counted among `lookers`.
    static func spin(for budget: UInt64, among lookers: Lookers, _ ready: () -> Bool) -> Bool {
        if ready() { return true }
        guard budget > 0, lookers.enter() else { return false }
        defer { lookers.leave() }
        let until = DispatchTime.now().uptimeNanoseconds + budget
        repeat {
            // Several pauses between two looks (a look may be a system call, such as poll(2)).
            for _ in 0..<8 { perch_cpu_relax() }
            if ready() { return true }
        } while DispatchTime.now().uptimeNanoseconds < until
        return false
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

    /// A semaphore whose waiter looks first when `spinning` (else a plain one).
    public init(spinning: Bool = true) { self.spinning = spinning }

    public func signal() {
        pending.add(1, ordering: .releasing)
        semaphore.signal()
    }

    /// Waits for a signal until `deadline`: whether one came.
    @discardableResult
    public func wait(until deadline: DispatchTime = .distantFuture) -> Bool {
        if spinning, SpinWait.spin({ pending.load(ordering: .acquiring) > 0 }) {
            semaphore.wait()
        } else if semaphore.wait(timeout: deadline) != .success {
            return false
        }
        pending.subtract(1, ordering: .relaxed)
        return true
    }
}
