import CSQLite
import Dispatch
import Foundation
import PerchChat
import PerchLock
import PerchService

/// The chat store on SQLite: WAL, one writer thread with group commit, a pool of readers.
///
/// Writes queue up for the writer thread, which runs every queued body in one `BEGIN IMMEDIATE`
/// transaction: a body that throws rolls back alone (the batch runs again, each body in a savepoint
/// of its own), the others commit together, and each caller resumes only after the commit. Under
/// load this turns many small transactions into one fsync; idle, a write commits at once.
public final class SQLiteChatStore: ChatStore {
    public enum Synchronous: String, Sendable {
        case normal = "NORMAL"
        case full = "FULL"
    }

    /// The newest schema version this build writes.
    public static var schemaVersion: Int { Schema.migrations.count }

    public let path: String
    private let writer: Writer
    private let readers: Lock<[ConnectionBox]>
    private let readerPath: String
    let notifier = EventNotifier()
    /// Recent committed events, decoded: consumers read what was just written, or what another
    /// consumer just read, without parsing it again (every bot and every SSE session reads the
    /// same events).
    private let cache = EventCache(capacity: 16_384)
    /// Which groups each recent reader of events is in, so a page can be answered from `cache`.
    private let memberships = Memberships()
    let checkpointer: Checkpointer
    /// Each `pollInterval`, finds other processes' commits (they are not announced here) and ends the
    /// waits for anyone's events.
    private let poller: PollTimer

    /// The writer connection's page cache (`PRAGMA cache_size`), in KiB.
    static let writerCacheKiB = 4_096

    /// Opens (creating when absent) the database at `path`.
    /// - Throws: ``StoreOpenError`` for a newer schema, a file that is not a Perch database, or a
    ///   damaged file; the file is never modified in those cases.
    /// `checkpointFrames`: log frames not yet copied back after which a checkpoint runs (2,000
    /// frames of 2 KiB: the 4 MiB of SQLite's own automatic checkpoint; tests make it small).
    /// `pollInterval`: how often waiting consumers look for other processes' commits (at least 1 ms).
    /// `readAhead`: read an existing file from start to end before its check (``readAhead(_:)``);
    /// off only to measure what it saves.
    ///
    /// The check is skipped when the file is exactly as a store left it at a clean close
    /// (``CleanClose``), as e2fsck skips a file system unmounted cleanly: after a crash, a restore,
    /// a copy or any other change it runs.
    public init(
        path: String, synchronous: Synchronous = .normal, maximumBatch: Int = 512, checkpointFrames: Int32 = 2_000,
        pollInterval: Duration = .milliseconds(250), readAhead: Bool = true
    ) throws {
        self.path = path
        let closedCleanly = CleanClose.take(path)
        if readAhead, !closedCleanly { Self.readAhead(path) }
        // A zero or negative interval would make the timer fire without pause.
        self.pollInterval = max(pollInterval, .milliseconds(1))
        // A new file is its owner's alone (SQLite would make it 0644 less the umask); its log and
        // shared-memory files take its mode. An existing file keeps the mode it has.
        try? PrivateFile.createEmpty(path)
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: path, readOnly: false)
        } catch let error as SQLiteError {
            throw StoreOpenError.cannotOpen(path: path, reason: error.message)
        }
        // Processes opening one file together (a host and `perch send --local`) may find it locked
        // for a moment in steps SQLite does not retry (its busy handler is skipped where waiting
        // could deadlock): try again briefly before calling the file unusable.
        var checked = false
        for attempt in 1... {
            do {
                checked = try Self.prepare(connection, path: path, synchronous: synchronous, check: !closedCleanly)
                break
            } catch let error as SQLiteError
                where attempt < 40 && [SQLITE_BUSY, SQLITE_LOCKED].contains(error.code & 0xff)
            {
                usleep(50_000)
            } catch let error as SQLiteError {
                throw StoreOpenError.damaged(path: path, reason: error.message)
            }
        }
        checkedAtOpen = checked
        // Checkpoints (and their fsync) run on their own thread and connection, not in a commit.
        try connection.execute("PRAGMA wal_autocheckpoint = 0")
        // The writer's page cache holds 4 MiB (SQLite's default is 2): a send to a 1,000-member
        // group changes a leaf of the outbox's index per member, and at 2 MiB those leaves were read
        // back from the file at every send (BENCHMARKS.md, "Notification routing").
        try connection.execute("PRAGMA cache_size = -\(Self.writerCacheKiB)")
        checkpointer = try Checkpointer(path: path, synchronous: synchronous, threshold: checkpointFrames)
        checkpointer.watch(connection)
        let timer = DispatchSource.makeTimerSource(queue: .global())
        let interval = self.pollInterval.dispatchInterval
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(25))
        poller = PollTimer(source: timer)
        let latest = try connection.scalar("SELECT coalesce(max(seq), 0) FROM events") ?? 0
        notifier.advance(to: latest)
        writer = Writer(
            connection: ConnectionBox(connection: connection), maximumBatch: maximumBatch, notifier: notifier,
            cache: cache, memberships: memberships, checkpointer: checkpointer)
        readerPath = path
        readers = Lock([])
        // Each tick looks for events other processes committed (pages come from memory while
        // nothing is missing): when there are some, every consumer behind them looks. Then it wakes
        // the consumers waiting for anyone's events and those that asked to end at the tick (a bot
        // with a cursor to save). Any other consumer sleeps on through the ticks.
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            if let latest = try? self.reading({ try $0.latestSequence() }) { self.notifier.found(newest: latest) }
            self.notifier.tick()
        }
        timer.resume()
    }

    /// Reads the database file from start to end in large blocks, so that the check at open
    /// (`PRAGMA quick_check`, which visits every page in b-tree order, one random read each) finds
    /// its pages in the kernel's page cache. A 3 GB database just out of the cache took 67 s to
    /// check; read ahead first, 5.5 s to read and 2.4 s to check (BENCHMARKS.md, "Opening a large
    /// database"). A file larger than half the machine's memory is left alone: its first pages
    /// would leave the cache before the check reached them. Errors are ignored (the open that
    /// follows reports its own).
    static func readAhead(_ path: String) {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { Glibc.close(descriptor) }
        var status = stat()
        let memory = Int64(sysconf(Int32(_SC_PHYS_PAGES))) * Int64(sysconf(Int32(_SC_PAGESIZE)))
        guard fstat(descriptor, &status) == 0, status.st_size > 0, memory <= 0 || status.st_size <= memory / 2 else {
            return
        }
        _ = posix_fadvise(descriptor, 0, 0, POSIX_FADV_SEQUENTIAL)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while buffer.withUnsafeMutableBytes({ Glibc.read(descriptor, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// Checks what the file is before anything is written, then migrates. `check`: look at every
    /// page too (`PRAGMA quick_check`; always before a migration); whether it did (a new file has
    /// none). SQLite's errors come out as they are (the caller retries a locked file, and calls
    /// anything else damaged).
    static func prepare(_ db: SQLiteConnection, path: String, synchronous: Synchronous, check: Bool = true) throws
        -> Bool
    {
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
        }
        if application != 0 && application != Int64(Schema.applicationID) {
            throw StoreOpenError.notAPerchDatabase(path: path)
        }
        if version > Int64(Schema.migrations.count) {
            throw StoreOpenError.newerSchema(path: path, found: Int(version), supported: Schema.migrations.count)
        }
        if application == 0 && version == 0 && tables > 0 { throw StoreOpenError.notAPerchDatabase(path: path) }
        // Before the first write only: an existing file keeps the page size it was made with.
        if tables == 0 { try db.execute("PRAGMA page_size = \(Schema.pageSize)") }
        try db.execute("PRAGMA journal_mode = WAL")
        try db.execute("PRAGMA synchronous = \(synchronous.rawValue)")
        try db.execute("PRAGMA foreign_keys = OFF")
        let checks = version > 0 && (check || version < Int64(Schema.migrations.count))
        if checks {
            // A damaged page shows here before any write does.
            let result = try db.query("PRAGMA quick_check(1)") { $0.text(0) }.first ?? "ok"
            guard result == "ok" else { throw StoreOpenError.damaged(path: path, reason: result) }
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
        return checks
    }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any ChatWriteTransaction) throws -> T) async throws
        -> T
    {
        try await withCheckedThrowingContinuation { continuation in
            writer.enqueue(body: body) { continuation.resume(with: $0) }
        }
    }

    /// Bodies are queued for the one writer, which commits them in that order.
    public var submitsInOrder: Bool { true }

    public func submit<T: Sendable>(
        _ body: @escaping @Sendable (any ChatWriteTransaction) throws -> T, callerGoesOn: Bool
    ) -> PendingWrite<T> {
        let pending = PendingWrite<T>()
        writer.enqueue(body: body, inline: !callerGoesOn) { pending.fulfil($0) }
        return pending
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any ChatReadTransaction) throws -> T) async throws -> T {
        try reading(body)
    }

    /// A read transaction on a pooled reader connection, on this thread.
    private func reading<T>(_ body: (SQLiteTransaction) throws -> T) throws -> T {
        let box = try checkoutReader()
        defer { readers.withLock { $0.append(box) } }
        let db = box.connection
        try db.run("BEGIN")
        defer { _ = try? db.run("COMMIT") }
        return try body(SQLiteTransaction(db, coder: box.coder, cache: cache))
    }

    /// A user's events after `seq`. While every event after `seq` was committed by this process and
    /// is still in the cache (with its audience), the page is built there, with the user's groups
    /// as they are now, exactly as the SQL page would be; otherwise (another process committed, or
    /// the reader is more than the cache behind) it is read from the database.
    public func events(for uid: String, session: String?, after seq: Int64, limit: Int) async throws -> EventPage {
        // A closed store answers nothing, from memory either (a live stream then ends).
        guard !writer.isClosed else { throw StoreClosedError() }
        if let page = try memoryPage(for: uid, session: session, after: seq, limit: limit) { return page }
        return try reading { tx in try tx.events(for: uid, session: session, after: seq, limit: limit) }
    }

    func memoryPage(for uid: String, session: String?, after seq: Int64, limit: Int) throws -> EventPage? {
        // The newest sequence first, the membership generation second: a commit that changed
        // members moves the generation before its events count as committed (see `Writer.commit`).
        let latest = notifier.latest
        guard latest > seq else { return EventPage(events: [], scannedThrough: seq) }
        let generation = memberships.generation
        let groups: Set<String>
        if let known = memberships.groups(of: uid, generation: generation) {
            groups = known
        } else {
            groups = try reading { tx in try tx.groups(of: uid) }
            memberships.remember(groups, of: uid, generation: generation)
        }
        if let page = cache.page(for: uid, groups: groups, session: session, after: seq, through: latest, limit: limit)
        {
            return page
        }
        // Another process's event (or one the cache no longer holds): it may have changed members,
        // so every remembered membership is read again after this.
        memberships.invalidate()
        return nil
    }

    private func checkoutReader() throws -> ConnectionBox {
        if let box = readers.withLock({ $0.popLast() }) { return box }
        guard !writer.isClosed else { throw StoreClosedError() }
        let connection = try SQLiteConnection(path: readerPath, readOnly: true)
        return ConnectionBox(connection: connection)
    }

    /// The newest committed event, read from the database: other processes (another host on the
    /// same file, the crash test's writer) commit too.
    public func latestEventSequence() async throws -> Int64 {
        let latest = try await read { tx in try (tx as? SQLiteTransaction)?.latestSequence() ?? 0 }
        // Nobody is woken unless another process committed it: a readiness probe must not wake every
        // stream that slept through other rooms' events.
        notifier.found(newest: latest)
        return latest
    }

    /// Waits until an event after `seq` is committed (one `uid` may see, when given; another
    /// process's commits are found at the next poll tick, every `pollInterval`), or the store
    /// closes. A wait for anyone (`uid` nil), or `endingAtTick`, also ends at every poll tick.
    public func waitForEvents(
        after seq: Int64, for uid: String?, session: String?, ignoringOwnMessages: Bool, endingAtTick: Bool
    ) async {
        guard let uid else { return await notifier.wait(after: seq) }
        // The groups as remembered now (nil when not: then every commit wakes this wait).
        let generation = memberships.generation
        await notifier.wait(
            after: seq, for: uid, groups: memberships.groups(of: uid, generation: generation), generation: generation,
            session: session, ignoringOwnMessages: ignoringOwnMessages, endingAtTick: endingAtTick)
    }

    /// How often a waiting consumer looks for commits made by other processes.
    public let pollInterval: Duration

    /// How many consumers wait for events now.
    public var waitingConsumers: Int { notifier.waiting }

    public func close() async {
        poller.source.cancel()
        let first = writer.close()
        checkpointer.close()
        notifier.close()
        readers.withLock { $0.removeAll() }
        // Everything copied back into the file (a log left with frames, another process's reader
        // in the way, leaves no record: the next open checks).
        if first, writer.copyBackEverything() { CleanClose.record(path) }
    }

    /// Whether this store looked at every page of the file when it opened it (false: the file was as
    /// a store left it at a clean close, or new).
    public let checkedAtOpen: Bool

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

extension SQLiteChatStore {
    /// The Perch database at `path`, opened read-only (``verify(path:limit:)``, ``copy(path:to:)``).
    /// - Throws: ``StoreOpenError`` for no file or another kind of file; SQLite's errors as they are.
    static func openExisting(_ path: String) throws -> SQLiteConnection {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreOpenError.cannotOpen(path: path, reason: "no such file")
        }
        let db = try SQLiteConnection(path: path, readOnly: true)
        let application = try db.scalar("PRAGMA application_id") ?? 0
        guard application == Int64(Schema.applicationID) else { throw StoreOpenError.notAPerchDatabase(path: path) }
        return db
    }

    /// Every page and index entry of the database at `path`, checked read-only (`PRAGMA
    /// integrity_check`, more thorough than the check at open: each index against its table), beside
    /// a running host if there is one (it reads one snapshot; the host's log cannot start over
    /// meanwhile). Answers the problems SQLite found (none: whole), at most `limit`.
    /// - Throws: ``StoreOpenError`` when the file cannot be opened or is not a Perch database.
    public static func verify(path: String, limit: Int = 100) throws -> [String] {
        do {
            let db = try openExisting(path)
            try db.execute("BEGIN")
            defer { try? db.execute("COMMIT") }
            let found = try db.query("PRAGMA integrity_check(\(max(1, limit)))") { $0.text(0) }
            return found == ["ok"] ? [] : found
        } catch let error as SQLiteError {
            throw StoreOpenError.damaged(path: path, reason: error.message)
        }
    }
}

/// What ``SQLiteChatStore/copy(path:to:)`` wrote: the copy's messages, the uploaded files its
/// rows name (each to be copied beside it), and its size.
public struct StoreCopy: Sendable {
    public let messages: Int64
    public let media: [String]
    public let bytes: Int64
}

extension SQLiteChatStore {
    /// Writes a consistent copy of the database at `path` to `copy`, a new file (mode 0600), and
    /// checks it: `VACUUM INTO` reads one snapshot in one read transaction, so a host may go on
    /// committing meanwhile (its checkpoints copy back only what the snapshot no longer needs,
    /// and its log grows until the copy is done). The copy is compact, holds everything committed
    /// when it began, is flushed to the disk, and is checked page by page before this returns.
    /// - Throws: ``StoreOpenError`` (the source missing, not a Perch database, damaged; the copy
    ///   already there or not writable). A failed copy leaves nothing at `copy`.
    public static func copy(path: String, to copy: String) throws -> StoreCopy {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreOpenError.cannotOpen(path: path, reason: "no such file")
        }
        // SQLite takes an empty file as the place to write; made here, the copy is private.
        do {
            try PrivateFile.createEmpty(copy)
        } catch {
            throw StoreOpenError.cannotWrite(path: copy, reason: String(cString: strerror(error.code)))
        }
        var done = false
        defer {
            if !done { for suffix in ["", "-journal", "-wal", "-shm"] { unlink(copy + suffix) } }
        }
        do {
            _ = try openExisting(path).run("VACUUM INTO ?", [.text(copy)])
        } catch let error as SQLiteError {
            switch error.code & 0xff {
            case SQLITE_CORRUPT, SQLITE_NOTADB: throw StoreOpenError.damaged(path: path, reason: error.message)
            // Writing the copy: its disk, not the database.
            case SQLITE_FULL, SQLITE_IOERR: throw StoreOpenError.cannotWrite(path: copy, reason: error.message)
            default: throw StoreOpenError.cannotOpen(path: path, reason: error.message)
            }
        }
        let result: StoreCopy
        do {
            let written = try SQLiteConnection(path: copy, readOnly: true)
            let found = try written.query("PRAGMA quick_check(10)") { $0.text(0) }
            guard found == ["ok"] else {
                throw StoreOpenError.damaged(path: copy, reason: found.joined(separator: "; "))
            }
            let messages = try written.scalar("SELECT count(*) FROM messages") ?? 0
            let media = try written.query("SELECT id FROM media ORDER BY id") { $0.text(0) }
            let pages = try written.scalar("PRAGMA page_count") ?? 0
            let pageSize = try written.scalar("PRAGMA page_size") ?? 0
            result = StoreCopy(messages: messages, media: media, bytes: pages * pageSize)
        } catch let error as SQLiteError {
            throw StoreOpenError.damaged(path: copy, reason: error.message)
        }
        let descriptor = Glibc.open(copy, O_RDONLY | O_CLOEXEC)
        defer { if descriptor >= 0 { Glibc.close(descriptor) } }
        guard descriptor >= 0, fsync(descriptor) == 0 else {
            throw StoreOpenError.cannotWrite(path: copy, reason: String(cString: strerror(errno)))
        }
        done = true
        return result
    }
}

/// The record, beside a database (`<file>-closed`), that its last store closed cleanly: its log
/// copied back and emptied, every page checked at that store's open (or trusted through such a
/// record). It holds the file's device, inode, size and modification and change times; any write
/// to the file since (a host, `perch send --local`, a copy put in its place, a byte changed by
/// hand: even `touch -r` cannot set the change time back) or frames in its log make it stale, and
/// the next open checks every page. An open takes the record away before anything is written, so
/// a crash leaves none.
enum CleanClose {
    static func recordPath(_ database: String) -> String { database + "-closed" }

    /// The file as it is now, with an empty or absent log; nil otherwise.
    static func describe(_ database: String) -> String? {
        var file = stat()
        guard stat(database, &file) == 0 else { return nil }
        var log = stat()
        if stat(database + "-wal", &log) == 0, log.st_size > 0 { return nil }
        return [
            "\(file.st_dev)", "\(file.st_ino)", "\(file.st_size)", "\(file.st_mtim.tv_sec).\(file.st_mtim.tv_nsec)",
            "\(file.st_ctim.tv_sec).\(file.st_ctim.tv_nsec)",
        ].joined(separator: " ")
    }

    /// Records the file as it is now (a clean close).
    static func record(_ database: String) {
        guard let now = describe(database) else { return }
        try? (now + "\n").write(toFile: recordPath(database), atomically: true, encoding: .utf8)
    }

    /// Whether the file is exactly as recorded at its last clean close; the record is taken away
    /// either way (the caller is about to write).
    static func take(_ database: String) -> Bool {
        let path = recordPath(database)
        let recorded = try? String(contentsOfFile: path, encoding: .utf8)
        unlink(path)
        guard let recorded, let now = describe(database) else { return false }
        return recorded == now + "\n"
    }
}

/// Why a database was refused at open (or could not be copied). The file is left untouched.
public enum StoreOpenError: Error, CustomStringConvertible, Sendable {
    case cannotOpen(path: String, reason: String)
    /// A copy's file (``SQLiteChatStore/copy(path:to:)``) could not be written.
    case cannotWrite(path: String, reason: String)
    case newerSchema(path: String, found: Int, supported: Int)
    case notAPerchDatabase(path: String)
    case damaged(path: String, reason: String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): return "cannot open the database \(path): \(reason)"
        case .cannotWrite(let path, let reason): return "cannot write \(path): \(reason)"
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
        memberships: Memberships, checkpointer: Checkpointer
    ) {
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

    /// Queues `body` (or, when the writer is idle and `inline`, commits it on this thread before
    /// returning: a caller that waits for its commit anyway pays no thread hand-off); `complete`
    /// gets its result after the commit. A caller that goes on meanwhile (`inline` false: queued
    /// sends) never runs the commit itself, so its work and the commit run on two cores.
    func enqueue<T: Sendable>(
        body: @escaping @Sendable (any ChatWriteTransaction) throws -> T, inline: Bool = true,
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
            guard inline else {
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
            // changed so far (a batch of sends to a 1,000-member group spent 78% of its time there).
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
        // In this order: remembered memberships go stale, then the events enter the cache, then
        // they count as committed (readers build pages from memory on that order).
        if commitError == nil {
            if tx.changedMembers { memberships.invalidate() }
            cache.insert(tx.appended)
            if tx.prunedEvents > 0 { cache.forget(through: tx.prunedEvents) }
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

/// Wakes consumers when events are committed.
final class EventNotifier: Sendable {
    /// A consumer waiting for an event after `after`; `uid` is whose events it reads (nil: any), and
    /// `groups` the groups that user was in, as remembered in membership generation `generation`
    /// when the wait began (nil: not known). It reads them as `session` (events left out for that
    /// session are not its), and, when `ignoresOwnMessages` (a bot), never events whose message its
    /// user sent. `endsAtTick`: the poll tick wakes it too (always, for a wait for anyone).
    final class Waiter {
        let after: Int64
        let uid: String?
        let groups: Set<String>?
        let generation: Int
        let session: String?
        let ignoresOwnMessages: Bool
        let endsAtTick: Bool
        let continuation: CheckedContinuation<Void, Never>

        init(
            after: Int64, uid: String?, groups: Set<String>?, generation: Int, session: String? = nil,
            ignoresOwnMessages: Bool = false, endsAtTick: Bool = false, continuation: CheckedContinuation<Void, Never>
        ) {
            self.after = after
            self.uid = uid
            self.groups = groups
            self.generation = generation
            self.session = session
            self.ignoresOwnMessages = ignoresOwnMessages
            self.endsAtTick = endsAtTick || uid == nil
            self.continuation = continuation
        }

        /// Whether the waiter is found through the index (its user's events, its groups'), rather
        /// than looked at by every commit.
        var isIndexed: Bool { uid != nil && groups != nil }

        /// Whether some events of its user's or groups' are not the waiter's (its session's, its
        /// own messages): a commit then looks at the events themselves.
        var isFiltered: Bool { session != nil || ignoresOwnMessages }

        /// Whether the waiter reads `entry`, whose audience is `audience` (an unindexed waiter reads
        /// everything).
        func reads(_ entry: CachedEvent, audience: EventAudience) -> Bool {
            guard let uid, let groups else { return true }
            guard audience.users.contains(uid) || audience.group.map(groups.contains) == true else { return false }
            if let session, audience.excludedSession == session { return false }
            if ignoresOwnMessages, entry.event.author == uid { return false }
            return true
        }
    }

    /// The waiters under one key of the index: one held inline (the usual case: a user's one bot
    /// or stream), more in a set. A set for every key was made at every wait and freed at its
    /// wake: several allocations a round trip.
    enum WaiterIDs: Sequence {
        case one(Int)
        case many(Set<Int>)

        var count: Int {
            switch self {
            case .one: return 1
            case .many(let ids): return ids.count
            }
        }

        mutating func insert(_ id: Int) {
            switch self {
            case .one(let existing):
                if existing != id { self = .many([existing, id]) }
            case .many(var ids):
                self = .one(id)  // lets go of the set, so the insert does not copy it
                ids.insert(id)
                self = .many(ids)
            }
        }

        /// Removes `id`; false when no waiter is left under the key.
        mutating func remove(_ id: Int) -> Bool {
            switch self {
            case .one(let existing):
                return existing != id
            case .many(var ids):
                self = .one(id)
                ids.remove(id)
                if ids.count == 1, let last = ids.first {
                    self = .one(last)
                } else {
                    self = .many(ids)
                }
                return !ids.isEmpty
            }
        }

        struct Iterator: IteratorProtocol {
            var one: Int?
            var many: Set<Int>.Iterator?

            mutating func next() -> Int? {
                if let id = one {
                    one = nil
                    return id
                }
                return many?.next()
            }
        }

        func makeIterator() -> Iterator {
            switch self {
            case .one(let id): return Iterator(one: id, many: nil)
            case .many(let ids): return Iterator(one: nil, many: ids.makeIterator())
            }
        }
    }

    /// The waiters, and an index of them, so a commit looks only at those its events may concern.
    private struct State {
        var latest: Int64 = 0
        var closed = false
        var next = 0
        var waiters: [Int: Waiter] = [:]
        /// Indexed waiters by user and by group, and how many there are of each membership
        /// generation their groups are from (those of an older one are found by looking at every
        /// waiter, once after a membership change: ids by generation put every waiter of the host
        /// under one key, a set made and copied at every wait).
        var byUser: [String: WaiterIDs] = [:]
        var byGroup: [String: WaiterIDs] = [:]
        var generations: [Int: Int] = [:]
        /// Waits for anyone's events, and waiters whose groups are not known: every commit wakes them.
        var unindexed: Set<Int> = []
        /// Bounds of the waiters' `after`, kept loose: a removal does not tighten them; a look at
        /// every waiter does.
        var lowestAfter = Int64.max
        var highestAfter = Int64.min
        var passedOver = 0
        var sweeps = 0
        /// The newest sequence of a commit of this process's writer, once it is about to commit.
        var committing: Int64 = 0

        mutating func insert(_ waiter: Waiter, as id: Int) {
            waiters[id] = waiter
            lowestAfter = min(lowestAfter, waiter.after)
            highestAfter = max(highestAfter, waiter.after)
            guard waiter.isIndexed, let uid = waiter.uid, let groups = waiter.groups else {
                unindexed.insert(id)
                return
            }
            Self.add(id, under: uid, to: &byUser)
            for group in groups { Self.add(id, under: group, to: &byGroup) }
            generations[waiter.generation, default: 0] += 1
        }

        mutating func remove(_ id: Int) -> Waiter? {
            guard let waiter = waiters.removeValue(forKey: id) else { return nil }
            guard waiter.isIndexed, let uid = waiter.uid, let groups = waiter.groups else {
                unindexed.remove(id)
                return waiter
            }
            Self.remove(id, under: uid, from: &byUser)
            for group in groups { Self.remove(id, under: group, from: &byGroup) }
            if let count = generations[waiter.generation], count > 1 {
                generations[waiter.generation] = count - 1
            } else {
                generations.removeValue(forKey: waiter.generation)
            }
            return waiter
        }

        static func add<Key: Hashable>(_ id: Int, under key: Key, to index: inout [Key: WaiterIDs]) {
            // Not `index[key]?.insert(id)`: written so, it measured 22 more allocations a round
            // trip (scripts/bench-allocations.py).
            if index[key] == nil {
                index[key] = .one(id)
            } else {
                index[key]!.insert(id)
            }
        }

        static func remove<Key: Hashable>(_ id: Int, under key: Key, from index: inout [Key: WaiterIDs]) {
            guard var ids = index.removeValue(forKey: key) else { return }
            if ids.remove(id) { index[key] = ids }
        }

        /// Recomputes the bounds of `after` from every waiter.
        mutating func tightenBounds() {
            lowestAfter = waiters.values.lazy.map(\.after).min() ?? .max
            highestAfter = waiters.values.lazy.map(\.after).max() ?? .min
        }
    }

    private let state = Lock(State())

    var latest: Int64 { state.withLock { $0.latest } }

    /// How many times a commit left a waiter asleep because none of its events were the waiter's.
    var passedOver: Int { state.withLock { $0.passedOver } }

    /// How many times waiters were resumed by a rule other than a commit of this process (the poll
    /// tick, a commit of another process, close; tests).
    var sweeps: Int { state.withLock { $0.sweeps } }

    /// How many consumers are waiting.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// How many entries the index holds (tests: none once nobody waits).
    var indexed: Int {
        state.withLock { state in
            let named = [state.byUser, state.byGroup].reduce(0) { $0 + $1.values.reduce(0) { $0 + $1.count } }
            return state.unindexed.count + named + state.generations.values.reduce(0, +)
        }
    }

    /// Wakes every waiter behind `seq` (events whose audiences are not known here: another
    /// process's, or the newest at start).
    func advance(to seq: Int64) {
        resume(raisingLatestTo: seq) { waiter, latest in waiter.after < latest }
    }

    /// The newest sequence read from the database: when it is newer than this process knows, another
    /// process committed it (its audiences are not known here), so every waiter behind it is woken;
    /// otherwise nobody is. A sequence of this process's commit in flight (``willCommit(through:)``)
    /// is known: its waiters are woken by that commit, from its audiences, once it is published.
    /// (Taken for another process's, a commit read between SQLite's `COMMIT` and its publication woke
    /// every waiting consumer of the host, and made the remembered memberships look stale.)
    func found(newest seq: Int64) {
        guard state.withLock({ seq > max($0.latest, $0.committing) }) else { return }
        advance(to: seq)
    }

    /// This process's writer is about to commit events up to `seq` (their rows are visible to other
    /// connections from its `COMMIT` on, before the commit is published here).
    func willCommit(through seq: Int64) {
        state.withLock { $0.committing = max($0.committing, seq) }
    }

    /// The writer's commit failed: its sequences are not this process's (another may reuse them).
    func commitFailed() {
        state.withLock { $0.committing = $0.latest }
    }

    /// After this process committed `events` (in sequence order, each with its audience): wakes
    /// only the waiters some of those events are for, by the audience's users and the groups the
    /// waiter's user was in when it began waiting. Whoever cannot be ruled out is woken: a waiter
    /// for any user, one whose groups were not known, one whose groups are from an older membership
    /// `generation` (a commit that changed members starts a new one, before this), one already
    /// behind these events. A waiter left asleep reads past these events when something of its own
    /// comes, or once it is `maximumLag` events behind. With many consumers (a stream per connected
    /// person, a bot per room), a message wakes its conversation's, not all of them, and the commit
    /// looks only at those (through the index), not at every waiter.
    func advance(to seq: Int64, committed events: [CachedEvent], generation: Int) {
        guard let first = events.first?.event.seq else { return advance(to: seq) }
        var groups: Set<String> = []
        var users: Set<String> = []
        for entry in events {
            guard let audience = entry.audience else { return advance(to: seq) }
            if let group = audience.group { groups.insert(group) }
            users.formUnion(audience.users)
        }
        // A few events (a live conversation's commits) are looked at one by one for the waiters
        // that leave some of their user's events out; a large batch wakes them by user and group.
        let examined = events.count <= Self.examinedBatch
        /// Whether a waiter these events name (by user or group) is to be woken.
        func wakes(_ waiter: Waiter) -> Bool {
            guard examined, waiter.isFiltered else { return true }
            return events.contains { entry in entry.audience.map { waiter.reads(entry, audience: $0) } ?? true }
        }
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.latest = max(state.latest, seq)
            let latest = state.latest
            // The index answers when no waiter can be past the first of these events or too far
            // behind; otherwise every waiter is looked at (rare: a consumer ahead of this process's
            // newest event, or one asleep through `maximumLag` events), which tightens the bounds.
            guard state.highestAfter < first, latest - state.lowestAfter <= Self.maximumLag else {
                var passedOver = 0
                let ready = Self.take(from: &state) { waiter in
                    guard waiter.after < latest else { return false }
                    guard waiter.isIndexed, let uid = waiter.uid, let known = waiter.groups, waiter.after < first,
                        latest - waiter.after <= Self.maximumLag, waiter.generation == generation
                    else { return true }
                    if users.contains(uid) || groups.contains(where: known.contains), wakes(waiter) { return true }
                    passedOver += 1
                    return false
                }
                state.passedOver += passedOver
                state.tightenBounds()
                return ready
            }
            // Those who cannot be ruled out, then those the events name (by user and group), a
            // waiter already taken skipped: sets of ids gathered, filtered and joined were several
            // allocations a commit.
            var picked = Array(state.unindexed)
            if state.generations.keys.contains(where: { $0 != generation }) {
                picked += state.waiters.compactMap { id, waiter in
                    waiter.isIndexed && waiter.generation != generation ? id : nil
                }
            }
            let unconditional = picked.count
            for uid in users { if let ids = state.byUser[uid] { picked.append(contentsOf: ids) } }
            for group in groups { if let ids = state.byGroup[group] { picked.append(contentsOf: ids) } }
            let waiting = state.waiters.count
            var ready: [CheckedContinuation<Void, Never>] = []
            ready.reserveCapacity(picked.count)
            for (index, id) in picked.enumerated() {
                guard let waiter = state.waiters[id], index < unconditional || wakes(waiter) else { continue }
                _ = state.remove(id)
                ready.append(waiter.continuation)
            }
            state.passedOver += waiting - ready.count
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// The largest commit whose events are looked at one by one for the waiters that leave some of
    /// their user's events out.
    static let examinedBatch = 16

    /// Resumes the waiters for anyone's events and those that end at the poll tick.
    func tick() {
        resume { waiter, _ in waiter.endsAtTick }
    }

    /// How far behind the newest event a waiter may sleep: past this it is woken to move its cursor,
    /// so the events it slept through are still in the decoded-event cache (16,384) when it reads.
    static let maximumLag: Int64 = 4_096

    /// Resumes every waiter (they look again).
    func wakeAll() {
        resume { _, _ in true }
    }

    /// Raises the newest sequence to `seq` (when given), takes the waiters `wakes` picks (it sees
    /// each waiter and the newest sequence, under the lock) and resumes them outside the lock.
    private func resume(raisingLatestTo seq: Int64? = nil, where wakes: (Waiter, Int64) -> Bool) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.sweeps += 1
            if let seq { state.latest = max(state.latest, seq) }
            let latest = state.latest
            return Self.take(from: &state) { wakes($0, latest) }
        }
        for continuation in ready { continuation.resume() }
    }

    /// Removes the waiters `wakes` picks, looking at every one, and returns their continuations.
    private static func take(from state: inout State, where wakes: (Waiter) -> Bool)
        -> [CheckedContinuation<Void, Never>]
    {
        // Removed after the loop: removing while iterating would copy the whole table.
        let picked = state.waiters.compactMap { key, waiter in wakes(waiter) ? key : nil }
        return picked.compactMap { state.remove($0)?.continuation }
    }

    /// Resumes every waiter; later waits return at once.
    func close() {
        state.withLock { $0.closed = true }
        wakeAll()
    }

    /// Returns once an event after `seq` may be there for `uid` (nil: for anyone, and at every
    /// ``tick()`` too), at close, or when the task is cancelled. `groups`: the groups `uid` is in, as
    /// remembered in membership generation `generation` (nil when not known: every commit wakes it).
    /// `session` and `ignoringOwnMessages`: which of the user's events are not the waiter's;
    /// `endingAtTick`: the tick ends it too (``Waiter``).
    func wait(
        after seq: Int64, for uid: String? = nil, groups: Set<String>? = nil, generation: Int = 0,
        session: String? = nil, ignoringOwnMessages: Bool = false, endingAtTick: Bool = false
    ) async {
        let id = state.withLock { state -> Int in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.closed || state.latest > seq || Task.isCancelled { return true }
                    state.insert(
                        Waiter(
                            after: seq, uid: uid, groups: groups, generation: generation, session: session,
                            ignoresOwnMessages: ignoringOwnMessages, endsAtTick: endingAtTick,
                            continuation: continuation),
                        as: id)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.remove(id) }
            waiter?.continuation.resume()
        }
    }
}

/// Committed events by sequence, decoded (a ring: slot `seq % capacity`, so it holds at most the
/// last `capacity`). Only committed events enter it (from the writer after the commit, or from a
/// reader that decoded one), and an event never changes once written, so a hit is always right.
final class EventCache: Sendable {
    /// The slots, each entry's parts (event, sequence, audience, size) in arrays of their own: a page
    /// looks at thousands of slots' sequences and audiences, and reading them from whole entries
    /// copied each event (its message and all), about a microsecond a slot; and it copies only the
    /// events it returns, not their audiences too.
    private struct Ring {
        var events: [ChatEvent?]
        var seqs: [Int64]
        var audiences: [EventAudience?]
        var sizes: [Int]
        /// The sizes of the entries held.
        var bytes = 0
        /// Where the budget's sweep goes on from: slots follow sequences, so going round from the
        /// slot after the last one it cleared takes the oldest first.
        var hand = 0

        /// The slot of event `seq` (sequences start at 1, and slot follows slot).
        func slot(of seq: Int64) -> Int { Int(seq % Int64(seqs.count)) }

        /// The slot holding event `seq`, if it is here.
        func slot(holding seq: Int64) -> Int? {
            let slot = slot(of: seq)
            return seqs[slot] == seq ? slot : nil
        }

        mutating func clear(_ slot: Int) {
            bytes -= sizes[slot]
            events[slot] = nil
            seqs[slot] = 0
            audiences[slot] = nil
            sizes[slot] = 0
        }
    }

    private let ring: Lock<Ring>
    let capacity: Int
    /// The bytes of events held at most (``CachedEvent/size``): past it the oldest go, as if the
    /// ring were shorter. Events of a few hundred bytes never reach it; large messages (a text of
    /// 64 KiB, the default limit) would otherwise hold a gigabyte in 16,384 slots.
    let budget: Int

    init(capacity: Int, budget: Int = 32 << 20) {
        self.capacity = capacity
        self.budget = budget
        ring = Lock(
            Ring(
                events: Array(repeating: nil, count: capacity), seqs: Array(repeating: 0, count: capacity),
                audiences: Array(repeating: nil, count: capacity), sizes: Array(repeating: 0, count: capacity)))
    }

    /// Keeps `entries`; an entry never replaces one of the same event that knows its audience.
    func insert(_ entries: [CachedEvent]) {
        guard !entries.isEmpty else { return }
        ring.withLock { ring in
            for entry in entries {
                let seq = entry.event.seq
                let slot = ring.slot(of: seq)
                if entry.audience == nil, ring.seqs[slot] == seq { continue }
                // An empty slot's size is 0; a taken one gives its bytes back.
                ring.bytes += entry.size - ring.sizes[slot]
                ring.events[slot] = entry.event
                ring.seqs[slot] = seq
                ring.audiences[slot] = entry.audience
                ring.sizes[slot] = entry.size
            }
            // Over the budget, the oldest go first, as if the ring were shorter.
            while ring.bytes > budget {
                if ring.seqs[ring.hand] != 0 { ring.clear(ring.hand) }
                ring.hand = (ring.hand + 1) % capacity
            }
        }
    }

    /// The bytes of the events held (tests).
    var bytes: Int { ring.withLock { $0.bytes } }

    /// Forgets the events up to `seq` (the retention pruned them): a page after one of them then
    /// comes from the database, which says what the reader missed.
    func forget(through seq: Int64) {
        ring.withLock { ring in
            for slot in ring.seqs.indices where ring.seqs[slot] != 0 && ring.seqs[slot] <= seq { ring.clear(slot) }
        }
    }

    func entry(_ seq: Int64) -> CachedEvent? {
        ring.withLock { ring in
            guard let slot = ring.slot(holding: seq), let event = ring.events[slot] else { return nil }
            return CachedEvent(event: event, audience: ring.audiences[slot], size: ring.sizes[slot])
        }
    }

    func event(_ seq: Int64) -> ChatEvent? {
        ring.withLock { ring in ring.slot(holding: seq).flatMap { ring.events[$0] } }
    }

    /// The page of `uid`'s events after `seq` through `latest` (`uid` in `groups`, leaving out those
    /// excluded for `session`), read under one lock, looking only at each slot's sequence and
    /// audience; only the page's events are copied. nil when an event of the range is not here or
    /// has no audience (another process's).
    func page(
        for uid: String, groups: Set<String>, session: String?, after seq: Int64, through latest: Int64, limit: Int
    ) -> EventPage? {
        ring.withLock { ring in
            var page = EventPage(events: [], scannedThrough: seq)
            var visible = 0
            var next = seq + 1
            while next <= latest {
                let slot = ring.slot(of: next)
                // A slot's sequence is set only with its entry (sequences start at 1).
                guard ring.seqs[slot] == next, let audience = ring.audiences[slot] else { return nil }
                if audience.group.map(groups.contains) ?? false || audience.users.contains(uid) {
                    visible += 1
                    if audience.excludedSession == nil || audience.excludedSession != session,
                        let event = ring.events[slot]
                    {
                        page.events.append(event)
                    }
                    if visible == limit {
                        page.scannedThrough = next
                        page.isFull = true
                        return page
                    }
                }
                next += 1
            }
            page.scannedThrough = latest
            return page
        }
    }
}

/// A committed event with its audience; the audience is known when this process committed it.
struct CachedEvent: Sendable {
    var event: ChatEvent
    var audience: EventAudience?
    /// The bytes of its JSON: about what the decoded event holds in memory (its text, its data).
    var size = 0
}

/// The groups of recent readers of events, valid for one generation: a commit that adds, changes
/// or removes a member starts a new one (and so does another process, whose commits the poll
/// finds: pages then come from the database until the cache holds every event again).
final class Memberships: Sendable {
    private let state = Lock((generation: 0, groups: [String: (generation: Int, groups: Set<String>)]()))

    var generation: Int { state.withLock { $0.generation } }

    func groups(of uid: String, generation: Int) -> Set<String>? {
        state.withLock { state in
            guard state.generation == generation, let known = state.groups[uid], known.generation == generation
            else { return nil }
            return known.groups
        }
    }

    /// Keeps `groups`, read in a transaction that began after `generation` was current.
    func remember(_ groups: Set<String>, of uid: String, generation: Int) {
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.groups.count >= 4_096 { state.groups.removeAll(keepingCapacity: true) }
            state.groups[uid] = (generation, groups)
        }
    }

    func invalidate() {
        state.withLock { state in
            state.generation += 1
            state.groups.removeAll(keepingCapacity: true)
        }
    }
}

/// Copies the write-ahead log back into the database on its own thread and connection, so commits
/// rarely wait for a checkpoint's fsync. The writer's connection reports the log's size after
/// each commit (`sqlite3_wal_hook`); past `threshold` frames (4 MiB by default, SQLite's own
/// automatic checkpoint size) not yet copied back, this thread runs a PASSIVE checkpoint, which
/// never blocks the writer or readers. What counts is the frames written since the last checkpoint
/// copied, not the log's length: otherwise every commit would ask for another checkpoint (two
/// fsyncs) while readers hold the log.
///
/// SQLite starts the log over only when a write transaction begins with every frame copied back,
/// which a checkpoint on another thread never achieves under steady load (commits land while it
/// copies): the log grew without end (240 MB in 6,000 round trips), and each commit then extended
/// the file. So once the log is `restartFactor` thresholds long, the writer copies back the few
/// frames left itself, between two batches (`catchUpIfDue`), and its next transaction starts the
/// log over when no reader still reads from it; if one does, it tries again a quarter threshold
/// later. One last checkpoint runs at close.
final class Checkpointer: Sendable {
    private struct State {
        var closed = false
        var pending = false
        /// Frames of the current log already copied back by a checkpoint.
        var copied: Int32 = 0
        /// The log's length at the last commit; a shorter log means it was restarted.
        var frames: Int32 = 0
        /// The log's length when the last checkpoint was asked for: while a reader keeps old frames
        /// from being copied, the next one waits until the log has grown by a quarter threshold.
        var asked: Int32 = 0
        /// Counts restarts of the log, so a checkpoint that finishes after one does not count
        /// frames of the old log as copied.
        var generation = 0
        var checkpoints = 0
        /// The log's length when the writer last copied back the rest itself.
        var caughtUp: Int32 = 0
    }

    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let state = Lock(State())
    let threshold: Int32

    init(path: String, synchronous: SQLiteChatStore.Synchronous, threshold: Int32 = 2_000) throws {
        self.threshold = threshold
        let box = ConnectionBox(connection: try SQLiteConnection(path: path, readOnly: false))
        try box.connection.execute("PRAGMA synchronous = \(synchronous.rawValue)")
        try box.connection.execute("PRAGMA wal_autocheckpoint = 0")
        Thread.detachNewThread { [self] in
            nameCurrentThread("perch-checkpt")
            while true {
                wake.wait()
                let (closed, generation) = state.withLock { state in
                    state.pending = false
                    return (state.closed, state.generation)
                }
                var log: Int32 = 0
                var copied: Int32 = 0
                let status = sqlite3_wal_checkpoint_v2(
                    box.connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
                state.withLock { state in
                    state.checkpoints += 1
                    if status == SQLITE_OK && state.generation == generation {
                        state.copied = max(state.copied, copied)
                    }
                }
                if closed { break }
            }
            done.signal()
        }
    }

    /// Hooks the writer's connection: its commits tell this checkpointer how long the log is.
    func watch(_ connection: SQLiteConnection) {
        sqlite3_wal_hook(
            connection.handle,
            { context, _, _, frames in
                let checkpointer = Unmanaged<Checkpointer>.fromOpaque(context!).takeUnretainedValue()
                checkpointer.committed(frames: frames)
                return SQLITE_OK
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// A commit left the log `frames` long: asks for a checkpoint (once, however often asked before
    /// it runs) when `threshold` frames or more are not copied back yet.
    func committed(frames: Int32) {
        let wakeUp = state.withLock { state -> Bool in
            if frames < state.frames {
                state.generation += 1
                state.copied = 0
                state.asked = 0
                state.caughtUp = 0
            }
            state.frames = frames
            guard !state.closed, !state.pending, frames - state.copied >= threshold,
                frames - state.asked >= threshold / 4
            else { return false }
            state.pending = true
            state.asked = frames
            return true
        }
        if wakeUp { wake.signal() }
    }

    /// How many checkpoints have run (tests).
    var checkpoints: Int { state.withLock { $0.checkpoints } }

    /// How many times the log has started over (tests).
    var restarts: Int { state.withLock { $0.generation } }

    /// How long the log may grow, in thresholds, before the writer copies back the rest itself.
    static let restartFactor: Int32 = 4

    /// Run by the writer on its connection before a batch (outside a transaction): when the log is
    /// long, copies back what is left (a PASSIVE checkpoint: the writer's batch waits for it, a
    /// reader never does), so the batch's transaction can start the log over.
    func catchUpIfDue(_ connection: SQLiteConnection) {
        let due = state.withLock { state -> Int? in
            guard !state.closed, state.frames >= threshold * Self.restartFactor,
                state.frames - state.caughtUp >= threshold / 4
            else { return nil }
            state.caughtUp = state.frames
            return state.generation
        }
        guard let generation = due else { return }
        var log: Int32 = 0
        var copied: Int32 = 0
        let status = sqlite3_wal_checkpoint_v2(connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
        state.withLock { state in
            if status == SQLITE_OK && state.generation == generation { state.copied = max(state.copied, copied) }
        }
    }

    func close() {
        let first = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        wake.signal()
        done.wait()
    }
}

/// The poll tick's timer; Dispatch sources are thread-safe.
struct PollTimer: @unchecked Sendable {
    let source: DispatchSourceTimer
}
