import Foundation
import PerchChat

/// A user in a group: the key of remembered members and bans.
struct MemberKey: Hashable {
    var guid: String
    var uid: String
}

/// What the writer remembers of the tables every send reads and few writes change (users, groups,
/// members, bans, notification preferences, mutes), found or known missing, so a send runs its inserts
/// and not five lookups. Used by the connection's owner only (the writer's, which passes between
/// threads under the writer's lock).
///
/// It holds committed rows only and is forgotten whole: before any write to those tables (in this
/// connection: a rolled-back write is then forgotten too), when a queued write fails or a commit
/// does (`Writer`), and when another connection has committed since the last batch (a second host,
/// `perch send --local`: `PRAGMA data_version`, read at the start of each batch).
final class ReferenceCache: @unchecked Sendable {
    var users: [String: User?] = [:]
    var groups: [String: Group?] = [:]
    var members: [MemberKey: GroupMember?] = [:]
    var memberUids: [String: [String]] = [:]
    var botMemberUids: [String: [String]] = [:]
    var bans: [MemberKey: Bool] = [:]
    var preferences: [String: NotificationPreferences?] = [:]
    /// Each conversation's mutes, uid to end.
    var mutes: [String: [String: Int64]] = [:]
    /// Another connection's commits move it (the writer's own do not).
    var dataVersion: Int64?

    /// Keeps `value`, read in this connection's current transaction; each table keeps up to
    /// `limit` keys (then starts over).
    func remember<Key: Hashable, Value>(
        _ value: Value, of key: Key, in table: ReferenceWritableKeyPath<ReferenceCache, [Key: Value]>
    ) {
        if self[keyPath: table].count >= Self.limit { self[keyPath: table].removeAll(keepingCapacity: true) }
        self[keyPath: table][key] = value
    }

    static let limit = 16_384

    func forget() {
        users.removeAll(keepingCapacity: true)
        groups.removeAll(keepingCapacity: true)
        members.removeAll(keepingCapacity: true)
        memberUids.removeAll(keepingCapacity: true)
        botMemberUids.removeAll(keepingCapacity: true)
        bans.removeAll(keepingCapacity: true)
        preferences.removeAll(keepingCapacity: true)
        mutes.removeAll(keepingCapacity: true)
    }

    /// At the start of a batch, inside its transaction: forgets everything when another connection
    /// committed since the last batch, and answers whether one did.
    func check(_ db: SQLiteConnection) throws -> Bool {
        let version = try db.scalar("PRAGMA data_version")
        guard version != dataVersion else { return false }
        forget()
        dataVersion = version
        return true
    }
}
