/// Runs a task's job on the thread that resumed it when that thread is the owner of a
/// ``ThreadExecutor`` inside ``ThreadExecutor/running(_:)`` (an HTTP connection's thread serving a
/// request), after what that owner is running; anywhere else, on the shared pool.
///
/// For the bots of `perch run`: a message posted over HTTP is committed on the connection's
/// thread, which resumes the bots of the message's room. On the pool each of them would wake a
/// thread of the pool, on a virtual machine an interrupt between virtual CPUs; joined, they run on
/// the connection's thread once its answer is sent, and a bot's reply is committed there too: a
/// round trip over HTTP wakes no other thread, and costs the server less CPU.
///
/// At most `limit` jobs join one owner (one request); the rest go to the pool, so a room with
/// many bots still spreads them over the cores.
public final class JoiningExecutor: TaskExecutor, @unchecked Sendable {
    let limit: Int

    public init(limit: Int = 8) {
        self.limit = limit
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if let owner = ThreadExecutor.current, owner.join(job, as: asUnownedTaskExecutor(), limit: limit) { return }
        globalConcurrentExecutor.enqueue(ExecutorJob(job))
    }
}
