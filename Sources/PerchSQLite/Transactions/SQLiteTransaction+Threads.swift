import Foundation
import PerchChat
import PerchService

/// Thread subscriptions and the threads inbox.
extension SQLiteTransaction {
    func subscribedThreads(uid: String, parentIds: [Int64]) throws -> Set<Int64> {
        guard !parentIds.isEmpty else { return [] }
        return Set(
            try db.query(
                "SELECT parent_id FROM thread_subscriptions WHERE uid = ? AND parent_id IN (SELECT value FROM json_each(?))",
                [.text(uid), idList(parentIds)]
            ) { $0.int(0) })
    }

    func threadSubscribers(of parentId: Int64) throws -> [String] {
        try db.query("SELECT uid FROM thread_subscriptions WHERE parent_id = ? ORDER BY uid", [.int(parentId)]) {
            $0.text(0)
        }
    }

    /// A subscription is listed while its user can still see the conversation.
    static let accessibleThread = """
        (s.guid IS NULL OR EXISTS (SELECT 1 FROM members mb WHERE mb.guid = s.guid AND mb.uid = s.uid))
        """

    static func inboxSQL(byConversation: Bool) -> String {
        """
        SELECT s.parent_id, s.updated_at FROM thread_subscriptions s
        WHERE s.uid = ?1 \(byConversation ? "AND s.conversation_id = ?5" : "")
          AND (s.updated_at, s.parent_id) < (?2, ?3) AND \(accessibleThread)
        ORDER BY s.updated_at DESC, s.parent_id DESC LIMIT ?4
        """
    }

    func subscribedThreadRows(uid: String, conversationId: String?, limit: Int, after cursor: ThreadCursor?) throws
        -> [ThreadCursor]
    {
        var values: [SQLValue] = [
            .text(uid), .int(cursor?.updatedAt ?? Int64.max), .int(cursor?.parentMessageId ?? Int64.max),
            .int(Int64(limit)),
        ]
        if let conversationId { values.append(.text(conversationId)) }
        return try db.query(Self.inboxSQL(byConversation: conversationId != nil), values) {
            ThreadCursor(updatedAt: $0.int(1), parentMessageId: $0.int(0))
        }
    }

    func conversationThreadRows(conversationId: String, limit: Int, after cursor: ThreadCursor?) throws
        -> [ThreadCursor]
    {
        try db.query(
            """
            SELECT id, last_reply_at FROM messages
            WHERE conversation_id = ? AND last_reply_at != 0 AND deleted_at = 0 AND (last_reply_at, id) < (?, ?)
            ORDER BY last_reply_at DESC, id DESC LIMIT ?
            """,
            [
                .text(conversationId), .int(cursor?.updatedAt ?? Int64.max), .int(cursor?.parentMessageId ?? Int64.max),
                .int(Int64(limit)),
            ]
        ) { ThreadCursor(updatedAt: $0.int(1), parentMessageId: $0.int(0)) }
    }

    func lastReply(of parentId: Int64) throws -> Message? {
        try db.query(Self.selectLastReply, [.int(parentId)], row: readMessage).first
    }

    func subscribe(uid: String, to parent: Message, at time: Int64) throws -> Bool {
        let existed =
            try db.scalar(
                "SELECT 1 FROM thread_subscriptions WHERE uid = ? AND parent_id = ?", [.text(uid), .int(parent.id)])
            != nil
        try db.run(
            """
            INSERT INTO thread_subscriptions (uid, parent_id, conversation_id, guid, updated_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (uid, parent_id) DO UPDATE SET updated_at = max(updated_at, excluded.updated_at)
            """,
            [
                .text(uid), .int(parent.id), .text(parent.conversationId),
                parent.receiverType == .group ? .text(parent.receiverUid) : .null, .int(time),
            ])
        try db.run("DELETE FROM thread_mutes WHERE parent_id = ? AND uid = ?", [.int(parent.id), .text(uid)])
        return !existed
    }

    func unsubscribe(uid: String, from parentId: Int64) throws -> Bool {
        let removed = try db.run(
            "DELETE FROM thread_subscriptions WHERE uid = ? AND parent_id = ?", [.text(uid), .int(parentId)])
        try db.run("INSERT OR IGNORE INTO thread_mutes (parent_id, uid) VALUES (?, ?)", [.int(parentId), .text(uid)])
        return removed > 0
    }

    func hasSubscribingReply(in parentId: Int64, before id: Int64) throws -> Bool {
        try db.scalar(
            """
            SELECT 1 FROM messages m JOIN users u ON u.uid = m.sender
            WHERE m.parent_id = ? AND m.id < ? AND u.role != ? LIMIT 1
            """, [.int(parentId), .int(id), .text(User.botRole)]) != nil
    }

    func threadMutes(of parentId: Int64) throws -> [String] {
        try db.query("SELECT uid FROM thread_mutes WHERE parent_id = ?", [.int(parentId)]) { $0.text(0) }
    }

    func touchThread(_ parentId: Int64, at time: Int64) throws {
        try db.run(
            "UPDATE thread_subscriptions SET updated_at = ? WHERE parent_id = ? AND updated_at < ?",
            [.int(time), .int(parentId), .int(time)])
        try db.run("UPDATE messages SET last_reply_at = ? WHERE id = ?", [.int(time), .int(parentId)])
    }

    func removeSubscriptions(of parentId: Int64) throws {
        try db.run("DELETE FROM thread_subscriptions WHERE parent_id = ?", [.int(parentId)])
        try db.run("DELETE FROM thread_mutes WHERE parent_id = ?", [.int(parentId)])
    }

    /// The `EXPLAIN QUERY PLAN` details of an inbox page.
    func inboxPlan(byConversation: Bool) throws -> [String] {
        var values: [SQLValue] = [.text("u"), .int(1), .int(1), .int(30)]
        if byConversation { values.append(.text("group_g")) }
        return try db.query("EXPLAIN QUERY PLAN " + Self.inboxSQL(byConversation: byConversation), values) {
            $0.text(3)
        }
    }
}
