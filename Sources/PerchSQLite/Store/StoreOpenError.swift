import Foundation

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
