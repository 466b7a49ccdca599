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
/// those resumptions may wake a second thread on the other core, which on a virtual machine is an
/// interrupt between virtual CPUs, the largest single cost of an in-process round trip. It does not
/// help a sender on another thread (an HTTP connection's):
/// then every message wakes this thread, where the pool may have found its own thread free;
/// `perch run` gives its bots a ``JoiningExecutor`` instead, which runs them on the connection's
/// thread.
///
/// A job must not block the thread (sleep, wait on a semaphore for another task): every task on
/// this executor would wait with it. Long CPU work belongs in a detached task.
public final class HostExecutor: TaskExecutor, @unchecked Sendable {
    /// The queue and the wake-ups, as an HTTP connection's thread has them.
    private let jobs = ThreadExecutor(spinning: true)
    /// The executor's thread, once it runs.
    private let thread = Lock<pthread_t?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// Starts the thread, named `name` (at most 15 bytes are shown by `top -H` and `perf`), on
    /// `cpus` only when given (``CPUPlacement/awayFromStorageInterrupts(of:)`` chooses CPUs the
    /// disk's interrupts do not stop; a list the kernel refuses leaves the thread unpinned).
    public init(name: String = "perch-host", cpus: [Int]? = nil) {
        Thread.detachNewThread { [self] in
            nameCurrentThread(name)
            if let cpus { CPUPlacement.pinCurrentThread(to: cpus) }
            thread.withLock { $0 = pthread_self() }
            self.loop()
        }
    }

    /// Whether the caller runs on this executor's thread.
    public var isCurrent: Bool {
        thread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        jobs.enqueue(job)
    }

    /// Ends the thread once the jobs queued so far have run; later jobs go to the shared pool, so a
    /// task still preferring this executor finishes there. Returns once the thread has ended, or at
    /// once when called from a job on that thread (which could not wait for itself).
    public func stop() {
        // From now on a job goes to the pool, even one queued before the thread sees the close.
        guard jobs.close() else { return }
        jobs.signal()
        if !isCurrent { done.wait() }
    }

    private func loop() {
        // The jobs run as this executor's, the one their tasks prefer.
        let executor = asUnownedTaskExecutor()
        while true {
            if jobs.runPending(as: executor) { continue }
            if jobs.isClosed {
                // What was queued before `stop` runs here; what comes after goes to the pool.
                jobs.runPending(as: executor)
                jobs.stop()
                break
            }
            jobs.waitForWork()
        }
        // A thread's id is reused once it ends (a new pool thread may get this one's): forget it,
        // or `isCurrent` would answer true on that other thread.
        thread.withLock { $0 = nil }
        done.signal()
    }
}
