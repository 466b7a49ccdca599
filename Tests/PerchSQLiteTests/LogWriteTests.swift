import CSQLite
import CSQLiteVFS
import Foundation
import PerchTestSupport
import Testing

@testable import PerchSQLite

/// The "perch" VFS writes each commit's log frames in one call, and a commit is in the file when it
/// returns: SQLite's own VFS, opened on the same file, reads it, and the database stays whole
/// through transactions larger than the buffer and than the page cache, committed or rolled back.
@Suite struct LogWriteTests {
    private let directory: URL
    private let path: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-vfs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("t.sqlite").path
    }

    private func cleanUp() { try? FileManager.default.removeItem(at: directory) }

    /// A writer through the "perch" VFS, in WAL mode, with a table and three indexes (a row changes
    /// four pages, as a message changes its table and indexes).
    private func openWriter(synchronous: String = "NORMAL") throws -> SQLiteConnection {
        let writer = try SQLiteConnection(path: path, readOnly: false)
        try writer.execute(
            """
            PRAGMA journal_mode = WAL; PRAGMA synchronous = \(synchronous);
            CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT);
            CREATE INDEX IF NOT EXISTS t_a ON t (a); CREATE INDEX IF NOT EXISTS t_b ON t (b);
            CREATE INDEX IF NOT EXISTS t_c ON t (c);
            """)
        return writer
    }

    /// The writes made to the writer's log, the writes SQLite asked for, and the rewrites of bytes
    /// already in the file (written through).
    private func logWrites(_ connection: SQLiteConnection) -> (issued: Int64, requested: Int64, rewrites: Int64) {
        var issued: Int64 = 0
        var requested: Int64 = 0
        var rewrites: Int64 = 0
        #expect(perch_vfs_log_writes(connection.handle, &issued, &requested, &rewrites) == SQLITE_OK)
        return (issued, requested, rewrites)
    }

    /// `sql`'s first column as text, read by a connection on SQLite's default VFS (not "perch").
    private func readWithSQLitesOwnVFS(_ sql: String) throws -> String {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else {
            throw SQLiteError(code: SQLITE_CANTOPEN, message: "cannot open \(path)")
        }
        defer { sqlite3_close_v2(db) }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw SQLiteError(code: sqlite3_errcode(db), message: String(cString: sqlite3_errmsg(db)))
        }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return "" }
        return String(cString: text)
    }

    /// With `synchronous = FULL` SQLite syncs the log at each commit: the frames are written first.
    @Test(arguments: ["NORMAL", "FULL"])
    func aCommitIsOneWriteAndIsInTheFileWhenItReturns(synchronous: String) throws {
        defer { cleanUp() }
        let writer = try openWriter(synchronous: synchronous)
        try writer.execute("INSERT INTO t (a, b, c) VALUES ('warm', 'up', 'row')")
        for round in 1...20 {
            let before = logWrites(writer)
            try writer.execute("INSERT INTO t (a, b, c) VALUES ('a\(round)', 'b\(round)', 'c\(round)')")
            let after = logWrites(writer)
            // Four pages changed: eight writes asked for (a header and a page each), one made.
            #expect(after.requested - before.requested >= 8)
            #expect(after.issued - before.issued == 1)
            // Another connection, on SQLite's own VFS, sees the commit at once.
            #expect(try readWithSQLitesOwnVFS("SELECT count(*) FROM t") == "\(round + 1)")
            #expect(try readWithSQLitesOwnVFS("SELECT c FROM t ORDER BY id DESC LIMIT 1") == "c\(round)")
        }
    }

    @Test func transactionsLargerThanTheBufferAndThePageCacheCommitAndRollBackWhole() throws {
        defer { cleanUp() }
        let writer = try openWriter()
        // A small page cache: the big transactions below spill frames to the log before their
        // commit, and SQLite reads some back and rewrites others in place.
        try writer.execute("PRAGMA cache_size = 50")
        let big = String(repeating: "x", count: 3_000)
        func insertMany(_ count: Int, tag: String) throws {
            try writer.execute("BEGIN IMMEDIATE")
            for index in 0..<count {
                try writer.run(
                    "INSERT INTO t (a, b, c) VALUES (?, ?, ?)",
                    [.text("\(tag)\(index)"), .text(big), .text("\(tag)-\(index % 7)")])
            }
            // Rewrites pages the transaction already wrote to the log.
            try writer.run("UPDATE t SET b = 'short' WHERE a LIKE ?", [.text("\(tag)1%")])
        }
        let before = logWrites(writer)
        try insertMany(2_000, tag: "kept")
        try writer.execute("COMMIT")
        let after = logWrites(writer)
        // About 2,000 pages of rows and more of indexes, partly spilled and read back: gathered
        // into fewer writes all the same. Pages spilled and changed again were rewritten in place,
        // and their headers after the commit frame: written through.
        #expect(after.requested - before.requested > 2 * (after.issued - before.issued))
        #expect(after.rewrites > before.rewrites)
        #expect(try readWithSQLitesOwnVFS("SELECT count(*) FROM t") == "2000")
        #expect(try readWithSQLitesOwnVFS("SELECT count(*) FROM t WHERE b = 'short'") == "1111")
        #expect(try readWithSQLitesOwnVFS("PRAGMA integrity_check") == "ok")

        try insertMany(1_500, tag: "dropped")
        try writer.execute("ROLLBACK")
        try writer.execute("INSERT INTO t (a, b, c) VALUES ('last', 'row', 'in')")
        #expect(try readWithSQLitesOwnVFS("SELECT count(*) FROM t") == "2001")
        #expect(try readWithSQLitesOwnVFS("SELECT count(*) FROM t WHERE a LIKE 'dropped%'") == "0")
        #expect(try readWithSQLitesOwnVFS("PRAGMA integrity_check") == "ok")

        // After a restart of the log (checkpointed, no reader), commits still land whole.
        #expect(try writer.scalar("PRAGMA wal_checkpoint(TRUNCATE)") == 0)
        try writer.execute("INSERT INTO t (a, b, c) VALUES ('after', 'the', 'restart')")
        #expect(try readWithSQLitesOwnVFS("SELECT a FROM t ORDER BY id DESC LIMIT 1") == "after")
        #expect(try readWithSQLitesOwnVFS("PRAGMA integrity_check") == "ok")
    }

    @Test func storeConnectionsOpenThroughTheVFS() throws {
        defer { cleanUp() }
        let connection = try SQLiteConnection(path: path, readOnly: false)
        var name: UnsafeMutablePointer<CChar>?
        #expect(sqlite3_file_control(connection.handle, "main", SQLITE_FCNTL_VFSNAME, &name) == SQLITE_OK)
        #expect(name.map { String(cString: $0) } == "perch/unix")
        sqlite3_free(name)
    }
}
