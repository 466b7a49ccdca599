import Foundation
import PerchChat
import PerchService

/// Pins (conversation-wide) and saves (one user's).
extension SQLiteTransaction {
    func pinnedCount(conversationId: String) throws -> Int {
        Int(
            try db.scalar(
                "SELECT count(*) FROM messages WHERE conversation_id = ? AND pinned_at != 0",
                [.text(conversationId)]) ?? 0)
    }

    func pinnedMessages(
        conversationId: String, matching filter: MessageFilter, limit: Int, after cursor: (Int64, Int64)?
    ) throws -> [Message] {
        let (time, id) = cursor ?? (Int64.max, Int64.max)
        let (thread, threadValues) = Self.threadSQL(filter, on: "messages")
        let (filters, values) = Self.filterSQL(filter, on: "messages")
        let conditions = (["conversation_id = ? AND pinned_at != 0 AND (pinned_at, id) < (?, ?)"] + thread + filters)
        return try db.query(
            """
            SELECT \(Self.messageColumns) FROM messages WHERE \(conditions.joined(separator: " AND "))
            ORDER BY pinned_at DESC, id DESC LIMIT ?
            """, [.text(conversationId), .int(time), .int(id)] + threadValues + values + [.int(Int64(limit))],
            row: readMessage)
    }

    func oldestPinnedMessages(conversationId: String, pinnedBy: String, limit: Int) throws -> [Message] {
        try db.query(
            """
            SELECT \(Self.messageColumns) FROM messages
            WHERE conversation_id = ? AND pinned_at != 0 AND pinned_by = ?
            ORDER BY pinned_at, id LIMIT ?
            """, [.text(conversationId), .text(pinnedBy), .int(Int64(limit))], row: readMessage)
    }

    /// A save counts while its message is live and the user can still see the conversation.
    static let liveSave = """
        m.deleted_at = 0 AND (m.receiver_type = 'user' OR EXISTS (
            SELECT 1 FROM members mb WHERE mb.guid = m.receiver AND mb.uid = s.uid))
        """

    func liveSaveCount(uid: String) throws -> Int {
        Int(
            try db.scalar(
                "SELECT count(*) FROM saves s JOIN messages m ON m.id = s.message_id WHERE s.uid = ? AND \(Self.liveSave)",
                [.text(uid)]) ?? 0)
    }

    func savedMessages(uid: String, matching filter: MessageFilter, limit: Int, after cursor: (Int64, Int64)?)
        throws -> [Message]
    {
        let (time, id) = cursor ?? (Int64.max, Int64.max)
        let columns = Self.messageColumns.split(separator: ",").map {
            "m." + $0.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        .joined(separator: ", ")
        let (thread, threadValues) = Self.threadSQL(filter, on: "m")
        let (filters, values) = Self.filterSQL(filter, on: "m")
        let conditions = (["s.uid = ? AND (s.saved_at, s.message_id) < (?, ?) AND \(Self.liveSave)"] + thread + filters)
        return try db.query(
            """
            SELECT \(columns), s.saved_at FROM saves s JOIN messages m ON m.id = s.message_id
            WHERE \(conditions.joined(separator: " AND "))
            ORDER BY s.saved_at DESC, s.message_id DESC LIMIT ?
            """, [.text(uid), .int(time), .int(id)] + threadValues + values + [.int(Int64(limit))]
        ) { row in
            var message = readMessage(row)
            message.savedAt = row.int(25)
            return message
        }
    }

    func savedAt(uid: String, messageIds: [Int64]) throws -> [Int64: Int64] {
        guard !messageIds.isEmpty else { return [:] }
        let rows = try db.query(
            "SELECT message_id, saved_at FROM saves WHERE uid = ? AND message_id IN (SELECT value FROM json_each(?))",
            [.text(uid), idList(messageIds)]
        ) { ($0.int(0), $0.int(1)) }
        return Dictionary(rows, uniquingKeysWith: { first, _ in first })
    }

    func setSaved(uid: String, messageId: Int64, at time: Int64?) throws {
        if let time {
            try db.run(
                "INSERT INTO saves (uid, message_id, saved_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                [.text(uid), .int(messageId), .int(time)])
        } else {
            try db.run("DELETE FROM saves WHERE uid = ? AND message_id = ?", [.text(uid), .int(messageId)])
        }
    }

    func removeSaves(of messageId: Int64) throws {
        try db.run("DELETE FROM saves WHERE message_id = ?", [.int(messageId)])
    }
}
