import PerchChat

extension ChatService {
    /// Whether pinning is on for this app (`features.pin`).
    public func isPinMessageEnabled() -> Bool { settings.pinEnabled }

    /// Whether saving is on for this app (`features.save`).
    public func isSaveMessageEnabled() -> Bool { settings.saveEnabled }

    /// Pins a message for everyone in its conversation. Re-pinning is idempotent: the message stays
    /// pinned (keeping its first `pinnedAt`) and the caller becomes `pinnedBy`. Pinning as
    /// `app_system` (the host does so for bots with `system: true`) reads `pinnedBy == "app_system"`;
    /// `actor` names who did it in the events' ``ChatEvent/actor`` (the bot behind a system pin;
    /// by default `identity`).
    /// - Throws: `ERR_FEATURE_NOT_ACCESSIBLE`, `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`,
    ///   `ERR_MESSAGE_ACTION_NOT_ALLOWED`, `ERR_PERMISSION_DENIED`, `ERR_PINNED_MESSAGES_LIMIT_EXCEEDED {limit}`.
    ///
    /// With `whenFull: .unpinOldest` a conversation at its limit makes room instead of refusing: the
    /// oldest pins made as `identity` there are unpinned (each announced as `onMessageUnpinned`) in
    /// the same transaction, so the conversation keeps its newest pins. Pins made by anyone else
    /// stay; when `identity`'s own do not make room, the pin is refused and nothing is unpinned.
    public func pin(_ id: Int64, as identity: String, by actor: String? = nil, whenFull: PinOverflow = .refuse)
        async throws(ChatError) -> Message
    {
        guard settings.pinEnabled else { throw ChatError(.featureNotAccessible, ["feature": "pin"]) }
        let now = clock.now()
        let limit = settings.pinsPerConversation
        let actor = actor ?? identity
        return try await writing { tx in
            var (message, who) = try Self.lookup(tx, id, by: identity)
            try PinRules.checkPin(message, id: id, by: who)
            var count = try tx.pinnedCount(conversationId: message!.conversationId)
            let release = PinRules.pinsToRelease(pinned: count, limit: limit, alreadyPinned: message!.isPinned)
            if whenFull == .unpinOldest, release > 0 {
                for var old in try tx.oldestPinnedMessages(
                    conversationId: message!.conversationId, pinnedBy: identity, limit: release)
                {
                    old.pinnedAt = 0
                    old.pinnedBy = ""
                    try tx.updateMessage(old)
                    try Self.announce(tx, .messageUnpinned, old, by: actor, at: now)
                    count -= 1
                }
            }
            try PinRules.checkPinLimit(pinned: count, limit: limit, alreadyPinned: message!.isPinned)
            if !message!.isPinned { message!.pinnedAt = now }
            message!.pinnedBy = identity
            try tx.updateMessage(message!)
            try Self.announce(tx, .messagePinned, message!, by: actor, at: now)
            return try Self.decorate(tx, [message!], for: identity)[0]
        }
    }

    /// Unpins a message: anyone allowed to pin may unpin anyone's pin. `pinnedAt`/`pinnedBy` go
    /// back to 0/"". Unpinning a message that is not pinned succeeds and announces nothing.
    /// - Throws: as ``pin(_:as:)`` but the limit.
    public func unpin(_ id: Int64, as actor: String) async throws(ChatError) -> Message {
        guard settings.pinEnabled else { throw ChatError(.featureNotAccessible, ["feature": "pin"]) }
        let now = clock.now()
        return try await writing { tx in
            var (message, who) = try Self.lookup(tx, id, by: actor)
            try PinRules.checkPin(message, id: id, by: who)
            if message!.isPinned {
                message!.pinnedAt = 0
                message!.pinnedBy = ""
                try tx.updateMessage(message!)
                try Self.announce(tx, .messageUnpinned, message!, by: actor, at: now)
            }
            return try Self.decorate(tx, [message!], for: actor)[0]
        }
    }

    /// Saves a message privately for `uid`. Idempotent. `onMessageSaved` reaches the user's other
    /// sessions only: not `session`, and no other user.
    /// - Throws: `ERR_FEATURE_NOT_ACCESSIBLE`, `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`,
    ///   `ERR_MESSAGE_ACTION_NOT_ALLOWED`, `ERR_SAVED_MESSAGES_LIMIT_EXCEEDED {limit}`.
    public func save(_ id: Int64, as uid: String, session: String? = nil) async throws(ChatError) -> Message {
        guard settings.saveEnabled else { throw ChatError(.featureNotAccessible, ["feature": "save"]) }
        let now = clock.now()
        let limit = settings.savesPerUser
        return try await writing { tx in
            let (message, who) = try Self.lookup(tx, id, by: uid)
            try PinRules.checkSave(message, id: id, by: who)
            let already = try tx.savedAt(uid: uid, messageIds: [id])[id] != nil
            try PinRules.checkSaveLimit(saved: try tx.liveSaveCount(uid: uid), limit: limit, alreadySaved: already)
            if !already {
                try tx.setSaved(uid: uid, messageId: id, at: now)
                try Self.announcePrivately(tx, .messageSaved, message!, by: uid, except: session, at: now)
            }
            return try Self.decorate(tx, [message!], for: uid)[0]
        }
    }

    /// Unsaves a message for `uid`; `savedAt` goes back to 0. Idempotent.
    /// - Throws: `ERR_FEATURE_NOT_ACCESSIBLE`, `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`.
    public func unsave(_ id: Int64, as uid: String, session: String? = nil) async throws(ChatError) -> Message {
        guard settings.saveEnabled else { throw ChatError(.featureNotAccessible, ["feature": "save"]) }
        let now = clock.now()
        return try await writing { tx in
            guard let message = try tx.message(id), !message.isDeleted else { throw ChatError.messageNotFound(id) }
            try AccessRules.checkRead(try Self.participation(tx, uid: uid, towards: message), messageId: id)
            if try tx.savedAt(uid: uid, messageIds: [id])[id] != nil {
                try tx.setSaved(uid: uid, messageId: id, at: nil)
                try Self.announcePrivately(tx, .messageUnsaved, message, by: uid, except: session, at: now)
            }
            return try Self.decorate(tx, [message], for: uid)[0]
        }
    }

    /// The pinned messages of one conversation (`uid` or `guid` with `pinned: true`) that pass the
    /// request's other filters, newest pin first; a pinned reply carries its thread's root in
    /// `parentMessage`. `messageId` continues after that message of a previous page.
    func fetchPinned(_ request: MessagesRequest, as viewer: String) async throws(ChatError) -> MessagePage {
        guard request.uid != nil || request.guid != nil else {
            throw .badRequest("pinned", "pinned messages are fetched per conversation: give uid or guid")
        }
        let filter = try request.filter()
        return try await reading { tx in
            _ = try Self.requireUser(tx, viewer)
            let conversation = try Self.conversation(tx, of: request, viewer: viewer)
            var cursor: (Int64, Int64)?
            if let after = request.messageId, let message = try tx.message(after), message.isPinned {
                cursor = (message.pinnedAt, message.id)
            }
            var rows = try tx.pinnedMessages(
                conversationId: conversation, matching: filter, limit: request.limit + 1, after: cursor)
            let hasMore = rows.count > request.limit
            rows = Array(rows.prefix(request.limit))
            var messages = try Self.decorate(tx, rows, for: viewer)
            let parents = try tx.messages(rows.filter(\.isReply).map(\.parentMessageId))
            for index in messages.indices where messages[index].isReply {
                messages[index].parentMessage = parents[messages[index].parentMessageId].map(MessagePreview.init)
            }
            return MessagePage(messages: messages, hasMore: hasMore)
        }
    }

    /// The viewer's saved messages across conversations (`saved: true`, no uid or guid) that pass
    /// the request's other filters, newest save first, each carrying `receiverUid` and
    /// `receiverType`. Deleted or no longer accessible messages are left out.
    func fetchSaved(_ request: MessagesRequest, as viewer: String) async throws(ChatError) -> MessagePage {
        guard request.uid == nil, request.guid == nil, request.parentMessageId == nil else {
            throw .badRequest("saved", "saved messages span every conversation: give no uid, guid or thread")
        }
        guard !request.pinned else { throw .badRequest("saved", "give pinned or saved, not both") }
        let filter = try request.filter()
        return try await reading { tx in
            _ = try Self.requireUser(tx, viewer)
            var cursor: (Int64, Int64)?
            if let after = request.messageId, let time = try tx.savedAt(uid: viewer, messageIds: [after])[after] {
                cursor = (time, after)
            }
            var rows = try tx.savedMessages(uid: viewer, matching: filter, limit: request.limit + 1, after: cursor)
            let hasMore = rows.count > request.limit
            rows = Array(rows.prefix(request.limit))
            return MessagePage(messages: try Self.decorate(tx, rows, for: viewer), hasMore: hasMore)
        }
    }

    /// Appends a conversation-wide event about `message` (and the reaction it is about).
    static func announce(
        _ tx: any ChatWriteTransaction, _ name: EventName, _ message: Message, reaction: Reaction? = nil,
        by actor: String? = nil, at now: Int64, excludedSession: String? = nil
    ) throws {
        let event = ChatEvent(
            name: name, conversationId: message.conversationId, createdAt: now, message: try decorateLive(tx, message),
            reaction: reaction, actor: actor)
        var audience = audience(of: message)
        audience.excludedSession = excludedSession
        _ = try tx.appendEvent(event, audience: audience)
    }

    /// Appends an event of `uid`'s doing for that user's sessions, leaving out the session that
    /// caused it.
    static func announcePrivately(
        _ tx: any ChatWriteTransaction, _ name: EventName, _ message: Message,
        by uid: String, except session: String?, at now: Int64
    ) throws {
        // The event reaches the saver alone, so it carries the saver's `savedAt` (0 after an unsave).
        var live = try decorateLive(tx, message)
        live.savedAt = name == .messageSaved ? now : 0
        let event = ChatEvent(
            name: name, conversationId: message.conversationId, createdAt: now, message: live, actor: uid)
        _ = try tx.appendEvent(event, audience: EventAudience(users: [uid], excludedSession: session))
    }
}
