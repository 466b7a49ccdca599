/// Who may edit and delete a message.
public enum MessageRules {
    /// Checks an edit: only the sender, on a live, non-action message they can still see.
    /// - Throws: `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`, `ERR_MESSAGE_NOT_A_SENDER`,
    ///   `ERR_MESSAGE_ACTION_NOT_ALLOWED`.
    public static func checkEdit(_ message: Message?, id: Int64, by actor: Participation) throws(ChatError) {
        guard let message, !message.isDeleted else { throw .messageNotFound(id) }
        try AccessRules.checkRead(actor, messageId: id)
        guard message.sender == actor.uid else { throw ChatError(.messageNotASender, ["messageId": .int(id)]) }
        guard message.category != .action else {
            throw ChatError(
                .messageActionNotAllowed, ["messageId": .int(id), "reason": "action messages cannot be edited"])
        }
    }

    /// Checks a delete. The sender may delete their own message unless live quote replies of it
    /// exist (the delete guard: docs/chat-model.md, "Threads and quote replies"); a group owner, admin or moderator, and `app_system`, may
    /// delete any message (moderation), quote replies or not.
    /// - Throws: `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`, `ERR_MESSAGE_NOT_A_SENDER`,
    ///   `ERR_MESSAGE_ACTION_NOT_ALLOWED {quoteReplyCount}`.
    public static func checkDelete(_ message: Message?, id: Int64, by actor: Participation, liveQuoteReplies: Int)
        throws(ChatError)
    {
        guard let message, !message.isDeleted else { throw .messageNotFound(id) }
        try AccessRules.checkRead(actor, messageId: id)
        if actor.isSystem || (actor.scope?.canModerate ?? false) { return }
        guard message.sender == actor.uid else { throw ChatError(.messageNotASender, ["messageId": .int(id)]) }
        guard liveQuoteReplies == 0 else {
            throw ChatError(
                .messageActionNotAllowed, ["messageId": .int(id), "quoteReplyCount": .int(Int64(liveQuoteReplies))])
        }
    }

    /// Checks the content of a new message.
    /// - Throws: `ERR_EMPTY_MESSAGE_TEXT`, `ERR_INVALID_MESSAGE_DATA`, `ERR_BAD_REQUEST`.
    public static func checkContent(_ draft: MessageDraft, maximumTextBytes: Int) throws(ChatError) {
        switch draft.category {
        case .message:
            if draft.type == MessageType.text {
                guard let text = draft.text, !text.allSatisfy(\.isWhitespace) else {
                    throw ChatError(.emptyMessageText)
                }
            } else if MessageType.media.contains(draft.type) {
                guard !draft.attachments.isEmpty else {
                    throw ChatError(
                        .invalidMessageData, ["reason": .string("a \(draft.type) message needs an attachment")])
                }
                for attachment in draft.attachments where attachment.url.isEmpty || attachment.name.isEmpty {
                    throw ChatError(.invalidMessageData, ["reason": "an attachment needs a name and a url"])
                }
            } else {
                throw ChatError.badRequest("type", "category message takes text, image, video, audio or file")
            }
        case .custom:
            guard !draft.type.isEmpty, draft.type.utf8.count <= 100 else {
                throw ChatError.badRequest("type", "a custom message needs a type of 1–100 characters")
            }
        case .action:
            throw ChatError.badRequest("category", "action messages are made by the service, not sent")
        }
        if let text = draft.text, text.utf8.count > maximumTextBytes {
            throw ChatError.badRequest("text", "longer than \(maximumTextBytes) bytes")
        }
        guard draft.muid.utf8.count <= 200 else { throw ChatError.badRequest("muid", "longer than 200 bytes") }
        guard draft.tags.count <= 25, draft.tags.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 100 }) else {
            throw ChatError.badRequest("tags", "at most 25 tags of 1–100 characters")
        }
    }
}

/// A message as a client asks to send it.
public struct MessageDraft: Sendable, Hashable {
    public var receiver: Receiver
    public var type: String
    public var category: MessageCategory
    public var text: String?
    public var data: JSONValue?
    public var attachments: [Attachment]
    public var metadata: JSONValue?
    public var tags: [String]
    public var muid: String
    public var parentMessageId: Int64
    public var quotedMessageId: Int64
    /// Whether the message notifies anyone and subscribes anyone to its thread: nil leaves it to
    /// the sender (a person's message does, a bot's does not); a bot's action sets it with
    /// `notify: true`.
    public var notify: Bool?

    public init(
        to receiver: Receiver, text: String? = nil, type: String = MessageType.text,
        category: MessageCategory = .message, data: JSONValue? = nil, attachments: [Attachment] = [],
        metadata: JSONValue? = nil, tags: [String] = [], muid: String = "", parentMessageId: Int64 = 0,
        quotedMessageId: Int64 = 0
    ) {
        self.receiver = receiver
        self.type = type
        self.category = category
        self.text = text
        self.data = data
        self.attachments = attachments
        self.metadata = metadata
        self.tags = tags
        self.muid = muid
        self.parentMessageId = parentMessageId
        self.quotedMessageId = quotedMessageId
    }
}
