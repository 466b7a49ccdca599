import PerchChat

/// A user's notifications as their clients read them: the outbox with each row's message, the
/// unread count, and marking rows read (every session of the user hears it, so two tabs agree).
extension ChatService {
    /// The user's notifications after `seq`, oldest first (only unread ones when `unreadOnly`),
    /// each with its message as the user sees it now, and what the retention removed after `seq`
    /// before this read (``NotificationPage/missed``).
    /// - Throws: `ERR_BAD_REQUEST` (a limit outside 1–1000), `ERR_UID_NOT_FOUND`.
    public func notifications(for uid: String, after seq: Int64 = 0, limit: Int = 100, unreadOnly: Bool = false)
        async throws(ChatError) -> NotificationPage
    {
        try Self.checkNotificationLimit(limit)
        return try await reading { tx in
            _ = try Self.requireUser(tx, uid)
            var page = try tx.notifications(for: uid, after: seq, limit: limit, unreadOnly: unreadOnly)
            page.records = try Self.withMessages(tx, page.records, for: uid)
            return page
        }
    }

    /// The user's newest notifications before `seq` (nil: the newest of all), newest first, each
    /// with its message: a notification centre's list.
    /// - Throws: `ERR_BAD_REQUEST` (a limit outside 1–1000), `ERR_UID_NOT_FOUND`.
    public func latestNotifications(
        for uid: String, before seq: Int64? = nil, limit: Int = 30, unreadOnly: Bool = false
    )
        async throws(ChatError) -> [NotificationRecord]
    {
        try Self.checkNotificationLimit(limit)
        return try await reading { tx in
            _ = try Self.requireUser(tx, uid)
            let records = try tx.latestNotifications(for: uid, before: seq, limit: limit, unreadOnly: unreadOnly)
            return try Self.withMessages(tx, records, for: uid)
        }
    }

    /// How many of the user's notifications are unread.
    /// - Throws: `ERR_UID_NOT_FOUND`.
    public func unreadNotificationCount(of uid: String) async throws(ChatError) -> Int {
        try await reading { tx in
            _ = try Self.requireUser(tx, uid)
            return try tx.unreadNotificationCount(uid: uid)
        }
    }

    /// Marks some of the user's notifications read (rows of others, rows already read and rows the
    /// retention removed are passed over), and tells the user's sessions
    /// (`onNotificationsRead`) when any was marked. Returns what was marked and the unread count
    /// after it.
    /// - Throws: `ERR_BAD_REQUEST` (no sequence, or more than 1000), `ERR_UID_NOT_FOUND`.
    public func markNotificationsRead(_ seqs: [Int64], as uid: String) async throws(ChatError) -> NotificationsRead {
        guard (1...1000).contains(seqs.count) else { throw .badRequest("ids", "give 1–1000 notification ids") }
        let now = clock.now()
        return try await writing { tx in
            _ = try Self.requireUser(tx, uid)
            let marked = try tx.markNotificationsRead(uid: uid, seqs: seqs, at: now)
            let read = NotificationsRead(seqs: marked, unreadCount: try tx.unreadNotificationCount(uid: uid))
            if !marked.isEmpty { try Self.announce(read, to: uid, tx, at: now) }
            return read
        }
    }

    /// Marks every notification of the user up to `seq` read (nil: all routed so far), and tells the
    /// user's sessions.
    /// - Throws: `ERR_UID_NOT_FOUND`.
    public func markAllNotificationsRead(as uid: String, through seq: Int64? = nil) async throws(ChatError)
        -> NotificationsRead
    {
        let now = clock.now()
        return try await writing { tx in
            _ = try Self.requireUser(tx, uid)
            let through = try seq ?? tx.newestNotificationSequence()
            try tx.markNotificationsRead(uid: uid, through: through, at: now)
            let read = NotificationsRead(through: through, unreadCount: try tx.unreadNotificationCount(uid: uid))
            try Self.announce(read, to: uid, tx, at: now)
            return read
        }
    }

    static func announce(_ read: NotificationsRead, to uid: String, _ tx: any ChatWriteTransaction, at now: Int64)
        throws
    {
        let event = ChatEvent(name: .notificationsRead, conversationId: "", createdAt: now, read: read)
        _ = try tx.appendEvent(event, audience: EventAudience(users: [uid]))
    }

    static func checkNotificationLimit(_ limit: Int) throws(ChatError) {
        guard (1...1000).contains(limit) else { throw .badRequest("limit", "must be 1–1000") }
    }

    /// Fills each record's message as `uid` sees it now, with its thread's parent as a preview;
    /// a message `uid` may no longer read (they left a private group since) stays nil.
    static func withMessages(_ tx: any ChatReadTransaction, _ records: [NotificationRecord], for uid: String) throws
        -> [NotificationRecord]
    {
        guard !records.isEmpty else { return records }
        let found = try tx.messages(Array(Set(records.map(\.messageId))))
        var readable: [Int64: Message] = [:]
        for message in found.values
        where try Self.participation(tx, uid: uid, towards: message).canRead {
            readable[message.id] = message
        }
        let decorated = try Self.decorate(tx, Array(readable.values), for: uid)
        let parents = try tx.messages(decorated.map(\.parentMessageId).filter { $0 != 0 })
        var byId: [Int64: Message] = [:]
        for var message in decorated {
            if let parent = parents[message.parentMessageId] { message.parentMessage = MessagePreview(parent) }
            byId[message.id] = message
        }
        return records.map { record in
            var copy = record
            copy.message = byId[record.messageId]
            return copy
        }
    }

    /// Every user's routed notifications after `seq`, oldest first, each with its message (as
    /// stored, without any viewer's fields): what a delivery consumer (a webhook, a plugin) reads.
    public func routedNotifications(after seq: Int64, limit: Int = 100) async throws(ChatError)
        -> [NotificationRecord]
    {
        try Self.checkNotificationLimit(limit)
        return try await reading { tx in
            let records = try tx.routedNotifications(after: seq, limit: limit)
            let messages = try tx.messages(Array(Set(records.map(\.messageId))))
            return records.map { record in
                var copy = record
                copy.message = messages[record.messageId]
                return copy
            }
        }
    }

    /// The newest routed notification's sequence (0: none yet).
    public func newestNotificationSequence() async throws(ChatError) -> Int64 {
        try await reading { tx in try tx.newestNotificationSequence() }
    }
}

extension ChatService {
    /// Where a delivery consumer left off (nil: it never ran).
    public func deliveryCursor(of consumer: String) async throws(ChatError) -> Int64? {
        try await reading { tx in try tx.deliveryCursor(consumer: consumer) }
    }

    /// Records that `consumer` is done with every routed notification up to `seq`, and, in the
    /// same transaction, the rows it gave up on.
    public func advanceDelivery(of consumer: String, to seq: Int64, deadLetters: [DeadLetter] = [])
        async throws(ChatError)
    {
        let now = clock.now()
        try await writing { tx in
            for letter in deadLetters { try tx.appendDeadLetter(letter) }
            try tx.setDeliveryCursor(consumer: consumer, seq: seq, at: now)
        }
    }

    /// The rows delivery consumers gave up on, newest first (only `consumer`'s when given).
    public func deadLetters(of consumer: String? = nil, limit: Int = 100) async throws(ChatError) -> [DeadLetter] {
        try Self.checkNotificationLimit(limit)
        return try await reading { tx in try tx.deadLetters(consumer: consumer, limit: limit) }
    }
}
