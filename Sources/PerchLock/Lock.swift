#if canImport(Glibc)
    import Glibc
#endif

/// A value behind a lock: glibc's default `pthread_mutex_t`.
///
/// Perch does not use `Synchronization.Mutex` on Linux. It is a priority-inheritance futex: every
/// release hands the lock to the next waiter in line and the kernel must run that thread before
/// anyone can take it, so contended threads convoy: with many threads on one lock each release
/// costs a context switch, and under many event-stream connections a busy lock can stop making
/// progress (its waiters parked, none holding it). A pthread mutex lets a running thread take a
/// lock that was just released, which is what short critical sections want.
///
/// The value and the mutex share one allocation (a `ManagedBuffer` whose header is the value and
/// whose one element is the mutex, which never moves): a lock is made for every bot's send pipeline
/// and every HTTP request, and a separately allocated mutex was a second allocation each time.
/// Copies of a `Lock` are the same lock.
public struct Lock<Value>: @unchecked Sendable {
    @usableFromInline final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        deinit {
            withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                mutex.deinitialize(count: 1)
            }
        }
    }

    @usableFromInline let storage: Storage

    public init(_ value: Value) {
        let made = Storage.create(minimumCapacity: 1) { _ in value }
        storage = unsafeDowncast(made, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            _ = pthread_mutex_init(mutex, nil)
        }
    }

    /// Runs `body` with the value while holding the lock. `body` must not take this lock again.
    ///
    /// Inlinable, so each caller gets it specialized to its value and closure: called across modules
    /// as a plain generic function it would pay a call and the runtime's generic metadata lookups
    /// on every lock of the hot path.
    @inlinable @inline(__always)
    public func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        try storage.withUnsafeMutablePointers { (value, mutex) throws(E) -> T in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }
}
