import PerchChat

extension ChatService {
    /// A user's notification preferences (the configured defaults until they change them).
    /// - Throws: `ERR_UID_NOT_FOUND`.
    public func notificationPreferences(of uid: String) async throws(ChatError) -> NotificationPreferences {
        let defaults = settings.notificationDefaults
        return try await reading { tx in
            _ = try Self.requireUser(tx, uid)
            return try tx.preferences(of: [uid])[uid] ?? defaults
        }
    }

    /// Replaces a user's notification preferences.
    /// - Throws: `ERR_UID_NOT_FOUND`.
    public func updateNotificationPreferences(_ preferences: NotificationPreferences, of uid: String)
        async throws(ChatError) -> NotificationPreferences
    {
        try await writing { tx in
            _ = try Self.requireUser(tx, uid)
            try tx.setPreferences(preferences, for: uid)
            return preferences
        }
    }

    /// The user's notification outbox after `seq`, oldest first, and what the retention removed
    /// after `seq` before this read (``NotificationPage/missed``).
    public func notifications(for uid: String, after seq: Int64 = 0, limit: Int = 100) async throws(ChatError)
        -> NotificationPage
    {
        guard (1...1000).contains(limit) else { throw .badRequest("limit", "must be 1–1000") }
        return try await reading { tx in
            _ = try Self.requireUser(tx, uid)
            return try tx.notifications(for: uid, after: seq, limit: limit)
        }
    }

    /// Inside a send: routes the new message to its recipients' outboxes.
    static func route(
        _ tx: any ChatWriteTransaction, _ message: Message, subscribers: Set<String>,
        defaults: NotificationPreferences, at now: Int64
    ) throws {
        let audience = try audienceUids(tx, of: message).filter { $0 != message.sender }
        guard !audience.isEmpty else { return }
        let stored = try tx.preferences(of: audience)
        var quotedAuthor: String?
        if message.isQuoteReply { quotedAuthor = try tx.message(message.quotedMessageId)?.sender }
        let input = NotificationRouting.Input(
            message: message, audience: audience,
            preferences: stored.mapValues { $0.forReceiverType(message.receiverType) },
            defaults: defaults.forReceiverType(message.receiverType), threadSubscribers: subscribers,
            quotedAuthor: quotedAuthor)
        try tx.appendNotifications(NotificationRouting.recipients(input), messageId: message.id, at: now)
    }
}
