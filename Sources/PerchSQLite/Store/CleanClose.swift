import Foundation

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
