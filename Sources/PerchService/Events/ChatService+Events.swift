import PerchChat

extension ChatService {
    /// The events `uid` may see after `seq`, as seen from `session`: group events of the groups the
    /// user is in now, and events addressed to the user; a user's own save or unsave is left out
    /// for the session that made it.
    public func events(for uid: String, session: String? = nil, after seq: Int64, limit: Int = 256)
        async throws(ChatError) -> EventPage
    {
        guard (1...10_000).contains(limit) else { throw .badRequest("limit", "must be 1–10000") }
        return try await wireSafely { try await store.events(for: uid, session: session, after: seq, limit: limit) }
    }

    /// Returns once an event after `seq` is committed (or the store closes, or the task is cancelled).
    /// With a `uid`, the wait may go on through events that user cannot see, events left out for
    /// `session`, and, with `ignoringOwnMessages`, events whose message `uid` sent (others'
    /// reactions to it excepted); with `endingAtTick` it also ends at the store's poll tick
    /// (``ChatStore/waitForEvents(after:for:session:ignoringOwnMessages:endingAtTick:)``).
    public func waitForEvents(
        after seq: Int64, for uid: String? = nil, session: String? = nil, ignoringOwnMessages: Bool = false,
        endingAtTick: Bool = false
    ) async {
        await store.waitForEvents(
            after: seq, for: uid, session: session, ignoringOwnMessages: ignoringOwnMessages, endingAtTick: endingAtTick
        )
    }

    /// The last sequence a durable consumer acknowledged (0 when it never did).
    public func cursor(consumer: String) async throws(ChatError) -> Int64 {
        try await reading { tx in try tx.cursor(consumer: consumer) ?? 0 }
    }

    /// Records that `consumer` has handled everything up to `seq`.
    public func acknowledge(consumer: String, seq: Int64) async throws(ChatError) {
        let now = clock.now()
        try await writing { tx in
            try tx.setCursor(consumer: consumer, seq: seq, at: now)
        }
    }

    /// Marks the cursors of `consumers` (still running) and the delivery cursors of `deliveries`
    /// (webhooks and feeds still configured) as saved now, their sequences unchanged: the
    /// retention then holds the event log and the outbox back for them, however long they have
    /// slept without saving, a host's long stop included (``pruneEventLog(olderThan:batch:)``).
    public func keepCursors(_ consumers: [String], deliveries: [String] = []) async throws(ChatError) {
        let now = clock.now()
        try await writing { tx in
            try tx.keepCursors(consumers, at: now)
            try tx.keepDeliveryCursors(deliveries, at: now)
        }
    }

    /// Follows `uid`'s events after `seq`, as a session: pages through the backlog, then waits for
    /// new commits, handing each page to `deliver` (an empty one too) until `deliver` answers
    /// false or the task is cancelled. Only the first page can have ``EventPage/missed`` (a stream
    /// resumed from before the log's start). With `notifications`, each page also carries the
    /// user's notifications routed after the outbox row `notificationsAfter` (nil: the newest when
    /// the stream begins; not `seq`: a client reads what it missed from
    /// ``notifications(for:after:limit:unreadOnly:)``); the outbox is read only when the store says
    /// something new is there for the user.
    /// - Throws: what reading a page throws (a store failure).
    public func followEvents(
        for uid: String, session: String? = nil, after seq: Int64, notifications: Bool = false,
        notificationsAfter: Int64? = nil, _ deliver: (EventPage) -> Bool
    ) async throws(ChatError) {
        var cursor = seq
        var notified: Int64 = 0
        // The first look reads the outbox whatever the watermark says: rows committed before the
        // watch began are not in it.
        var firstLook = true
        if notifications {
            store.watchNotifications(of: uid)
            if let notificationsAfter {
                notified = notificationsAfter
            } else {
                notified = try await newestNotification(of: uid)
            }
        }
        defer { if notifications { store.unwatchNotifications(of: uid) } }
        while !Task.isCancelled {
            // A short page scanned everything committed when it was read (its `scannedThrough` is
            // the snapshot's newest event): wait for the user's next event, which returns at once
            // when more was committed since.
            var page = try await events(for: uid, session: session, after: cursor)
            if notifications {
                page.notifications = try await newNotifications(for: uid, page, after: &notified, look: firstLook)
                firstLook = false
            }
            guard deliver(page) else { return }
            cursor = max(cursor, page.scannedThrough)
            if page.isFull { continue }
            await waitForEvents(after: cursor, for: uid, session: session)
        }
    }

    /// The sequence of the user's newest notification (0: none): where a stream of their
    /// notifications starts.
    public func newestNotification(of uid: String) async throws(ChatError) -> Int64 {
        try await reading { tx in
            try tx.latestNotifications(for: uid, before: nil, limit: 1, unreadOnly: false).first?.seq ?? 0
        }
    }

    /// The user's notifications after `cursor` that a stream has not shown yet, moving `cursor`
    /// past them. The store's watermark is read before the outbox: every row up to it is committed,
    /// so the cursor may move to it even when the rows read end earlier. A store without one is
    /// read when the page brings someone else's new message.
    func newNotifications(for uid: String, _ page: EventPage, after cursor: inout Int64, look: Bool = false)
        async throws(ChatError) -> [NotificationRecord]
    {
        let watermark = store.notifiedThrough(uid)
        if let watermark {
            guard watermark > cursor || look else { return [] }
        } else if !look {
            guard page.events.contains(where: { $0.name.isNewMessage && $0.message?.sender != uid }) else { return [] }
        }
        let records = try await notifications(for: uid, after: cursor, limit: 1000).records
        cursor = max(cursor, watermark ?? 0, records.last?.seq ?? 0)
        return records
    }

    /// A live stream of `uid`'s events after `seq`, as a session (``followEvents(for:session:after:_:)``).
    /// Ends when the task is cancelled; throws on a store failure.
    public func eventStream(for uid: String, session: String? = nil, after seq: Int64)
        -> AsyncThrowingStream<ChatEvent, any Error>
    {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await followEvents(for: uid, session: session, after: seq) { page in
                        for event in page.events { continuation.yield(event) }
                        return true
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

extension ChatService {
    /// A bot's plugin value (the host's per-bot key-value store).
    public func pluginValue(bot: String, key: String) async throws(ChatError) -> String? {
        try await reading { tx in try tx.pluginValue(bot: bot, key: key) }
    }

    /// Sets or (with nil) removes a bot's plugin value.
    public func setPluginValue(bot: String, key: String, value: String?) async throws(ChatError) {
        guard key.utf8.count <= 256, (value?.utf8.count ?? 0) <= 1 << 20 else {
            throw .badRequest("key", "keys up to 256 bytes, values up to 1 MiB")
        }
        try await writing { tx in
            try tx.setPluginValue(bot: bot, key: key, value: value)
        }
    }

    /// The scope of `uid` in group `guid`, or nil when not a member.
    public func scope(of uid: String, in guid: String) async throws(ChatError) -> GroupMemberScope? {
        try await reading { tx in try tx.member(guid: guid, uid: uid)?.scope }
    }
}
