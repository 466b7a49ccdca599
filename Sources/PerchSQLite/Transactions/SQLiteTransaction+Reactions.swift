import Foundation
import PerchChat

/// Reactions and their counts.
extension SQLiteTransaction {
    func reactionCounts(messageIds: [Int64], viewer: String?) throws -> [Int64: [ReactionCount]] {
        guard !messageIds.isEmpty else { return [:] }
        let rows = try db.query(
            """
            SELECT message_id, reaction, count(*), max(uid = ?), min(id) AS first FROM reactions
            WHERE message_id IN (SELECT value FROM json_each(?))
            GROUP BY message_id, reaction ORDER BY message_id, first
            """, [.text(viewer ?? ""), idList(messageIds)]
        ) { row in
            (
                row.int(0),
                ReactionCount(
                    reaction: row.text(1), count: Int(row.int(2)), reactedByMe: viewer != nil && row.int(3) == 1)
            )
        }
        var counts: [Int64: [ReactionCount]] = [:]
        for (id, count) in rows { counts[id, default: []].append(count) }
        return counts
    }

    func reactions(messageId: Int64, reaction: String?, limit: Int, after: Int64?) throws -> [Reaction] {
        var sql = "SELECT id, reaction, uid, reacted_at FROM reactions WHERE message_id = ? AND id > ?"
        var values: [SQLValue] = [.int(messageId), .int(after ?? 0)]
        if let reaction {
            sql += " AND reaction = ?"
            values.append(.text(reaction))
        }
        sql += " ORDER BY id LIMIT ?"
        values.append(.int(Int64(limit)))
        return try db.query(sql, values) {
            Reaction(id: $0.int(0), messageId: messageId, reaction: $0.text(1), uid: $0.text(2), reactedAt: $0.int(3))
        }
    }

    func setReaction(_ reaction: Reaction, added: Bool) throws -> Int64? {
        if added {
            _ = try db.run(
                "INSERT INTO reactions (message_id, reaction, uid, reacted_at) VALUES (?, ?, ?, ?)",
                [.int(reaction.messageId), .text(reaction.reaction), .text(reaction.uid), .int(reaction.reactedAt)])
            return db.lastInsertRowID
        }
        return try db.query(
            "DELETE FROM reactions WHERE message_id = ? AND reaction = ? AND uid = ? RETURNING id",
            [.int(reaction.messageId), .text(reaction.reaction), .text(reaction.uid)]
        ) { $0.int(0) }.first
    }

    func removeReactions(of messageId: Int64) throws {
        _ = try db.run("DELETE FROM reactions WHERE message_id = ?", [.int(messageId)])
    }
}
