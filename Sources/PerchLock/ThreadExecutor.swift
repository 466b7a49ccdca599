import Dispatch

/// Runs the jobs of the tasks that prefer it on a thread of the owner's (an HTTP connection's, or
/// the host's own: `HostExecutor`), which calls `runPending` and sleeps in `waitForWork` until more
/// come. Once stopped, queued and later jobs go to the shared pool, so a task that outlives its
/// thread's interest still finishes.
public final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    public init() {}

    private let state = Lock<(jobs: [UnownedJob], stopped: Bool)>(([], false))
    private let wake = DispatchSemaphore(value: 0)

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // Nothing keeps this executor alive for the caller (the runtime holds it unowned): once the
        // job is queued, the owner's thread may run it, finish the request and let the executor
        // go, so nothing here may touch `self` after the lock is released. The semaphore is taken
        // under the lock and signalled after it, through that reference, which keeps it alive.
        // (Signalling through `self` after the lock crashed a loopback run under load: the semaphore
        // was freed in between. Signalling under the lock made the woken owner sleep again at once,
        // on the lock the signaller still held: perf counted it in a pipelined burst.)
        let wake = state.withLock { state -> DispatchSemaphore? in
            guard !state.stopped else { return nil }
            state.jobs.append(job)
            return self.wake
        }
        guard let wake else { return globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        wake.signal()
    }

    /// Runs the jobs queued so far, on this thread, as `executor`'s (this one when nil: an owner
    /// that is itself the executor its tasks prefer passes itself); false when there were none.
    @discardableResult
    public func runPending(as executor: UnownedTaskExecutor? = nil) -> Bool {
        let jobs = state.withLock { state in
            defer { state.jobs.removeAll(keepingCapacity: true) }
            return state.jobs
        }
        let executor = executor ?? asUnownedTaskExecutor()
        for job in jobs { job.runSynchronously(on: executor) }
        return !jobs.isEmpty
    }

    /// Wakes `waitForWork` (the owner has something else to look at).
    public func signal() { wake.signal() }

    /// Sleeps until a job or a `signal` comes, or `deadline` passes (then false).
    @discardableResult
    public func waitForWork(until deadline: DispatchTime = .distantFuture) -> Bool {
        wake.wait(timeout: deadline) == .success
    }

    /// The owner's thread runs no more jobs: queued and later ones go to the shared pool.
    public func stop() {
        let jobs = state.withLock { state in
            state.stopped = true
            defer { state.jobs.removeAll() }
            return state.jobs
        }
        for job in jobs { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }
}
