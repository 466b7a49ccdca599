import PerchChat

extension ChatService {
    /// Sends a message as `sender`.
    ///
    /// A draft with a `muid` the sender used before returns that first message and creates nothing.
    /// Mentions (`<@uid:UID>`) are kept only for users who can see the conversation.
    /// - Throws: `ERR_EMPTY_MESSAGE_TEXT`, `ERR_INVALID_MESSAGE_DATA`, `ERR_BAD_REQUEST`, `ERR_UID_NOT_FOUND`,
    ///   `ERR_GUID_NOT_FOUND`, `ERR_GROUP_NOT_JOINED`, `ERR_BANNED_GROUPMEMBER`, and for replies and quotes
    ///   `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_WRONG_MESSAGE_THREAD`, `ERR_MESSAGE_THREAD_NESTING`,
    ///   `ERR_MESSAGE_ACTION_NOT_ALLOWED`.
    ///
    /// `session`: the sender's session (connection) the message is sent from, which does not get it
    /// as an event, as CometChat's sender does not (the sender's other sessions do).
    public func send(_ draft: MessageDraft, as sender: String, session: String? = nil) async throws(ChatError)
        -> Message
    {
        try await writing(try sendBody(draft, as: sender, session: session))
    }

    /// Queues a send for the store's writer before returning (so sends queued one after another
    /// are stored in that order) and answers a handle whose ``PendingSend/message`` waits for the
    /// commit. Checks that need no store are made now and throw now. `callerGoesOn`: the caller
    /// has more to do at once (a bot with more events in hand), so the commit never runs on its
    /// thread; otherwise an idle store may commit right here. `session`: as for ``send(_:as:session:)``.
    public func queueSend(
        _ draft: MessageDraft, as sender: String, session: String? = nil, callerGoesOn: Bool = false
    ) throws(ChatError) -> PendingSend {
        PendingSend(
            pending: store.submit(try sendBody(draft, as: sender, session: session), callerGoesOn: callerGoesOn),
            service: self)
    }

    func sendBody(_ draft: MessageDraft, as sender: String, session: String? = nil) throws(ChatError)
        -> @Sendable (any ChatWriteTransaction) throws -> Message
    {
        try MessageRules.checkContent(draft, maximumTextBytes: settings.messageTextBytes)
        guard draft.parentMessageId >= 0, draft.quotedMessageId >= 0 else {
            throw .badRequest("parentMessageId", "must not be negative")
        }
        var normalized = draft
        normalized.attachments = try AttachmentRules.normalized(draft.attachments).attachments
        let draft = normalized
        let now = clock.now()
        let defaults = settings.notificationDefaults
        return { tx in
            _ = try Self.requireUser(tx, sender)
            if !draft.muid.isEmpty, let first = try tx.message(sender: sender, muid: draft.muid) {
                return try Self.decorate(tx, [first], for: sender)[0]
            }
            // A message just made has no save and no subscription yet: its live form (with the quote
            // preview) plus the sender's mention flag is the sender's view, with no more lookups.
            var message = try Self.insert(
                tx, draft, from: sender, at: now, category: draft.category, defaults: defaults, session: session)
            message.hasMentionedMe = message.mentionedUids.contains(sender)
            return message
        }
    }

    /// The checks of a send that read the store: the receiver, the sender's right to post there, the
    /// thread's root and the quoted message; answers the conversation, the root and the mentions
    /// kept.
    static func check(_ tx: any ChatReadTransaction, _ draft: MessageDraft, from sender: String) throws
        -> (conversationId: String, parent: Message?, mentioned: [String])
    {
        switch draft.receiver {
        case .user(let uid): _ = try requireUser(tx, uid)
        case .group(let guid): _ = try requireGroup(tx, guid)
        }
        let actor = try participation(tx, uid: sender, in: draft.receiver, sender: sender)
        try AccessRules.checkSend(actor, guid: draft.receiver.type == .group ? draft.receiver.id : nil)
        let conversationId = draft.receiver.conversationId(sender: sender)
        var parent: Message?
        if draft.parentMessageId != 0 {
            parent = try tx.message(draft.parentMessageId)
            try ThreadRules.checkReply(to: parent, parentId: draft.parentMessageId, conversationId: conversationId)
        }
        if draft.quotedMessageId != 0 {
            let quoted = try tx.message(draft.quotedMessageId)
            try QuoteRules.checkQuote(of: quoted, quotedId: draft.quotedMessageId, conversationId: conversationId)
        }
        let mentioned = try visibleMentions(tx, in: draft.text, receiver: draft.receiver, sender: sender)
        return (conversationId, parent, mentioned)
    }

    /// Makes every check ``send(_:as:session:)`` makes, and writes nothing (`perch dry-run`): the
    /// mentions the message would keep.
    /// - Throws: as ``send(_:as:session:)``.
    public func checkSend(_ draft: MessageDraft, as sender: String) async throws(ChatError) -> [String] {
        try MessageRules.checkContent(draft, maximumTextBytes: settings.messageTextBytes)
        guard draft.parentMessageId >= 0, draft.quotedMessageId >= 0 else {
            throw .badRequest("parentMessageId", "must not be negative")
        }
        _ = try AttachmentRules.normalized(draft.attachments)
        return try await reading { tx in
            _ = try Self.requireUser(tx, sender)
            return try Self.check(tx, draft, from: sender).mentioned
        }
    }

    /// Validates, inserts and announces one message inside `tx` (to everyone who can see it but the
    /// sender's `session`); returns its live form.
    static func insert(
        _ tx: any ChatWriteTransaction, _ draft: MessageDraft, from sender: String, at now: Int64,
        category: MessageCategory, defaults: NotificationPreferences, session: String?
    ) throws -> Message {
        let (conversationId, parent, mentioned) = try check(tx, draft, from: sender)
        // An upload is attached only by someone who may read it: a message would otherwise open it
        // to everyone who reads the message.
        let uploads = try AttachmentRules.normalized(draft.attachments).uploads
        for id in uploads { _ = try readableMedia(tx, id, as: sender) }
        var message = Message(
            muid: draft.muid, conversationId: conversationId, sender: sender, receiverType: draft.receiver.type,
            receiverUid: draft.receiver.id, type: draft.type, category: category, text: draft.text, data: draft.data,
            attachments: draft.attachments, metadata: draft.metadata, tags: draft.tags, mentionedUids: mentioned,
            parentMessageId: draft.parentMessageId, quotedMessageId: draft.quotedMessageId, sentAt: now,
            updatedAt: now)
        message.id = try tx.insertMessage(message)
        for id in uploads { try tx.addMediaReference(id, messageId: message.id) }
        // A bot's message is quiet unless its action says `notify: true`: it subscribes nobody
        // (the bot included) and notifies nobody, so an answer makes no thread noise.
        let notifies = try draft.notify ?? (tx.user(sender)?.role != User.botRole)
        var subscribers: Set<String> = []
        if let parent {
            try tx.adjustReplyCount(of: parent.id, by: 1, updatedAt: now)
            if notifies {
                subscribers = try subscribeOnReply(tx, parent: parent, reply: message, at: now)
            } else {
                try tx.touchThread(parent.id, at: now)
            }
        }
        if notifies { try route(tx, message, subscribers: subscribers, defaults: defaults, at: now) }
        let live = try decorateLive(tx, message, reactions: false)
        let event = ChatEvent(
            name: EventName.received(message), conversationId: conversationId, createdAt: now, message: live)
        var audience = audience(of: message)
        audience.excludedSession = session
        _ = try tx.appendEvent(event, audience: audience)
        return live
    }

    /// The uids mentioned in `text` who can see the conversation (and exist).
    static func visibleMentions(_ tx: any ChatReadTransaction, in text: String?, receiver: Receiver, sender: String)
        throws -> [String]
    {
        try Mentions.extract(from: text).filter { uid in
            guard try tx.user(uid) != nil else { return false }
            return try participation(tx, uid: uid, in: receiver, sender: sender).canRead
        }
    }

    /// Edits a message's text (text messages), data (custom messages) or metadata. Sender only.
    /// - Throws: `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`, `ERR_MESSAGE_NOT_A_SENDER`,
    ///   `ERR_MESSAGE_ACTION_NOT_ALLOWED`, `ERR_EMPTY_MESSAGE_TEXT`, `ERR_BAD_REQUEST`.
    public func edit(
        _ id: Int64, text: String? = nil, data: JSONValue? = nil, metadata: JSONValue? = nil,
        as editor: String
    ) async throws(ChatError) -> Message {
        if let text, text.utf8.count > settings.messageTextBytes {
            throw .badRequest("text", "longer than \(settings.messageTextBytes) bytes")
        }
        let now = clock.now()
        return try await writing { tx in
            var (message, actor) = try Self.lookup(tx, id, by: editor)
            try MessageRules.checkEdit(message, id: id, by: actor)
            if let text {
                guard message!.type == MessageType.text || message!.category == .custom else {
                    throw ChatError.badRequest("text", "only text and custom messages have text")
                }
                guard !text.allSatisfy(\.isWhitespace) || message!.category == .custom else {
                    throw ChatError(.emptyMessageText)
                }
                message!.text = text
                message!.mentionedUids = try Self.visibleMentions(
                    tx, in: text, receiver: message!.receiver, sender: message!.sender)
            }
            if let data {
                guard message!.category == .custom else {
                    throw ChatError.badRequest("data", "only custom messages have data")
                }
                message!.data = data
            }
            if let metadata { message!.metadata = metadata }
            message!.editedAt = now
            message!.editedBy = editor
            message!.updatedAt = now
            try tx.updateMessage(message!)
            let event = ChatEvent(
                name: .messageEdited, conversationId: message!.conversationId, createdAt: now,
                message: try Self.decorateLive(tx, message!), actor: editor)
            _ = try tx.appendEvent(event, audience: Self.audience(of: message!))
            return try Self.decorate(tx, [message!], for: editor)[0]
        }
    }

    /// Deletes a message (soft: `deletedAt`, `deletedBy`; its content is cleared). The sender may
    /// delete their own message unless live quote replies of it exist; a group moderator and above,
    /// and `app_system`, may delete any. A deleted pinned message is unpinned; a deleted reply no
    /// longer counts in its parent's `replyCount`.
    /// - Throws: `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`, `ERR_MESSAGE_NOT_A_SENDER`,
    ///   `ERR_MESSAGE_ACTION_NOT_ALLOWED {quoteReplyCount}`.
    public func delete(_ id: Int64, as deleter: String) async throws(ChatError) -> Message {
        let now = clock.now()
        return try await writing { tx in
            guard var message = try tx.message(id) else { throw ChatError.messageNotFound(id) }
            let actor = try Self.participation(tx, uid: deleter, towards: message)
            let quotes = message.isDeleted ? 0 : try tx.liveQuoteReplyCount(of: id)
            try MessageRules.checkDelete(message, id: id, by: actor, liveQuoteReplies: quotes)
            Self.clearForDelete(&message, by: deleter, at: now)
            try tx.updateMessage(message)
            if message.isReply { try tx.adjustReplyCount(of: message.parentMessageId, by: -1, updatedAt: now) }
            try Self.afterDelete(tx, message, at: now)
            let event = ChatEvent(
                name: .messageDeleted, conversationId: message.conversationId, createdAt: now,
                message: try Self.decorateLive(tx, message), actor: deleter)
            _ = try tx.appendEvent(event, audience: Self.audience(of: message))
            return try Self.decorate(tx, [message], for: deleter)[0]
        }
    }

    /// One message, for someone who can see it, with the viewer's fields.
    /// - Throws: `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`.
    public func message(_ id: Int64, as viewer: String) async throws(ChatError) -> Message {
        try await reading { tx in
            guard let message = try tx.message(id) else { throw ChatError.messageNotFound(id) }
            try AccessRules.checkRead(try Self.participation(tx, uid: viewer, towards: message), messageId: id)
            return try Self.decorate(tx, [message], for: viewer)[0]
        }
    }

    /// One message for someone who can see it, as ``message(_:as:)``, with how many live quote
    /// replies it has anywhere in its conversation (its threads included): its sender may not
    /// delete it while any is left.
    /// - Throws: `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`.
    public func messageWithQuoteReplies(_ id: Int64, as viewer: String) async throws(ChatError)
        -> (message: Message, quoteReplies: Int)
    {
        try await reading { tx in
            guard let message = try tx.message(id) else { throw ChatError.messageNotFound(id) }
            try AccessRules.checkRead(try Self.participation(tx, uid: viewer, towards: message), messageId: id)
            let quotes = message.isDeleted ? 0 : try tx.liveQuoteReplyCount(of: id)
            return (try Self.decorate(tx, [message], for: viewer)[0], quotes)
        }
    }

    /// Fills the per-viewer fields and the quoted-message previews of fetched messages.
    static func decorate(_ tx: any ChatReadTransaction, _ messages: [Message], for viewer: String) throws -> [Message] {
        guard !messages.isEmpty else { return [] }
        let ids = messages.map(\.id)
        let saved = try tx.savedAt(uid: viewer, messageIds: ids)
        let subscribed = try tx.subscribedThreads(uid: viewer, parentIds: messages.filter { !$0.isReply }.map(\.id))
        let quoted = try tx.messages(messages.map(\.quotedMessageId).filter { $0 != 0 })
        let reactions = try tx.reactionCounts(messageIds: ids, viewer: viewer)
        return messages.map { message in
            var copy = message
            copy.reactions = reactions[message.id] ?? []
            copy.savedAt = saved[message.id] ?? 0
            copy.hasMentionedMe = message.mentionedUids.contains(viewer)
            copy.threadSubscribed = !message.isReply && subscribed.contains(message.id)
            if message.quotedMessageId != 0, let original = quoted[message.quotedMessageId] {
                copy.quotedMessage = MessagePreview(original)
            }
            return copy
        }
    }

    /// A message as a live payload: per-viewer fields "not reported", the quote preview and the
    /// reaction counts filled (`reactions: false` for a new message, which has none yet).
    static func decorateLive(_ tx: any ChatReadTransaction, _ message: Message, reactions: Bool = true) throws
        -> Message
    {
        var copy = message.withoutViewerFields
        if reactions { copy.reactions = try tx.reactionCounts(messageIds: [message.id], viewer: nil)[message.id] ?? [] }
        if message.quotedMessageId != 0, let original = try tx.message(message.quotedMessageId) {
            copy.quotedMessage = MessagePreview(original)
        }
        return copy
    }

    /// A deleted message as it is kept: who deleted it and when, its content cleared and its pin
    /// gone.
    static func clearForDelete(_ message: inout Message, by deleter: String, at now: Int64) {
        message.deletedAt = now
        message.deletedBy = deleter
        message.updatedAt = now
        message.text = nil
        message.data = nil
        message.attachments = []
        message.metadata = nil
        message.mentionedUids = []
        message.pinnedAt = 0
        message.pinnedBy = ""
    }

    /// What else a delete touches: its saves and reactions go (a deleted message leaves nothing
    /// behind in the saved lists; its pin was cleared with the message), and a deleted root takes
    /// its thread out of every inbox.
    static func afterDelete(_ tx: any ChatWriteTransaction, _ message: Message, at now: Int64) throws {
        try tx.removeSaves(of: message.id)
        try tx.removeReactions(of: message.id)
        if !message.isReply { try tx.removeSubscriptions(of: message.id) }
    }
}

/// A send queued with ``ChatService/queueSend(_:as:)``.
public struct PendingSend: Sendable {
    let pending: PendingWrite<Message>
    let service: ChatService

    /// Calls `observer` with the message as soon as it is committed (on the committing thread:
    /// keep it quick); not at all when the send fails.
    public func whenSent(_ observer: @escaping @Sendable (Message) -> Void) {
        pending.observe { result in
            if case .success(let message) = result { observer(message) }
        }
    }

    /// The sent message once committed.
    /// - Throws: what ``ChatService/send(_:as:)`` throws.
    public var message: Message {
        get async throws(ChatError) {
            do {
                return try await pending.value
            } catch {
                throw service.wireSafeError(error)
            }
        }
    }
}
