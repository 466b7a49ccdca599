import CSched
import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the jobs of the tasks that prefer it on a thread of the owner's (an HTTP connection's, or
/// the host's own: `HostExecutor`), which calls `runPending` and sleeps in `waitForWork` until more
/// come. Once stopped, queued and later jobs go to the shared pool, so a task that outlives its
/// thread's interest still finishes. While the owner runs it inside ``running(_:)``, the tasks of a
/// ``JoiningExecutor`` resumed on the owner's thread queue their jobs here too.
public final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    /// An executor whose owner sleeps in ``waitForWork(until:)``; when `spinning`, it looks for
    /// work for a moment first (``SpinWait``: for a thread that a round trip's next step often
    /// comes back to soon, such as the host's).
    public init(spinning: Bool = false) { wake = Wake(descriptor: -1, spinning: spinning) }

    /// An executor whose owner sleeps in poll(2) beside other descriptors (a WebSocket's thread,
    /// which also waits for its socket): between ``prepareToSleep()`` and ``awake()`` a job or a
    /// ``signal()`` makes ``wakeDescriptor`` readable (while the owner is awake they write
    /// nothing: it looks at its queue before it sleeps). ``waitForWork(until:)`` is not for such
    /// an owner.
    public init(pollable: Void) {
        let descriptor = perch_eventfd()
        precondition(descriptor >= 0, "eventfd failed: errno \(errno)")
        wake = Wake(descriptor: descriptor, spinning: false)
    }

    /// The queue: each job with the executor it runs as (nil: this one); how many jobs other
    /// executors' tasks had queued here (``JoiningExecutor``); whether the owner is done; whether
    /// an owner in poll(2) sleeps (``prepareToSleep()``: only then does a job write the eventfd).
    private struct State {
        var jobs: [(job: UnownedJob, executor: UnownedTaskExecutor?)] = []
        /// An empty array with capacity, lent to ``runPending(as:)`` (see there).
        var spare: [(job: UnownedJob, executor: UnownedTaskExecutor?)] = []
        var joined = 0
        var stopped = false
        var sleeping = false

        /// What wakes the owner now: the semaphore always; the eventfd only when its owner
        /// sleeps (once: it is awake from then on).
        mutating func wakeToSignal(_ wake: Wake) -> Wake? {
            guard wake.descriptor >= 0 else { return wake }
            guard sleeping else { return nil }
            sleeping = false
            return wake
        }
    }
    private let state = Lock(State())
    private let wake: Wake

    /// Wakes the owner: a semaphore, or an eventfd for an owner in poll(2).
    private final class Wake: @unchecked Sendable {
        let semaphore: SpinningSemaphore
        let descriptor: Int32

        init(descriptor: Int32, spinning: Bool) {
            self.descriptor = descriptor
            semaphore = SpinningSemaphore(spinning: spinning)
        }

        func signal() {
            guard descriptor >= 0 else {
                semaphore.signal()
                return
            }
            var one: UInt64 = 1
            _ = Glibc.write(descriptor, &one, 8)
        }

        deinit { if descriptor >= 0 { Glibc.close(descriptor) } }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if !enqueue(job, as: nil, limit: nil) { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    /// Queues the job of a task that prefers `executor` to run on the owner's thread as that
    /// executor's, unless the owner is done or `limit` such jobs were queued here already; false
    /// when it was not queued.
    func join(_ job: UnownedJob, as executor: UnownedTaskExecutor, limit: Int) -> Bool {
        enqueue(job, as: executor, limit: limit)
    }

    private func enqueue(_ job: UnownedJob, as executor: UnownedTaskExecutor?, limit: Int?) -> Bool {
        // Nothing keeps this executor alive for the caller (the runtime holds it unowned): once the
        // job is queued, the owner's thread may run it, finish the request and let the executor
        // go, so nothing here may touch `self` after the lock is released. The wake (semaphore or
        // eventfd) is taken under the lock and signalled after it, through that reference, which
        // keeps it alive.
        // (Signalling through `self` after the lock crashed a loopback run under load: the semaphore
        // was freed in between. Signalling under the lock made the woken owner sleep again at once,
        // on the lock the signaller still held.)
        // An owner in poll(2) that is awake looks at its queue before it sleeps: no write then.
        let queued = state.withLock { state -> (queued: Bool, wake: Wake?) in
            guard !state.stopped else { return (false, nil) }
            if let limit {
                guard state.joined < limit else { return (false, nil) }
                state.joined += 1
            }
            state.jobs.append((job, executor))
            return (true, state.wakeToSignal(self.wake))
        }
        queued.wake?.signal()
        return queued.queued
    }

    /// Runs the jobs queued so far, on this thread, as `executor`'s (this one when nil: an owner
    /// that is itself the executor its tasks prefer passes itself); false when there were none.
    @discardableResult
    public func runPending(as executor: UnownedTaskExecutor? = nil) -> Bool {
        // The queue is swapped with the spare array and the spare given back emptied, so taking
        // jobs allocates nothing. (Copying the queue out and emptying it with its capacity kept
        // allocated a new buffer at every call, even with nothing queued: the copy still held the
        // old one. An owner polls this in a loop: 55 allocations an HTTP round trip.) A call made
        // from inside a job, while the spare is lent out, takes the queue without one.
        var jobs = state.withLock { state -> [(job: UnownedJob, executor: UnownedTaskExecutor?)] in
            guard !state.jobs.isEmpty else { return [] }
            var taken = state.spare
            state.spare = []
            swap(&taken, &state.jobs)
            return taken
        }
        guard !jobs.isEmpty else { return false }
        let executor = executor ?? asUnownedTaskExecutor()
        for entry in jobs { entry.job.runSynchronously(on: entry.executor ?? executor) }
        jobs.removeAll(keepingCapacity: true)
        state.withLock { state in
            if state.spare.capacity < jobs.capacity { swap(&state.spare, &jobs) }
        }
        return true
    }

    /// Wakes `waitForWork`, or an owner in poll(2) (the owner has something else to look at: it
    /// must look after ``prepareToSleep()``, which a signal before it does not cancel).
    public func signal() {
        // A semaphore is signalled without the lock (an HTTP request's and a stream's every wake).
        guard wake.descriptor >= 0 else {
            wake.semaphore.signal()
            return
        }
        let wake = state.withLock { $0.wakeToSignal(self.wake) }
        wake?.signal()
    }

    /// Sleeps until a job or a `signal` comes, or `deadline` passes (then false); a `spinning`
    /// executor's owner looks for them for a moment first.
    @discardableResult
    public func waitForWork(until deadline: DispatchTime = .distantFuture) -> Bool {
        wake.semaphore.wait(until: deadline)
    }

    /// The descriptor a job or a ``signal()`` makes readable (``init(pollable:)``), or nil.
    public var wakeDescriptor: Int32? { wake.descriptor >= 0 ? wake.descriptor : nil }

    /// For an owner in poll(2): from now on jobs and signals write the eventfd, until
    /// ``awake()``. False (and nothing changes) when jobs wait already, unless the owner is
    /// `holdingJobs` (it leaves them queued on purpose: it waits for something else first). The
    /// owner looks at its other work after this and before it polls.
    public func prepareToSleep(holdingJobs: Bool = false) -> Bool {
        state.withLock { state in
            guard state.jobs.isEmpty || holdingJobs else { return false }
            state.sleeping = true
            return true
        }
    }

    /// For an owner in poll(2), back from it: jobs and signals no longer write the eventfd, and
    /// what they wrote is consumed.
    public func awake() {
        state.withLock { $0.sleeping = false }
        var count: UInt64 = 0
        if wake.descriptor >= 0 { _ = Glibc.read(wake.descriptor, &count, 8) }
    }

    /// Lets other executors' tasks join this owner again as if none had (the limit of
    /// ``JoiningExecutor`` counts per request: an owner that serves many requests calls this
    /// between them).
    public func resetJoined() {
        state.withLock { $0.joined = 0 }
    }

    /// Takes no more jobs: later ones go to the shared pool; those queued so far still run when the
    /// owner calls ``runPending(as:)``. False when it was closed (or stopped) already.
    @discardableResult
    public func close() -> Bool {
        state.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
    }

    /// Whether ``close()`` or ``stop()`` was called.
    public var isClosed: Bool { state.withLock { $0.stopped } }

    /// The owner's thread runs no more jobs: queued and later ones go to the shared pool.
    public func stop() {
        let jobs = state.withLock { state in
            state.stopped = true
            defer { state.jobs.removeAll() }
            return state.jobs
        }
        for entry in jobs { globalConcurrentExecutor.enqueue(ExecutorJob(entry.job)) }
    }

    /// The executor whose owner the calling thread is now (inside ``running(_:)``), if any.
    public static var current: ThreadExecutor? {
        pthread_getspecific(currentKey).map { Unmanaged<ThreadExecutor>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Runs `body` as this executor's owner: meanwhile ``current`` is this executor on this thread,
    /// so a ``JoiningExecutor`` task resumed here queues its job here.
    public func running<T>(_ body: () throws -> T) rethrows -> T {
        let previous = pthread_getspecific(Self.currentKey)
        pthread_setspecific(Self.currentKey, Unmanaged.passUnretained(self).toOpaque())
        defer { pthread_setspecific(Self.currentKey, previous) }
        return try body()
    }

    private static let currentKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
}
