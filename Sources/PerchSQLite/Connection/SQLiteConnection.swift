import CSQLite
import CSQLiteVFS
import Foundation
import PerchService

/// An SQLite failure: the result code and SQLite's message.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    public var code: Int32
    public var message: String
    public var description: String { "SQLite error \(code): \(message)" }
}

extension SQLiteError: StoreFailure {
    public var isStorageFull: Bool { code & 0xff == SQLITE_FULL }
}

/// A value bound to or read from a statement.
enum SQLValue {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    /// Text given as its UTF-8 bytes (no `String` made on the way).
    case utf8([UInt8])
}

/// One SQLite connection with a cache of prepared statements: a statement is compiled once per
/// connection and reused, so the hot path never re-parses SQL.
///
/// A connection is used by one thread at a time: the writer thread owns its connection, and reader
/// connections are checked out of a pool under a lock. That is the contract that makes the
/// `@unchecked Sendable` wrapper below sound.
final class SQLiteConnection {
    let handle: OpaquePointer
    private var statements: [StatementKey: OpaquePointer] = [:]

    /// Process-wide settings, applied once before the first connection opens.
    private static let configured: Int32 = {
        _ = perch_sqlite_disable_memory_statistics()
        return perch_vfs_register()
    }()

    init(path: String, readOnly: Bool) throws {
        // Every connection of the store opens through the "perch" VFS (commits' log frames written
        // in one call: Sources/CSQLiteVFS); should it fail to register, through SQLite's default.
        let vfs = Self.configured == SQLITE_OK ? PERCH_VFS_NAME : nil
        var db: OpaquePointer?
        let flags =
            (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &db, flags, vfs)
        guard code == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: code, message: message)
        }
        handle = db
        sqlite3_busy_timeout(db, Self.busyMilliseconds)
        sqlite3_extended_result_codes(db, 1)
        // Statement journals (one per statement that may fail halfway, and per savepoint) and
        // sorting stay in memory. SQLite's default spills them to temporary files: a burst wrote 20
        // times as many pages to those files as to the database's log (strace).
        sqlite3_exec(db, "PRAGMA temp_store = MEMORY", nil, nil, nil)
    }

    /// How long a statement waits for another connection's lock before failing with SQLITE_BUSY.
    static let busyMilliseconds: Int32 = 10_000

    func busyTimeout(milliseconds: Int32) { sqlite3_busy_timeout(handle, milliseconds) }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    var lastMessage: String { String(cString: sqlite3_errmsg(handle)) }

    func check(_ code: Int32) throws {
        guard code == SQLITE_OK || code == SQLITE_DONE || code == SQLITE_ROW else {
            throw SQLiteError(code: code, message: lastMessage)
        }
    }

    /// Runs SQL text that takes no parameters (schema, pragmas, transaction control).
    func execute(_ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &error)
        if code != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(error)
            throw SQLiteError(code: code, message: message)
        }
    }

    func statement(_ sql: String) throws -> OpaquePointer {
        if let cached = statements[StatementKey(sql: sql)] { return cached }
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil))
        guard let statement else { throw SQLiteError(code: SQLITE_MISUSE, message: "empty statement: \(sql)") }
        statements[StatementKey(sql: sql)] = statement
        return statement
    }

    /// Binds `values` to `statement`, runs `body`, then resets the statement and clears its
    /// bindings. The text values are copied once, into one scratch buffer that lives for the call
    /// (on the stack when small), and bound as `SQLITE_STATIC`: SQLite reads them in place during
    /// the steps and forgets them at the clearing. Bound as `SQLITE_TRANSIENT` from a `String`
    /// instead, each text value would cost two allocations (Swift's C string, then SQLite's own
    /// copy), on every statement of the hot path. Every value is
    /// bound with its length, so a text holding U+0000 is stored whole.
    private func withBindings<T>(
        _ statement: OpaquePointer, _ values: [SQLValue], _ body: () throws -> T
    ) throws -> T {
        var bytes = 0
        for value in values {
            switch value {
            case .text(let text): bytes += text.utf8.count
            case .utf8(let utf8): bytes += utf8.count
            case .null, .int, .double: break
            }
        }
        return try withUnsafeTemporaryAllocation(of: CChar.self, capacity: max(bytes, 1)) { scratch in
            defer {
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
            }
            var used = 0
            /// Copies `bytes` to the scratch buffer's next free bytes and binds them there, with a
            /// nil destructor: SQLITE_STATIC.
            func bindText(_ bytes: some Collection<UInt8>, at index: Int32) -> Int32 {
                let count = Self.copy(bytes, into: scratch, at: used)
                defer { used += count }
                return sqlite3_bind_text(statement, index, scratch.baseAddress! + used, Int32(count), nil)
            }
            for (offset, value) in values.enumerated() {
                let index = Int32(offset + 1)
                let code: Int32
                switch value {
                case .null: code = sqlite3_bind_null(statement, index)
                case .int(let number): code = sqlite3_bind_int64(statement, index, number)
                case .double(let number): code = sqlite3_bind_double(statement, index, number)
                case .text(let text): code = bindText(text.utf8, at: index)
                case .utf8(let utf8): code = bindText(utf8, at: index)
                }
                try check(code)
            }
            return try body()
        }
    }

    /// Copies `bytes` into `scratch` from `offset` (one `memcpy` when they are contiguous, as a
    /// native string's and an array's are); answers how many were copied.
    private static func copy(
        _ bytes: some Collection<UInt8>, into scratch: UnsafeMutableBufferPointer<CChar>, at offset: Int
    ) -> Int {
        let target = UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(scratch)[offset...])
        if let count = bytes.withContiguousStorageIfAvailable({ source -> Int in
            target.copyMemory(from: UnsafeRawBufferPointer(source))
            return source.count
        }) {
            return count
        }
        return target.initializeMemory(as: UInt8.self, from: bytes).initialized.count
    }

    /// Runs a statement that returns no rows; returns the number of rows changed.
    @discardableResult
    func run(_ sql: String, _ values: [SQLValue] = []) throws -> Int {
        let statement = try statement(sql)
        return try withBindings(statement, values) {
            var code = sqlite3_step(statement)
            while code == SQLITE_ROW { code = sqlite3_step(statement) }
            try check(code)
            return Int(sqlite3_changes(handle))
        }
    }

    /// Runs a query, handing each row to `row`.
    func query<T>(_ sql: String, _ values: [SQLValue] = [], row: (Row) throws -> T) throws -> [T] {
        let statement = try statement(sql)
        return try withBindings(statement, values) {
            var results: [T] = []
            while true {
                let code = sqlite3_step(statement)
                if code == SQLITE_DONE { break }
                guard code == SQLITE_ROW else { throw SQLiteError(code: code, message: lastMessage) }
                results.append(try row(Row(statement: statement)))
            }
            return results
        }
    }

    func scalar(_ sql: String, _ values: [SQLValue] = []) throws -> Int64? {
        try query(sql, values) { $0.isNull(0) ? nil : $0.int(0) }.first ?? nil
    }

    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// A row of a result, read by column index.
    struct Row {
        let statement: OpaquePointer

        func int(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
        func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

        func text(_ column: Int32) -> String {
            guard let pointer = sqlite3_column_text(statement, column) else { return "" }
            let count = Int(sqlite3_column_bytes(statement, column))
            return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
        }

        func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }
    }
}

/// A connection crossing threads inside the pool or the writer; see ``SQLiteConnection``.
struct ConnectionBox: @unchecked Sendable {
    let connection: SQLiteConnection
    /// The connection's own JSON coder, used by whoever holds the connection.
    let coder = JSONCoder()
}

/// A statement's text as the cache's key, hashed by its length and last 48 bytes only: hashing all
/// of a statement of some 400 bytes at every use showed in the writer thread's profile. Equal keys
/// are equal texts; texts that share a length and an ending only cost a comparison.
private struct StatementKey: Hashable {
    let sql: String

    static func == (left: StatementKey, right: StatementKey) -> Bool { left.sql == right.sql }

    func hash(into hasher: inout Hasher) {
        let utf8 = sql.utf8
        hasher.combine(utf8.count)
        let hashedInPlace: Void? = utf8.withContiguousStorageIfAvailable { buffer in
            hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: buffer.suffix(48))))
        }
        if hashedInPlace == nil {
            for byte in utf8.suffix(48) { hasher.combine(byte) }
        }
    }
}
