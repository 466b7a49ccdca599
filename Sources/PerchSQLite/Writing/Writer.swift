import CSQLite
import Dispatch
import Foundation
import PerchLock
import PerchService

/// The single writer, with group commit. One connection writes; whoever owns it runs a batch of
/// queued transaction bodies in one transaction. A body that fails leaves the others committed:
/// the batch first runs without a savepoint per body (two statements each); when a body fails, the
/// batch's changes are rolled back and it runs again with one savepoint per body. A lone body needs
/// no savepoint at all: when it fails, its transaction is rolled back.
///
/// A caller that finds the writer idle commits on its own thread (no hand-off: a lone send pays no
/// thread wake-ups); bodies arriving meanwhile queue up, and when the caller is done it hands the
/// queue to the writer thread, which drains it in batches. Ownership passes under the lock, so the
/// connection is only ever used by one thread at a time.
final class Writer: Sendable {
    struct Job: @unchecked Sendable {
        // Runs on the owning thread only: the body (in a savepoint of its own when `guarded`; false
        // when the body failed), then the continuation after the commit.
        let run: (_ tx: SQLiteTransaction, _ guarded: Bool) -> Bool
        let finish: (Error?) -> Void
    }

    enum Owner { case none, caller, thread }
    enum Next { case refused, queued, wake, lead([Job]) }

    private let state: Lock<(jobs: [Job], closed: Bool, owner: Owner)>
    /// Hands the queue to the writer thread, which looks for the next hand-off for a moment before
    /// it sleeps (`SpinWait`).
    private let signal = SpinningSemaphore()
    private let done = DispatchSemaphore(value: 0)
    private let maximumBatch: Int
    private let connection: ConnectionBox
    private let notifier: EventNotifier
    private let cache: EventCache
    private let memberships: Memberships
    private let watermarks: NotificationWatermarks
    /// Used by whoever owns the connection, like the connection.
    private let reference = ReferenceCache()
    private let checkpointer: Checkpointer
    /// Resumes the callers of the writer thread's large batches, in commit order, on another core:
    /// the writer goes on to the next batch meanwhile. A small batch resumes its few callers on the
    /// writer (a hand-off would cost them one more thread wake than it saves the writer).
    private let completions = DispatchQueue(label: "perch-sqlite-completions", qos: .userInitiated)
    static let handedOffBatch = 8

    init(
        connection: ConnectionBox, maximumBatch: Int, notifier: EventNotifier, cache: EventCache,
        memberships: Memberships, watermarks: NotificationWatermarks, checkpointer: Checkpointer
    ) {
        self.watermarks = watermarks
        self.checkpointer = checkpointer
        state = Lock((jobs: [], closed: false, owner: .none))
        self.maximumBatch = maximumBatch
        self.connection = connection
        self.notifier = notifier
        self.cache = cache
        self.memberships = memberships
        Thread.detachNewThread { [self] in
            nameCurrentThread("perch-writer")
            self.loop()
        }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Queues `body`; `complete` gets its result after the commit. When the writer is idle and the
    /// caller waits next (`callerGoesOn` false), the body is committed on this thread before this
    /// returns: a caller that waits for its commit anyway pays no thread hand-off. A caller that
    /// goes on meanwhile (`callerGoesOn`: a bot with more events in hand) never runs the commit
    /// itself, so its work and the commit run on two cores.
    func enqueue<T: Sendable>(
        body: @escaping @Sendable (any ChatWriteTransaction) throws -> T, callerGoesOn: Bool = false,
        complete: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        let outcome = OutcomeBox<T>()
        let job = Job(
            run: { tx, guarded in
                guard guarded else {
                    do {
                        outcome.result = .success(try body(tx))
                        return true
                    } catch {
                        outcome.result = .failure(error)
                        return false
                    }
                }
                let db = tx.db
                let appended = tx.appended.count
                let notified = tx.notified.count
                let lastSequence = tx.lastEventSequence
                let pruned = tx.prunedEvents
                do {
                    try db.run("SAVEPOINT job")
                    do {
                        outcome.result = .success(try body(tx))
                        try db.run("RELEASE job")
                    } catch {
                        _ = try? db.run("ROLLBACK TO job")
                        _ = try? db.run("RELEASE job")
                        tx.appended.removeSubrange(appended...)
                        tx.notified.removeSubrange(notified...)
                        // An event the body appended is gone: it must not count as committed.
                        tx.lastEventSequence = lastSequence
                        tx.prunedEvents = pruned
                        tx.reference?.forget()
                        outcome.result = .failure(error)
                    }
                } catch {
                    outcome.result = .failure(error)
                }
                if case .success = outcome.result { return true }
                return false
            },
            finish: { commitError in
                if let commitError, case .success = outcome.result {
                    complete(.failure(commitError))
                } else {
                    complete(outcome.result ?? .failure(SQLiteError(code: 1, message: "not run")))
                }
            })
        let next = state.withLock { state -> Next in
            guard !state.closed else { return .refused }
            state.jobs.append(job)
            guard state.owner == .none else { return .queued }
            guard !callerGoesOn else {
                state.owner = .thread
                return .wake
            }
            state.owner = .caller
            return .lead(take(&state.jobs))
        }
        switch next {
        case .wake:
            signal.signal()
        case .refused:
            complete(.failure(StoreClosedError()))
        case .queued:
            break
        case .lead(let batch):
            // A caller's thread belongs to the cooperative pool: it must never sit in SQLite's busy
            // wait (another process may hold the write lock). If the lock is taken, the writer
            // thread, which may wait, gets the batch back.
            let committed = commit(batch, mayWait: false)
            // What queued meanwhile goes to the writer thread: this caller's task goes on.
            let handOff = state.withLock { state -> Bool in
                if !committed { state.jobs.insert(contentsOf: batch, at: 0) }
                guard !state.jobs.isEmpty || state.closed else {
                    state.owner = .none
                    return false
                }
                state.owner = .thread
                return true
            }
            if handOff { signal.signal() }
        }
    }

    private func take(_ jobs: inout [Job]) -> [Job] {
        let count = min(jobs.count, maximumBatch)
        let batch = Array(jobs.prefix(count))
        jobs.removeFirst(count)
        return batch
    }

    /// Closes the writer (once the queued bodies are committed); whether this call closed it.
    func close() -> Bool {
        let (wasOpen, wake) = state.withLock { state -> (Bool, Bool) in
            defer { state.closed = true }
            guard !state.closed else { return (false, false) }
            // The thread is told once: when idle it takes ownership to finish; when it or a caller
            // owns the writer, it sees `closed` when the queue runs dry.
            if state.owner == .none {
                state.owner = .thread
                return (true, true)
            }
            return (true, false)
        }
        guard wasOpen else { return false }
        if wake { signal.signal() }
        done.wait()
        return true
    }

    /// After ``close()``: copies the whole log back into the database file and empties it
    /// (`wal_checkpoint(TRUNCATE)`); whether it is empty now.
    func copyBackEverything() -> Bool {
        var log: Int32 = -1
        var copied: Int32 = -1
        // Another process reading or writing now: no waiting (a close must not hang), no record.
        connection.connection.busyTimeout(milliseconds: 0)
        let status = sqlite3_wal_checkpoint_v2(
            connection.connection.handle, nil, SQLITE_CHECKPOINT_TRUNCATE, &log, &copied)
        return status == SQLITE_OK && log == 0
    }

    /// The writer thread: owns the connection from a hand-off until the queue is empty.
    private func loop() {
        while true {
            signal.wait()
            while true {
                let (batch, closed) = state.withLock { state -> ([Job], Bool) in
                    let batch = take(&state.jobs)
                    if batch.isEmpty, !state.closed { state.owner = .none }
                    return (batch, state.closed)
                }
                if batch.isEmpty {
                    if closed {
                        // Every caller is resumed before `close` returns.
                        completions.sync {}
                        done.signal()
                        return
                    }
                    break
                }
                commit(batch, mayWait: true)
            }
        }
    }

    /// One transaction for `batch`; then the event cache, the notifier and every continuation (the
    /// writer thread's on the completions queue, a caller's own commit on its thread).
    /// Without `mayWait`, returns false (and runs nothing) when another connection holds the write
    /// lock, instead of waiting in SQLite's busy handler.
    @discardableResult
    private func commit(_ batch: [Job], mayWait: Bool) -> Bool {
        let db = connection.connection
        checkpointer.catchUpIfDue(db)
        var tx = SQLiteTransaction(db, coder: connection.coder, cache: nil, reference: reference)
        var commitError: Error?
        // Whether another process committed since this connection's last batch: its events'
        // audiences are not known here.
        var foreign = true
        if !mayWait {
            db.busyTimeout(milliseconds: 0)
            defer { db.busyTimeout(milliseconds: SQLiteConnection.busyMilliseconds) }
            do {
                try db.run("BEGIN IMMEDIATE")
            } catch let error as SQLiteError where error.code & 0xff == SQLITE_BUSY {
                return false
            } catch {
                commitError = error
            }
        }
        do {
            if mayWait { try db.run("BEGIN IMMEDIATE") }
            if let commitError { throw commitError }
            foreign = try reference.check(db)
            // The bodies run with no savepoint: under an open savepoint every statement's release
            // walks SQLite's in-memory sub-journal from its start, which holds every page the batch
            // changed so far (a batch of sends to a large group spent most of its time there).
            let lone = batch.count == 1
            var commits = true
            if !batch.allSatisfy({ $0.run(tx, false) }) {
                try db.run("ROLLBACK")
                reference.forget()
                tx = SQLiteTransaction(db, coder: connection.coder, cache: nil, reference: reference)
                if lone {
                    // Its failure is its own answer; nothing else was in the transaction.
                    commits = false
                } else {
                    // Again from the start, each body in a savepoint of its own.
                    try db.run("BEGIN IMMEDIATE")
                    foreign = try reference.check(db) || foreign
                    for job in batch { _ = job.run(tx, true) }
                }
            }
            if commits {
                notifier.willCommit(through: tx.lastEventSequence)
                try db.run("COMMIT")
            }
        } catch {
            commitError = error
            try? db.execute("ROLLBACK")
            reference.forget()
            notifier.commitFailed()
        }
        // In this order: remembered memberships go stale, then the events enter the cache and the
        // notifications the watermarks, then they count as committed (readers build pages from
        // memory on that order, and a stream woken by a message finds its notification).
        if commitError == nil {
            if tx.changedMembers { memberships.invalidate() }
            cache.insert(tx.appended)
            if tx.prunedEvents > 0 { cache.forget(through: tx.prunedEvents) }
            if !tx.notified.isEmpty { watermarks.advance(tx.notified) }
        }
        if commitError == nil, tx.lastEventSequence > 0 {
            if foreign {
                notifier.advance(to: tx.lastEventSequence)
            } else {
                notifier.advance(
                    to: tx.lastEventSequence, committed: tx.appended, generation: memberships.generation)
            }
        }
        if mayWait && batch.count >= Self.handedOffBatch {
            let failure = commitError
            completions.async { for job in batch { job.finish(failure) } }
        } else {
            for job in batch { job.finish(commitError) }
        }
        return true
    }
}

/// A body's result, written and read on the writer thread only.
final class OutcomeBox<T>: @unchecked Sendable {
    var result: Result<T, Error>?
}
