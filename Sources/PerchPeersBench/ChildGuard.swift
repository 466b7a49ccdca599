import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The `perch run` child of a loopback run, killed if the bench dies of a signal before its
/// `defer` runs: a trap or a fault of its own, an abort, SIGTERM, SIGINT or SIGHUP. `posix_spawn`
/// cannot give the child a parent-death signal, so a crashed hand run left a server running.
///
/// The handler kills the child, puts back the handler it replaced (Swift's backtracer for the
/// faults, the default for the rest) and raises the signal again, which that handler takes once
/// this one returns. It touches only an atomic and calls only async-signal-safe functions.
enum ChildGuard {
    private static let child = Atomic<Int32>(0)
    private static let signals = [SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGTERM, SIGINT, SIGHUP]
    /// The replaced handlers, by signal number (allocated once, before any handler is set).
    nonisolated(unsafe) private static let replaced: UnsafeMutablePointer<sigaction> = {
        let table = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)
        table.initialize(repeating: sigaction(), count: 65)
        for number in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                let pid = ChildGuard.child.load(ordering: .acquiring)
                if pid > 0 { kill(pid, SIGKILL) }
                sigaction(number, ChildGuard.replaced + Int(number), nil)
                raise(number)
            }
            sigemptyset(&action.sa_mask)
            sigaction(number, &action, table + Int(number))
        }
        return table
    }()

    /// Kills `pid` should the bench die of one of those signals, until ``release()``.
    static func watch(_ pid: pid_t) {
        _ = replaced
        child.store(pid, ordering: .releasing)
    }

    /// Stops watching; answers the child still watched (0 once reaped: its pid may be another
    /// process's by now).
    @discardableResult
    static func release() -> pid_t {
        child.exchange(0, ordering: .acquiringAndReleasing)
    }
}
