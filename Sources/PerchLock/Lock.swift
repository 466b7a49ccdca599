#if canImport(Glibc)
    import Glibc
#endif

/// A value behind a lock: glibc's default `pthread_mutex_t`.
///
/// Perch does not use `Synchronization.Mutex` on Linux. It is a priority-inheritance futex: every
/// release hands the lock to the next waiter in line and the kernel must run that thread before
/// anyone can take it, so contended threads convoy. Measured on this machine: 200 threads taking
/// one lock in a loop ran 200 times slower than with a pthread mutex, and under many event-stream
/// connections the host's event cache lock stopped making progress at all (a thousand connection
/// threads parked on it, none holding it; BENCHMARKS.md, sixth session). A pthread mutex lets a
/// running thread take a lock that was just released, which is what short critical sections want.
public final class Lock<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock. `body` must not take this lock again.
    @inline(__always)
    public func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
