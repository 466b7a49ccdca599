import CSQLite
import Dispatch
import Foundation
import PerchChat
import PerchService
import Synchronization

/// The chat store on SQLite: WAL, one writer thread with group commit, a pool of readers.
///
/// Writes queue up for the writer thread, which runs every queued body in one `BEGIN IMMEDIATE`
/// transaction, each inside its own savepoint: a body that throws rolls back alone, the others
/// commit together, and each caller resumes only after the commit. Under load this turns many
/// small transactions into one fsync; idle, a write commits at once.
public final class SQLiteChatStore: ChatStore {
    public enum Synchronous: String, Sendable {
        case normal = "NORMAL"
        case full = "FULL"
    }

    /// The newest schema version this build writes.
    public static var schemaVersion: Int { Schema.migrations.count }

    public let path: String
    private let writer: Writer
    private let readers: Mutex<[ConnectionBox]>
    private let readerPath: String
    private let notifier = EventNotifier()

    /// Opens (creating when absent) the database at `path`.
    /// - Throws: ``StoreOpenError`` for a newer schema, a file that is not a Perch database, or a
    ///   damaged file; the file is never modified in those cases.
    public init(path: String, synchronous: Synchronous = .normal, maximumBatch: Int = 512) throws {
        self.path = path
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: path, readOnly: false)
        } catch let error as SQLiteError {
            throw StoreOpenError.cannotOpen(path: path, reason: error.message)
        }
        try Self.prepare(connection, path: path, synchronous: synchronous)
        let latest = try connection.scalar("SELECT coalesce(max(seq), 0) FROM events") ?? 0
        notifier.advance(to: latest)
        writer = Writer(
            connection: ConnectionBox(connection: connection), maximumBatch: maximumBatch, notifier: notifier)
        readerPath = path
        readers = Mutex([])
    }

    /// Checks what the file is before anything is written, then migrates.
    static func prepare(_ db: SQLiteConnection, path: String, synchronous: Synchronous) throws {
        let version: Int64
        let application: Int64
        let tables: Int64
        do {
            // One snapshot: another process may be creating the schema right now.
            try db.execute("BEGIN")
            defer { try? db.execute("COMMIT") }
            version = try db.scalar("PRAGMA user_version") ?? 0
            application = try db.scalar("PRAGMA application_id") ?? 0
            tables = try db.scalar("SELECT count(*) FROM sqlite_master") ?? 0
        } catch let error as SQLiteError {
            throw StoreOpenError.damaged(path: path, reason: error.message)
        }
        if application != 0 && application != Int64(Schema.applicationID) {
            throw StoreOpenError.notAPerchDatabase(path: path)
        }
        if version > Int64(Schema.migrations.count) {
            throw StoreOpenError.newerSchema(path: path, found: Int(version), supported: Schema.migrations.count)
        }
        if application == 0 && version == 0 && tables > 0 { throw StoreOpenError.notAPerchDatabase(path: path) }
        do {
            try db.execute("PRAGMA journal_mode = WAL")
            try db.execute("PRAGMA synchronous = \(synchronous.rawValue)")
            try db.execute("PRAGMA foreign_keys = OFF")
            if version > 0 {
                // A damaged page shows here before any write does.
                let check = try db.query("PRAGMA quick_check(1)") { $0.text(0) }.first ?? "ok"
                guard check == "ok" else { throw StoreOpenError.damaged(path: path, reason: check) }
            }
            for index in Int(version)..<Schema.migrations.count {
                try db.execute("BEGIN IMMEDIATE")
                do {
                    // Another process (a second host, `perch send --local`) may have migrated since
                    // the version was read: check again under the write lock.
                    if (try db.scalar("PRAGMA user_version") ?? 0) > Int64(index) {
                        try db.execute("COMMIT")
                        continue
                    }
                    try db.execute(Schema.migrations[index])
                    try db.execute("PRAGMA user_version = \(index + 1)")
                    try db.execute("PRAGMA application_id = \(Schema.applicationID)")
                    try db.execute("COMMIT")
                } catch {
                    try? db.execute("ROLLBACK")
                    throw error
                }
            }
        } catch let error as SQLiteError {
            throw StoreOpenError.damaged(path: path, reason: error.message)
        }
    }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any ChatWriteTransaction) throws -> T) async throws
        -> T
    {
        try await withCheckedThrowingContinuation { continuation in
            writer.enqueue(body: body, continuation: continuation)
        }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any ChatReadTransaction) throws -> T) async throws -> T {
        let box = try checkoutReader()
        defer { readers.withLock { $0.append(box) } }
        let db = box.connection
        try db.run("BEGIN")
        defer { _ = try? db.run("COMMIT") }
        return try body(SQLiteTransaction(db, coder: box.coder))
    }

    private func checkoutReader() throws -> ConnectionBox {
        if let box = readers.withLock({ $0.popLast() }) { return box }
        guard !writer.isClosed else { throw SQLiteError(code: SQLITE_MISUSE, message: "the store is closed") }
        let connection = try SQLiteConnection(path: readerPath, readOnly: true)
        return ConnectionBox(connection: connection)
    }

    /// The newest committed event, read from the database: other processes (another host on the
    /// same file, the crash test's writer) commit too.
    public func latestEventSequence() async throws -> Int64 {
        let latest = try await read { tx in try (tx as? SQLiteTransaction)?.latestSequence() ?? 0 }
        notifier.advance(to: latest)
        return latest
    }

    /// Waits until an event after `seq` is committed in this process, the store closes, or
    /// `pollInterval` passes (so commits by other processes are seen too).
    public func waitForEvents(after seq: Int64) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.notifier.wait(after: seq) }
            group.addTask { try? await Task.sleep(for: self.pollInterval) }
            await group.next()
            group.cancelAll()
        }
    }

    /// How often a waiting consumer looks for commits made by other processes.
    public var pollInterval: Duration { .milliseconds(250) }

    public func close() async {
        writer.close()
        notifier.close()
        readers.withLock { $0.removeAll() }
    }

    /// The query plan SQLite chooses for a message page, for tests that check a page is read
    /// through an index, not by scanning the conversation.
    public func queryPlan(_ query: MessageQuery) async throws -> [String] {
        try await read { tx in
            guard let tx = tx as? SQLiteTransaction else { return [] }
            return try tx.plan(of: query)
        }
    }
}

extension SQLiteChatStore {
    /// The query plan of a threads-inbox page, for the test that asserts it reads O(limit) rows.
    public func inboxQueryPlan(byConversation: Bool) async throws -> [String] {
        try await read { tx in
            guard let tx = tx as? SQLiteTransaction else { return [] }
            return try tx.inboxPlan(byConversation: byConversation)
        }
    }
}

/// Why a database was refused at open. The file is left untouched.
public enum StoreOpenError: Error, CustomStringConvertible, Sendable {
    case cannotOpen(path: String, reason: String)
    case newerSchema(path: String, found: Int, supported: Int)
    case notAPerchDatabase(path: String)
    case damaged(path: String, reason: String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): return "cannot open the database \(path): \(reason)"
        case .newerSchema(let path, let found, let supported):
            return "the database \(path) was written by a newer Perch (schema \(found); this Perch reads up to "
                + "\(supported)); upgrade Perch — the file was not changed"
        case .notAPerchDatabase(let path):
            return "\(path) is an SQLite file, but not a Perch database; refusing to write to it"
        case .damaged(let path, let reason):
            return "the database \(path) is damaged (\(reason)); restore it from a backup — the file was not changed"
        }
    }
}

/// The single writer: a thread draining a queue of transaction bodies, many per commit.
final class Writer: Sendable {
    struct Job: @unchecked Sendable {
        // Runs on the writer thread only: the body, then the continuation after the commit.
        let run: (SQLiteTransaction) -> Void
        let finish: (Error?) -> Void
    }

    private let state: Mutex<(jobs: [Job], closed: Bool)>
    private let signal = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let maximumBatch: Int

    init(connection: ConnectionBox, maximumBatch: Int, notifier: EventNotifier) {
        state = Mutex((jobs: [], closed: false))
        self.maximumBatch = maximumBatch
        let thread = Thread { [self] in self.loop(connection, notifier: notifier) }
        thread.name = "perch-sqlite-writer"
        thread.start()
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    func enqueue<T: Sendable>(
        body: @escaping @Sendable (any ChatWriteTransaction) throws -> T,
        continuation: CheckedContinuation<T, Error>
    ) {
        let outcome = OutcomeBox<T>()
        let job = Job(
            run: { tx in
                let db = tx.db
                do {
                    try db.run("SAVEPOINT job")
                    do {
                        outcome.result = .success(try body(tx))
                        try db.run("RELEASE job")
                    } catch {
                        _ = try? db.run("ROLLBACK TO job")
                        _ = try? db.run("RELEASE job")
                        outcome.result = .failure(error)
                    }
                } catch {
                    outcome.result = .failure(error)
                }
            },
            finish: { commitError in
                if let commitError, case .success = outcome.result {
                    continuation.resume(throwing: commitError)
                } else {
                    continuation.resume(with: outcome.result ?? .failure(SQLiteError(code: 1, message: "not run")))
                }
            })
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted {
            signal.signal()
        } else {
            continuation.resume(throwing: SQLiteError(code: SQLITE_MISUSE, message: "the store is closed"))
        }
    }

    func close() {
        let wasOpen = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard wasOpen else { return }
        signal.signal()
        done.wait()
    }

    private func loop(_ box: ConnectionBox, notifier: EventNotifier) {
        let db = box.connection
        let coder = box.coder
        while true {
            signal.wait()
            while true {
                let (batch, closed) = state.withLock { state -> ([Job], Bool) in
                    let count = min(state.jobs.count, maximumBatch)
                    let batch = Array(state.jobs.prefix(count))
                    state.jobs.removeFirst(count)
                    return (batch, state.closed)
                }
                if batch.isEmpty {
                    if closed {
                        done.signal()
                        return
                    }
                    break
                }
                let tx = SQLiteTransaction(db, coder: coder)
                var commitError: Error?
                do {
                    try db.run("BEGIN IMMEDIATE")
                    for job in batch { job.run(tx) }
                    try db.run("COMMIT")
                } catch {
                    commitError = error
                    try? db.execute("ROLLBACK")
                }
                for job in batch { job.finish(commitError) }
                if commitError == nil, tx.lastEventSequence > 0 { notifier.advance(to: tx.lastEventSequence) }
            }
        }
    }
}

/// A body's result, written and read on the writer thread only.
final class OutcomeBox<T>: @unchecked Sendable {
    var result: Result<T, Error>?
}

/// Wakes consumers when events are committed.
final class EventNotifier: Sendable {
    private let state = Mutex<
        (latest: Int64, closed: Bool, next: Int, waiters: [Int: (Int64, CheckedContinuation<Void, Never>)])
    >(
        (0, false, 0, [:]))

    var latest: Int64 { state.withLock { $0.latest } }

    func advance(to seq: Int64) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.latest = max(state.latest, seq)
            let due = state.waiters.filter { $0.value.0 < state.latest }
            for key in due.keys { state.waiters[key] = nil }
            return due.map(\.value.1)
        }
        for continuation in ready { continuation.resume() }
    }

    func close() {
        let all = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closed = true
            defer { state.waiters.removeAll() }
            return state.waiters.values.map(\.1)
        }
        for continuation in all { continuation.resume() }
    }

    func wait(after seq: Int64) async {
        let id = state.withLock { state -> Int in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.closed || state.latest > seq || Task.isCancelled { return true }
                    state.waiters[id] = (seq, continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.1.resume()
        }
    }
}
