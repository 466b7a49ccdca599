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

    /// Changes some of a user's notification preferences, reading and writing them in one
    /// transaction, so that two changes at once both hold.
    /// - Throws: `ERR_UID_NOT_FOUND`.
    public func changeNotificationPreferences(_ change: NotificationPreferencesChange, of uid: String)
        async throws(ChatError) -> NotificationPreferences
    {
        let defaults = settings.notificationDefaults
        return try await writing { tx in
            _ = try Self.requireUser(tx, uid)
            let changed = change.applied(to: try tx.preferences(of: [uid])[uid] ?? defaults)
            try tx.setPreferences(changed, for: uid)
            return changed
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
        var silenced = Set(stored.lazy.filter(\.value.doNotDisturb).map(\.key))
        if defaults.doNotDisturb { silenced.formUnion(audience.lazy.filter { stored[$0] == nil }) }
        for (uid, until) in try tx.mutes(conversationId: message.conversationId)
        where MutedConversation.holds(until: until, at: now) {
            silenced.insert(uid)
        }
        // An explicit unsubscription mutes the thread's replies, whatever the preference, until
        // the user replies or is mentioned there (this reply's own subscriptions lifted it already).
        if message.isReply { silenced.formUnion(try tx.threadMutes(of: message.parentMessageId)) }
        let input = NotificationRouting.Input(
            message: message, audience: audience,
            preferences: stored.mapValues { $0.forReceiverType(message.receiverType) },
            defaults: defaults.forReceiverType(message.receiverType), threadSubscribers: subscribers,
            quotedAuthor: quotedAuthor, silenced: silenced)
        try tx.appendNotifications(NotificationRouting.recipients(input), messageId: message.id, at: now)
    }
}

extension ChatService {
    /// Mutes conversations for `uid` (CometChat's `muteConversations`): no notification of them
    /// reaches the user until each one's `until` (epoch seconds; 0: until unmuted). Muting again
    /// moves the end. All or none: one refusal mutes nothing.
    /// - Throws: `ERR_BAD_REQUEST` (no conversation, more than 100, an end already past),
    ///   `ERR_UID_NOT_FOUND`, `ERR_GUID_NOT_FOUND` (a private group to an outsider too),
    ///   `ERR_GROUP_NOT_JOINED`.
    public func muteConversations(_ conversations: [MutedConversation], as uid: String) async throws(ChatError) {
        let now = clock.now()
        try Self.checkMuteBatch(conversations.count)
        for muted in conversations { try MuteRules.checkUntil(muted.until, now: now) }
        try await writing { tx in
            _ = try Self.requireUser(tx, uid)
            for muted in conversations {
                try Self.checkMutable(tx, muted.receiver, by: uid)
                try tx.setMuted(uid: uid, muted.receiver, until: muted.until)
            }
        }
    }

    /// Unmutes conversations for `uid`; one that was not muted is left as it is. A user may always
    /// undo their own mute, of a group they have left too; anything else is checked as a mute is.
    /// - Throws: as ``muteConversations(_:as:)``.
    public func unmuteConversations(_ conversations: [Receiver], as uid: String) async throws(ChatError) {
        try Self.checkMuteBatch(conversations.count)
        try await writing { tx in
            _ = try Self.requireUser(tx, uid)
            let muted = Set(try tx.mutedConversations(uid: uid).map(\.receiver))
            for receiver in conversations {
                if !muted.contains(receiver) { try Self.checkMutable(tx, receiver, by: uid) }
                try tx.setMuted(uid: uid, receiver, until: nil)
            }
        }
    }

    /// The conversations `uid` has muted now, by conversation id; ended mutes are left out.
    /// - Throws: `ERR_UID_NOT_FOUND`.
    public func mutedConversations(of uid: String) async throws(ChatError) -> [MutedConversation] {
        let now = clock.now()
        return try await reading { tx in
            _ = try Self.requireUser(tx, uid)
            return try tx.mutedConversations(uid: uid).filter { MutedConversation.holds(until: $0.until, at: now) }
        }
    }

    static func checkMuteBatch(_ count: Int) throws(ChatError) {
        guard (1...MuteRules.batchLimit).contains(count) else {
            throw .badRequest("conversations", "give 1–\(MuteRules.batchLimit) conversations")
        }
    }

    /// Whether `uid` may mute a conversation: a group they are in, or a one-on-one with a user.
    static func checkMutable(_ tx: any ChatReadTransaction, _ receiver: Receiver, by uid: String) throws {
        switch receiver {
        case .group(let guid):
            let group = try requireGroup(tx, guid)
            let who = try participation(tx, uid: uid, in: receiver)
            guard who.canRead else {
                if group.type == .private { throw ChatError.guidNotFound(guid) }
                throw ChatError(.groupNotJoined, ["guid": .string(guid)])
            }
        case .user(let other):
            _ = try requireUser(tx, other)
        }
    }
}
