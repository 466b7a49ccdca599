import Foundation
import PerchChat

/// Groups, members, the seed's scopes and bans.
extension SQLiteTransaction {
    static let groupColumns =
        "guid, name, type, owner, metadata, created_at, updated_at, (SELECT count(*) FROM members m WHERE m.guid = groups.guid)"

    func readGroup(_ row: SQLiteConnection.Row) -> Group {
        Group(
            guid: row.text(0), name: row.text(1), type: GroupType(rawValue: row.text(2)) ?? .public, owner: row.text(3),
            metadata: coder.decode(row.optionalText(4)), membersCount: Int(row.int(7)), createdAt: row.int(5),
            updatedAt: row.int(6))
    }

    func group(_ guid: String) throws -> Group? {
        try remembered(guid, in: \.groups) { try db.query(Self.selectGroup, [.text(guid)], row: readGroup).first }
    }

    static let selectGroup = "SELECT \(groupColumns) FROM groups WHERE guid = ?"

    func groups(limit: Int, after guid: String?) throws -> [Group] {
        try db.query(
            "SELECT \(Self.groupColumns) FROM groups WHERE guid > ? ORDER BY guid LIMIT ?",
            [.text(guid ?? ""), .int(Int64(limit))], row: readGroup)
    }

    func insertGroup(_ group: Group) throws {
        reference?.forget()
        try db.run(
            "INSERT INTO groups (guid, name, type, owner, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                .text(group.guid), .text(group.name), .text(group.type.rawValue), .text(group.owner),
                coder.encodeValue(group.metadata), .int(group.createdAt), .int(group.updatedAt),
            ])
    }

    func updateGroup(_ group: Group) throws {
        reference?.forget()
        try db.run(
            "UPDATE groups SET name = ?, type = ?, owner = ?, metadata = ?, updated_at = ? WHERE guid = ?",
            [
                .text(group.name), .text(group.type.rawValue), .text(group.owner), coder.encodeValue(group.metadata),
                .int(group.updatedAt), .text(group.guid),
            ])
    }

    func readMember(_ row: SQLiteConnection.Row) -> GroupMember {
        GroupMember(
            guid: row.text(0), uid: row.text(1), scope: GroupMemberScope(rawValue: row.text(2)) ?? .participant,
            joinedAt: row.int(3))
    }

    func member(guid: String, uid: String) throws -> GroupMember? {
        try remembered(MemberKey(guid: guid, uid: uid), in: \.members) {
            try db.query(
                "SELECT guid, uid, scope, joined_at FROM members WHERE guid = ? AND uid = ?",
                [.text(guid), .text(uid)],
                row: readMember
            ).first
        }
    }

    func members(guid: String, limit: Int, after uid: String?) throws -> [GroupMember] {
        try db.query(
            "SELECT guid, uid, scope, joined_at FROM members WHERE guid = ? AND uid > ? ORDER BY uid LIMIT ?",
            [.text(guid), .text(uid ?? ""), .int(Int64(limit))], row: readMember)
    }

    func memberUids(guid: String) throws -> [String] {
        try remembered(guid, in: \.memberUids) {
            try db.query("SELECT uid FROM members WHERE guid = ? ORDER BY uid", [.text(guid)]) { $0.text(0) }
        }
    }

    func botMemberUids(guid: String) throws -> [String] {
        try remembered(guid, in: \.botMemberUids) {
            try db.query(
                """
                SELECT m.uid FROM members m JOIN users u ON u.uid = m.uid
                WHERE m.guid = ? AND u.role = ? ORDER BY m.uid
                """, [.text(guid), .text(User.botRole)]
            ) { $0.text(0) }
        }
    }

    func upsertMember(_ member: GroupMember) throws {
        reference?.forget()
        try db.run(
            """
            INSERT INTO members (guid, uid, scope, joined_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (guid, uid) DO UPDATE SET scope = excluded.scope
            """,
            [.text(member.guid), .text(member.uid), .text(member.scope.rawValue), .int(member.joinedAt)])
        changedMembers = true
    }

    func removeMember(guid: String, uid: String) throws {
        reference?.forget()
        try db.run("DELETE FROM members WHERE guid = ? AND uid = ?", [.text(guid), .text(uid)])
        changedMembers = true
    }

    func seededScope(guid: String, uid: String) throws -> GroupMemberScope? {
        try db.query("SELECT scope FROM seeded_members WHERE guid = ? AND uid = ?", [.text(guid), .text(uid)]) {
            $0.text(0)
        }.first.flatMap(GroupMemberScope.init(rawValue:))
    }

    func recordSeededMember(guid: String, uid: String, scope: GroupMemberScope) throws {
        try db.run(
            """
            INSERT INTO seeded_members (guid, uid, scope) VALUES (?, ?, ?)
            ON CONFLICT (guid, uid) DO UPDATE SET scope = excluded.scope
            """, [.text(guid), .text(uid), .text(scope.rawValue)])
    }

    func isBanned(guid: String, uid: String) throws -> Bool {
        try remembered(MemberKey(guid: guid, uid: uid), in: \.bans) {
            try db.scalar("SELECT 1 FROM bans WHERE guid = ? AND uid = ?", [.text(guid), .text(uid)]) != nil
        }
    }

    func bannedUids(guid: String) throws -> [String] {
        try db.query("SELECT uid FROM bans WHERE guid = ? ORDER BY uid", [.text(guid)]) { $0.text(0) }
    }

    func setBanned(guid: String, uid: String, banned: Bool, at time: Int64) throws {
        reference?.forget()
        if banned {
            try db.run(
                "INSERT INTO bans (guid, uid, banned_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                [.text(guid), .text(uid), .int(time)])
        } else {
            try db.run("DELETE FROM bans WHERE guid = ? AND uid = ?", [.text(guid), .text(uid)])
        }
    }
}
