import Foundation

extension SQLiteChatStore {
    /// Reads the database file from start to end in large blocks, so that the check at open
    /// (`PRAGMA quick_check`, which visits every page in b-tree order, one random read each) finds
    /// its pages in the kernel's page cache: sequential reads of the whole file cost a fraction of
    /// the check's random reads from the disk. A file larger than half the machine's memory is left
    /// alone: its first pages
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
