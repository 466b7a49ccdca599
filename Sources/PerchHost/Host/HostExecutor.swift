import Dispatch
import Foundation
import PerchLock

/// A thread of its own that runs, one job at a time, the tasks that prefer it: the bots' consumers
/// (``BotHost/Options/executor``) and a connector's inbound task, like the event loop of an
/// asyncio bot framework.
///
/// Why: a message sent from a task on this executor is committed on its thread (the store's writer
/// commits a lone send on the caller's thread), which resumes the bots' waits; they run next on the
/// same thread once the sender's task suspends, and the tap of their replies resumes the sender
/// there again. A round trip then wakes no other thread. On the shared cooperative pool each of
/// those resumptions may wake a second thread on the other core, which on this virtual machine is an
/// interrupt between virtual CPUs (BENCHMARKS.md, ninth session: the closed loop's median 0.089 →
/// 0.068 ms in `make bench`). It does not help a sender on another thread (an HTTP connection's):
/// then every message wakes this thread, where the pool may have found its own thread free;
/// `perch run` keeps the pool.
///
/// A job must not block the thread (sleep, wait on a semaphore for another task): every task on
/// this executor would wait with it. Long CPU work belongs in a detached task.
public final class HostExecutor: TaskExecutor, @unchecked Sendable {
    private let state = Lock<(jobs: [UnownedJob], sleeping: Bool, stopped: Bool)>(([], false, false))
    /// The executor's thread, once it runs.
    private let thread = Lock<pthread_t?>(nil)
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    /// Starts the thread, named `name` (at most 15 bytes are shown by `top -H` and `perf`).
    public init(name: String = "perch-host") {
        Thread.detachNewThread { [self] in
            nameCurrentThread(name)
            thread.withLock { $0 = pthread_self() }
            self.loop()
        }
    }

    /// Whether the caller runs on this executor's thread.
    public var isCurrent: Bool {
        thread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let (queued, sleeping) = state.withLock { state -> (Bool, Bool) in
            guard !state.stopped else { return (false, false) }
            state.jobs.append(job)
            defer { state.sleeping = false }
            return (true, state.sleeping)
        }
        if !queued { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        if sleeping { wake.signal() }
    }

    /// Ends the thread once the jobs queued so far have run; later jobs go to the shared pool, so a
    /// task still preferring this executor finishes there. Returns once the thread has ended, or at
    /// once when called from a job on that thread (which could not wait for itself).
    public func stop() {
        let sleeping = state.withLock { state -> Bool? in
            guard !state.stopped else { return nil }
            state.stopped = true
            defer { state.sleeping = false }
            return state.sleeping
        }
        guard let sleeping else { return }
        if sleeping { wake.signal() }
        if !isCurrent { done.wait() }
    }

    private func loop() {
        var batch: [UnownedJob] = []
        while true {
            // Takes every queued job at once; sleeps only when none came since the last batch.
            let (stopped, sleep) = state.withLock { state -> (Bool, Bool) in
                swap(&batch, &state.jobs)
                state.sleeping = batch.isEmpty && !state.stopped
                return (state.stopped, state.sleeping)
            }
            if sleep {
                wake.wait()
                continue
            }
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
            if batch.isEmpty && stopped { break }
            batch.removeAll(keepingCapacity: true)
        }
        done.signal()
    }
}
