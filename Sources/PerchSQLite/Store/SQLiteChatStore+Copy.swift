import CSQLite
import Foundation
import PerchLock

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
