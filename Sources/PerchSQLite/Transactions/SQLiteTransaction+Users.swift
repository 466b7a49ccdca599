import Foundation
import PerchChat

/// Users and their auth tokens.
extension SQLiteTransaction {
    static let userColumns = "uid, name, role, metadata, created_at, updated_at"

    func readUser(_ row: SQLiteConnection.Row) -> User {
        User(
            uid: row.text(0), name: row.text(1), role: row.text(2), metadata: coder.decode(row.optionalText(3)),
            createdAt: row.int(4), updatedAt: row.int(5))
    }

    func user(_ uid: String) throws -> User? {
        try remembered(uid, in: \.users) { try db.query(Self.selectUser, [.text(uid)], row: readUser).first }
    }

    static let selectUser = "SELECT \(userColumns) FROM users WHERE uid = ?"

    func users(limit: Int, after uid: String?) throws -> [User] {
        try db.query(
            "SELECT \(Self.userColumns) FROM users WHERE uid > ? ORDER BY uid LIMIT ?",
            [.text(uid ?? ""), .int(Int64(limit))], row: readUser)
    }

    func insertUser(_ user: User) throws {
        reference?.forget()
        try db.run(
            "INSERT INTO users (\(Self.userColumns)) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(user.uid), .text(user.name), .text(user.role), coder.encodeValue(user.metadata),
                .int(user.createdAt), .int(user.updatedAt),
            ])
    }

    func updateUser(_ user: User) throws {
        reference?.forget()
        try db.run(
            "UPDATE users SET name = ?, role = ?, metadata = ?, updated_at = ? WHERE uid = ?",
            [
                .text(user.name), .text(user.role), coder.encodeValue(user.metadata), .int(user.updatedAt),
                .text(user.uid),
            ])
    }

    func tokenOwner(hash: String) throws -> String? {
        try db.query("SELECT uid FROM auth_tokens WHERE hash = ?", [.text(hash)]) { $0.text(0) }.first
    }

    func insertToken(hash: String, uid: String, at time: Int64) throws {
        try db.run(
            "INSERT INTO auth_tokens (hash, uid, created_at) VALUES (?, ?, ?)", [.text(hash), .text(uid), .int(time)])
    }
}
