import Foundation
import PerchChat
import PerchService

/// Messages: rows, mentions, reply counts, and the page queries with their filters.
extension SQLiteTransaction {
    static let messageColumns = """
        id, muid, conversation_id, sender, receiver_type, receiver, type, category, text, data, attachments, metadata, \
        tags, mentions, parent_id, quoted_id, reply_count, sent_at, edited_at, edited_by, deleted_at, deleted_by, \
        updated_at, pinned_at, pinned_by
        """

    // The statements of the hot path are made once: built by interpolation at each call, each was
    // a new string of some 400 bytes, allocated, copied and hashed for the statement cache.
    static let selectMessage = "SELECT \(messageColumns) FROM messages WHERE id = ?"
    static let selectMessages = "SELECT \(messageColumns) FROM messages WHERE id IN (SELECT value FROM json_each(?))"
    static let selectMessageByMuid =
        "SELECT \(messageColumns) FROM messages WHERE sender = ? AND muid = ? AND muid != ''"
    static let selectLastReply = """
        SELECT \(messageColumns) FROM messages INDEXED BY messages_by_thread
        WHERE parent_id = ? AND parent_id != 0 AND deleted_at = 0 ORDER BY id DESC LIMIT 1
        """

    func readMessage(_ row: SQLiteConnection.Row) -> Message {
        Message(
            id: row.int(0), muid: row.text(1), conversationId: row.text(2), sender: row.text(3),
            receiverType: ReceiverType(rawValue: row.text(4)) ?? .user, receiverUid: row.text(5), type: row.text(6),
            category: MessageCategory(rawValue: row.text(7)) ?? .message, text: row.optionalText(8),
            data: coder.decode(row.optionalText(9)), attachments: coder.decode(row.optionalText(10)) ?? [],
            metadata: coder.decode(row.optionalText(11)), tags: coder.decode(row.optionalText(12)) ?? [],
            mentionedUids: coder.decode(row.optionalText(13)) ?? [], parentMessageId: row.int(14),
            quotedMessageId: row.int(15), replyCount: Int(row.int(16)), sentAt: row.int(17), editedAt: row.int(18),
            editedBy: row.text(19), deletedAt: row.int(20), deletedBy: row.text(21), updatedAt: row.int(22),
            pinnedAt: row.int(23), pinnedBy: row.text(24))
    }

    func message(_ id: Int64) throws -> Message? {
        try db.query(Self.selectMessage, [.int(id)], row: readMessage).first
    }

    /// A JSON array of ids, bound as one parameter and read with `json_each`, so one prepared
    /// statement serves any number of ids.
    func idList(_ ids: some Collection<Int64>) -> SQLValue {
        .text("[" + ids.map(String.init).joined(separator: ",") + "]")
    }

    func messages(_ ids: [Int64]) throws -> [Int64: Message] {
        guard !ids.isEmpty else { return [:] }
        let rows = try db.query(
            Self.selectMessages, [idList(Set(ids))], row: readMessage)
        return Dictionary(rows.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    func message(sender: String, muid: String) throws -> Message? {
        try db.query(Self.selectMessageByMuid, [.text(sender), .text(muid)], row: readMessage).first
    }

    func liveQuoteReplyCount(of id: Int64) throws -> Int {
        Int(try db.scalar("SELECT count(*) FROM messages WHERE quoted_id = ? AND deleted_at = 0", [.int(id)]) ?? 0)
    }

    func messageValues(_ message: Message) -> [SQLValue] {
        [
            .text(message.muid), .text(message.conversationId), .text(message.sender),
            .text(message.receiverType.rawValue), .text(message.receiverUid), .text(message.type),
            .text(message.category.rawValue), message.text.map(SQLValue.text) ?? .null, coder.encodeValue(message.data),
            message.attachments.isEmpty ? .null : coder.encodeValue(message.attachments),
            coder.encodeValue(message.metadata), message.tags.isEmpty ? .null : coder.encodeValue(message.tags),
            message.mentionedUids.isEmpty ? .null : coder.encodeValue(message.mentionedUids),
            .int(message.parentMessageId), .int(message.quotedMessageId), .int(Int64(message.replyCount)),
            .int(message.sentAt), .int(message.editedAt), .text(message.editedBy), .int(message.deletedAt),
            .text(message.deletedBy), .int(message.updatedAt), .int(message.pinnedAt), .text(message.pinnedBy),
        ]
    }

    func insertMessage(_ message: Message) throws -> Int64 {
        try db.run(
            """
            INSERT INTO messages (muid, conversation_id, sender, receiver_type, receiver, type, category, text, data, \
            attachments, metadata, tags, mentions, parent_id, quoted_id, reply_count, sent_at, edited_at, edited_by, \
            deleted_at, deleted_by, updated_at, pinned_at, pinned_by)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, messageValues(message))
        let id = db.lastInsertRowID
        try writeMentions(id: id, uids: message.mentionedUids)
        return id
    }

    func updateMessage(_ message: Message) throws {
        try db.run(
            """
            UPDATE messages SET muid = ?, conversation_id = ?, sender = ?, receiver_type = ?, receiver = ?, type = ?, \
            category = ?, text = ?, data = ?, attachments = ?, metadata = ?, tags = ?, mentions = ?, parent_id = ?, \
            quoted_id = ?, reply_count = ?, sent_at = ?, edited_at = ?, edited_by = ?, deleted_at = ?, deleted_by = ?, \
            updated_at = ?, pinned_at = ?, pinned_by = ?
            WHERE id = ?
            """, messageValues(message) + [.int(message.id)])
        try db.run("DELETE FROM mentions WHERE message_id = ?", [.int(message.id)])
        try writeMentions(id: message.id, uids: message.mentionedUids)
    }

    func writeMentions(id: Int64, uids: [String]) throws {
        for uid in uids {
            try db.run("INSERT OR IGNORE INTO mentions (uid, message_id) VALUES (?, ?)", [.text(uid), .int(id)])
        }
    }

    func adjustReplyCount(of id: Int64, by delta: Int, updatedAt: Int64) throws {
        try db.run(
            "UPDATE messages SET reply_count = max(0, reply_count + ?), updated_at = ? WHERE id = ?",
            [.int(Int64(delta)), .int(updatedAt), .int(id)])
    }

    /// One page of a conversation. Every filter is a condition on indexed columns or on the rows the
    /// index walk yields, so a page reads O(limit) rows when the filters are selective enough.
    func listMessages(_ query: MessageQuery) throws -> [Message] {
        let (sql, values) = Self.pageSQL(query)
        return try db.query(sql, values, row: readMessage)
    }

    /// The conditions of a listing's filter on the messages table named `table`, but its thread
    /// (`parentMessageId`), which each listing scopes through its own index.
    static func filterSQL(_ filter: MessageFilter, on table: String) -> ([String], [SQLValue]) {
        var filters: [String] = []
        var values: [SQLValue] = []
        func marks(_ count: Int) -> String { Array(repeating: "?", count: count).joined(separator: ", ") }
        if filter.hideDeleted { filters.append("\(table).deleted_at = 0") }
        if !filter.categories.isEmpty {
            filters.append("\(table).category IN (\(marks(filter.categories.count)))")
            values += filter.categories.map { .text($0.rawValue) }
        }
        if !filter.types.isEmpty {
            filters.append("\(table).type IN (\(marks(filter.types.count)))")
            values += filter.types.map { .text($0) }
        }
        if let keyword = filter.searchKeyword, !keyword.isEmpty {
            filters.append("\(table).text LIKE ? ESCAPE '\\'")
            let escaped = keyword.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(
                of: "%", with: "\\%"
            )
            .replacingOccurrences(of: "_", with: "\\_")
            values.append(.text("%\(escaped)%"))
        }
        if !filter.mentionedUids.isEmpty {
            filters.append(
                "\(table).id IN (SELECT message_id FROM mentions WHERE uid IN (\(marks(filter.mentionedUids.count))))")
            values += filter.mentionedUids.map { .text($0) }
        }
        if let sender = filter.sender {
            filters.append("\(table).sender = ?")
            values.append(.text(sender))
        }
        if !filter.tags.isEmpty {
            // A message's tags are a JSON array (NULL when it has none).
            filters.append(
                "EXISTS (SELECT 1 FROM json_each(\(table).tags) WHERE value IN (\(marks(filter.tags.count))))")
            values += filter.tags.map { .text($0) }
        }
        if filter.hideQuoted { filters.append("\(table).quoted_id = 0") }
        if filter.onlyWithMentions { filters.append("\(table).mentions IS NOT NULL") }
        if filter.onlyWithAttachments { filters.append("\(table).attachments IS NOT NULL") }
        if filter.onlyWithReactions {
            filters.append("EXISTS (SELECT 1 FROM reactions WHERE reactions.message_id = \(table).id)")
        }
        if let sentAt = filter.sentAt {
            filters.append("\(table).sent_at BETWEEN ? AND ?")
            values += [.int(sentAt.lowerBound), .int(sentAt.upperBound)]
        }
        return (filters, values)
    }

    /// The thread condition of a filter for the pinned and saved listings, which walk their own
    /// indexes rather than the conversation's.
    static func threadSQL(_ filter: MessageFilter, on table: String) -> ([String], [SQLValue]) {
        switch filter.parentMessageId {
        case nil: ([], [])
        case 0?: (["\(table).parent_id = 0"], [])
        case let parent?: (["\(table).parent_id = ?"], [.int(parent)])
        }
    }

    /// A whole conversation's page merges its two indexes, the top level's and the thread
    /// replies': SQLite walks both in `id` order and stops at the limit (a `MERGE (UNION ALL)` of
    /// two index searches, no sort), so every message is in one conversation index, not two.
    static func pageSQL(_ query: MessageQuery) -> (String, [SQLValue]) {
        var (filters, values) = filterSQL(query.filter, on: "messages")
        let ascending: Bool
        switch query.direction {
        case .before(let bound?):
            filters.insert("id < ?", at: 0)
            values.insert(.int(bound), at: 0)
            ascending = false
        case .before(nil):
            ascending = false
        case .after(let bound):
            filters.insert("id > ?", at: 0)
            values.insert(.int(bound), at: 0)
            ascending = true
        }
        let conversation = SQLValue.text(query.conversationId)
        func select(_ scope: String, _ scopeValues: [SQLValue], index: String = "") -> (String, [SQLValue]) {
            let conditions = ([scope] + filters).joined(separator: " AND ")
            return ("SELECT \(Self.messageColumns) FROM messages\(index) WHERE \(conditions)", scopeValues + values)
        }
        var (sql, all): (String, [SQLValue])
        switch query.filter.parentMessageId {
        case nil:
            let (top, topValues) = select("conversation_id = ? AND parent_id = 0", [conversation])
            let (replies, replyValues) = select("conversation_id = ? AND parent_id != 0", [conversation])
            (sql, all) = ("\(top) UNION ALL \(replies)", topValues + replyValues)
        case 0?:
            (sql, all) = select("conversation_id = ? AND parent_id = 0", [conversation])
        case let parent?:
            // `+conversation_id` keeps SQLite on the thread index: the thread, not the conversation, is
            // walked. Measured: without the hint SQLite walks a thread several times slower than through it.
            (sql, all) = select(
                "parent_id = ? AND parent_id != 0 AND +conversation_id = ?", [.int(parent), conversation],
                index: " INDEXED BY messages_by_thread")
        }
        sql += " ORDER BY id \(ascending ? "ASC" : "DESC") LIMIT ?"
        all.append(.int(Int64(query.limit)))
        return (sql, all)
    }

    /// The `EXPLAIN QUERY PLAN` details of a page query.
    func plan(of query: MessageQuery) throws -> [String] {
        let (sql, values) = Self.pageSQL(query)
        return try db.query("EXPLAIN QUERY PLAN " + sql, values) { $0.text(3) }
    }
}
