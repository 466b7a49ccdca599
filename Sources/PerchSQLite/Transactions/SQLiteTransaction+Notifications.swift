import Foundation
import PerchChat
import PerchService

/// Notification preferences and muted conversations.
extension SQLiteTransaction {
    func preferences(of uids: [String]) throws -> [String: NotificationPreferences] {
        guard let reference else { return try storedPreferences(of: uids) }
        var found: [String: NotificationPreferences] = [:]
        var missing: [String] = []
        for uid in uids {
            switch reference.preferences[uid] {
            case .some(.some(let preferences)): found[uid] = preferences
            case .some(.none): break
            case .none: missing.append(uid)
            }
        }
        guard !missing.isEmpty else { return found }
        let stored = try storedPreferences(of: missing)
        for uid in missing {
            reference.remember(stored[uid], of: uid, in: \.preferences)
            if let preferences = stored[uid] { found[uid] = preferences }
        }
        return found
    }

    private func storedPreferences(of uids: [String]) throws -> [String: NotificationPreferences] {
        guard !uids.isEmpty else { return [:] }
        // One statement for the whole audience (a 1,000-member group took 1,000 lookups before).
        let list = "[" + uids.map { JSONWriter.quoted($0) }.joined(separator: ",") + "]"
        let rows = try db.query(
            "SELECT uid, preferences FROM notification_preferences WHERE uid IN (SELECT value FROM json_each(?))",
            [.text(list)]
        ) { ($0.text(0), $0.text(1)) }
        var found: [String: NotificationPreferences] = [:]
        // Many users share the same settings: decode each distinct text once.
        var decoded: [String: NotificationPreferences] = [:]
        for (uid, text) in rows {
            if let known = decoded[text] {
                found[uid] = known
            } else if let preferences: NotificationPreferences = coder.decode(text) {
                decoded[text] = preferences
                found[uid] = preferences
            }
        }
        return found
    }

    func mutes(conversationId: String) throws -> [String: Int64] {
        if let known = reference?.mutes[conversationId] { return known }
        let rows = try db.query(
            "SELECT uid, until FROM muted_conversations WHERE conversation_id = ?", [.text(conversationId)]
        ) { ($0.text(0), $0.int(1)) }
        let mutes = Dictionary(rows, uniquingKeysWith: { first, _ in first })
        reference?.remember(mutes, of: conversationId, in: \.mutes)
        return mutes
    }

    func mutedConversations(uid: String) throws -> [MutedConversation] {
        try db.query(
            """
            SELECT receiver_type, receiver, until FROM muted_conversations WHERE uid = ?
            ORDER BY conversation_id
            """, [.text(uid)]
        ) { row in
            let receiver: Receiver =
                row.text(0) == ReceiverType.group.rawValue ? .group(row.text(1)) : .user(row.text(1))
            return MutedConversation(receiver: receiver, until: row.int(2))
        }
    }

    func setMuted(uid: String, _ receiver: Receiver, until: Int64?) throws {
        reference?.forget()
        let conversation = receiver.conversationId(sender: uid)
        if let until {
            try db.run(
                """
                INSERT INTO muted_conversations (uid, conversation_id, receiver_type, receiver, until)
                VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (uid, conversation_id) DO UPDATE SET until = excluded.until
                """,
                [.text(uid), .text(conversation), .text(receiver.type.rawValue), .text(receiver.id), .int(until)])
        } else {
            try db.run(
                "DELETE FROM muted_conversations WHERE uid = ? AND conversation_id = ?",
                [.text(uid), .text(conversation)])
        }
    }

    func setPreferences(_ preferences: NotificationPreferences, for uid: String) throws {
        reference?.forget()
        try db.run(
            """
            INSERT INTO notification_preferences (uid, preferences) VALUES (?, ?)
            ON CONFLICT (uid) DO UPDATE SET preferences = excluded.preferences
            """, [.text(uid), .text(coder.encodeString(preferences))])
    }
}
