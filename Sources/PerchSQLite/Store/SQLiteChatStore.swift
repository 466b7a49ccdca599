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
    /// Each user's newest notification committed here, so live streams read the outbox only when
    /// it holds something new for them.
    private let watermarks = NotificationWatermarks()
    let checkpointer: Checkpointer
    /// Each `pollInterval`, finds other processes' commits (they are not announced here) and ends the
    /// waits for anyone's events.
    private let poller: PollTimer

    /// The writer connection's page cache (`PRAGMA cache_size`), in KiB.
    static let writerCacheKiB = 4_096

    /// Reader connections kept open between reads, at most. A burst of concurrent reads opens as
    /// many as it needs; those past this many are closed when their read ends, so their page caches
    /// (up to 2 MiB each) and statements go back once the burst has passed (a hundred clients
    /// reading at once no longer leave a hundred connections behind).
    static let idleReaderLimit = 16

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
        // back from the file at every send.
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
            cache: cache, memberships: memberships, watermarks: watermarks, checkpointer: checkpointer)
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
        writer.enqueue(body: body, callerGoesOn: callerGoesOn) { pending.fulfil($0) }
        return pending
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any ChatReadTransaction) throws -> T) async throws -> T {
        try reading(body)
    }

    /// A read transaction on a pooled reader connection, on this thread.
    func reading<T>(_ body: (SQLiteTransaction) throws -> T) throws -> T {
        let box = try checkoutReader()
        defer {
            readers.withLock { idle in
                if idle.count < Self.idleReaderLimit { idle.append(box) }
            }
        }
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

    /// The newest outbox row of `uid` this process committed while a stream of theirs watched (0:
    /// none).
    public func notifiedThrough(_ uid: String) -> Int64? { watermarks.latest(for: uid) }

    public func watchNotifications(of uid: String) { watermarks.watch(uid) }

    public func unwatchNotifications(of uid: String) { watermarks.unwatch(uid) }

    /// Reader connections open and idle now (at most ``idleReaderLimit``).
    var idleReaders: Int { readers.withLock { $0.count } }

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
