/// A message, with every field of CometChat's BaseMessage that Perch serves.
///
/// Timestamps are epoch seconds; 0 means "not set", so the presence of a timestamp is the boolean
/// (`pinnedAt != 0` is "pinned"). `savedAt`, `hasMentionedMe` and `threadSubscribed` are per viewer:
/// a fetch fills them for the viewer who fetched; a live payload carries them as 0/false, meaning
/// "not reported".
public struct Message: Sendable, Hashable, Codable {
    /// The fields, shared by copies of a message until one of them changes a field (copy on write):
    /// a message is passed through the event cache, each reader's page, a bot's facts and the sends'
    /// results, and as 30 fields held inline each of those copies was a 514-byte move and a retain
    /// of every string and array in it.
    @usableFromInline var storage: Storage

    @inlinable public var id: Int64 {
        get { storage.fields.id }
        _modify { yield &uniqueFields.id }
    }
    @inlinable public var muid: String {
        get { storage.fields.muid }
        _modify { yield &uniqueFields.muid }
    }
    @inlinable public var conversationId: String {
        get { storage.fields.conversationId }
        _modify { yield &uniqueFields.conversationId }
    }
    @inlinable public var sender: String {
        get { storage.fields.sender }
        _modify { yield &uniqueFields.sender }
    }
    @inlinable public var receiverType: ReceiverType {
        get { storage.fields.receiverType }
        _modify { yield &uniqueFields.receiverType }
    }
    @inlinable public var receiverUid: String {
        get { storage.fields.receiverUid }
        _modify { yield &uniqueFields.receiverUid }
    }
    @inlinable public var type: String {
        get { storage.fields.type }
        _modify { yield &uniqueFields.type }
    }
    @inlinable public var category: MessageCategory {
        get { storage.fields.category }
        _modify { yield &uniqueFields.category }
    }
    @inlinable public var text: String? {
        get { storage.fields.text }
        _modify { yield &uniqueFields.text }
    }
    @inlinable public var data: JSONValue? {
        get { storage.fields.data }
        _modify { yield &uniqueFields.data }
    }
    @inlinable public var attachments: [Attachment] {
        get { storage.fields.attachments }
        _modify { yield &uniqueFields.attachments }
    }
    @inlinable public var metadata: JSONValue? {
        get { storage.fields.metadata }
        _modify { yield &uniqueFields.metadata }
    }
    @inlinable public var tags: [String] {
        get { storage.fields.tags }
        _modify { yield &uniqueFields.tags }
    }
    @inlinable public var mentionedUids: [String] {
        get { storage.fields.mentionedUids }
        _modify { yield &uniqueFields.mentionedUids }
    }
    @inlinable public var parentMessageId: Int64 {
        get { storage.fields.parentMessageId }
        _modify { yield &uniqueFields.parentMessageId }
    }
    @inlinable public var quotedMessageId: Int64 {
        get { storage.fields.quotedMessageId }
        _modify { yield &uniqueFields.quotedMessageId }
    }
    @inlinable public var replyCount: Int {
        get { storage.fields.replyCount }
        _modify { yield &uniqueFields.replyCount }
    }
    @inlinable public var sentAt: Int64 {
        get { storage.fields.sentAt }
        _modify { yield &uniqueFields.sentAt }
    }
    @inlinable public var editedAt: Int64 {
        get { storage.fields.editedAt }
        _modify { yield &uniqueFields.editedAt }
    }
    @inlinable public var editedBy: String {
        get { storage.fields.editedBy }
        _modify { yield &uniqueFields.editedBy }
    }
    @inlinable public var deletedAt: Int64 {
        get { storage.fields.deletedAt }
        _modify { yield &uniqueFields.deletedAt }
    }
    @inlinable public var deletedBy: String {
        get { storage.fields.deletedBy }
        _modify { yield &uniqueFields.deletedBy }
    }
    @inlinable public var updatedAt: Int64 {
        get { storage.fields.updatedAt }
        _modify { yield &uniqueFields.updatedAt }
    }
    @inlinable public var pinnedAt: Int64 {
        get { storage.fields.pinnedAt }
        _modify { yield &uniqueFields.pinnedAt }
    }
    @inlinable public var pinnedBy: String {
        get { storage.fields.pinnedBy }
        _modify { yield &uniqueFields.pinnedBy }
    }
    /// Each reaction's count, oldest first (by each reaction's oldest standing one);
    /// `reactedByMe` is per viewer.
    @inlinable public var reactions: [ReactionCount] {
        get { storage.fields.reactions }
        _modify { yield &uniqueFields.reactions }
    }
    /// The quoted message, as it is now (deleted shows as deleted), on fetched quote replies.
    @inlinable public var quotedMessage: MessagePreview? {
        get { storage.fields.quotedMessage }
        _modify { yield &uniqueFields.quotedMessage }
    }
    /// The thread's root, where a reply is shown out of its thread (pinned lists).
    @inlinable public var parentMessage: MessagePreview? {
        get { storage.fields.parentMessage }
        _modify { yield &uniqueFields.parentMessage }
    }
    // Per viewer.
    @inlinable public var savedAt: Int64 {
        get { storage.fields.savedAt }
        _modify { yield &uniqueFields.savedAt }
    }
    @inlinable public var hasMentionedMe: Bool {
        get { storage.fields.hasMentionedMe }
        _modify { yield &uniqueFields.hasMentionedMe }
    }
    @inlinable public var threadSubscribed: Bool {
        get { storage.fields.threadSubscribed }
        _modify { yield &uniqueFields.threadSubscribed }
    }

    public init(
        id: Int64 = 0, muid: String = "", conversationId: String, sender: String, receiverType: ReceiverType,
        receiverUid: String, type: String = MessageType.text, category: MessageCategory = .message,
        text: String? = nil, data: JSONValue? = nil, attachments: [Attachment] = [], metadata: JSONValue? = nil,
        tags: [String] = [], mentionedUids: [String] = [], parentMessageId: Int64 = 0, quotedMessageId: Int64 = 0,
        replyCount: Int = 0, sentAt: Int64 = 0, editedAt: Int64 = 0, editedBy: String = "", deletedAt: Int64 = 0,
        deletedBy: String = "", updatedAt: Int64 = 0, pinnedAt: Int64 = 0, pinnedBy: String = "",
        reactions: [ReactionCount] = [], savedAt: Int64 = 0, hasMentionedMe: Bool = false,
        threadSubscribed: Bool = false
    ) {
        storage = Storage(
            Fields(
                id: id,
                muid: muid,
                conversationId: conversationId,
                sender: sender,
                receiverType: receiverType,
                receiverUid: receiverUid,
                type: type,
                category: category,
                text: text,
                data: data,
                attachments: attachments,
                metadata: metadata,
                tags: tags,
                mentionedUids: mentionedUids,
                parentMessageId: parentMessageId,
                quotedMessageId: quotedMessageId,
                replyCount: replyCount,
                sentAt: sentAt,
                editedAt: editedAt,
                editedBy: editedBy,
                deletedAt: deletedAt,
                deletedBy: deletedBy,
                updatedAt: updatedAt,
                pinnedAt: pinnedAt,
                pinnedBy: pinnedBy,
                reactions: reactions,
                quotedMessage: nil,
                parentMessage: nil,
                savedAt: savedAt,
                hasMentionedMe: hasMentionedMe,
                threadSubscribed: threadSubscribed
            ))
    }

    /// The stored form of a message's fields; its `Codable` and `Hashable` are the message's.
    @usableFromInline struct Fields: Sendable, Hashable, Codable {
        @usableFromInline var id: Int64
        @usableFromInline var muid: String
        @usableFromInline var conversationId: String
        @usableFromInline var sender: String
        @usableFromInline var receiverType: ReceiverType
        @usableFromInline var receiverUid: String
        @usableFromInline var type: String
        @usableFromInline var category: MessageCategory
        @usableFromInline var text: String?
        @usableFromInline var data: JSONValue?
        @usableFromInline var attachments: [Attachment]
        @usableFromInline var metadata: JSONValue?
        @usableFromInline var tags: [String]
        @usableFromInline var mentionedUids: [String]
        @usableFromInline var parentMessageId: Int64
        @usableFromInline var quotedMessageId: Int64
        @usableFromInline var replyCount: Int
        @usableFromInline var sentAt: Int64
        @usableFromInline var editedAt: Int64
        @usableFromInline var editedBy: String
        @usableFromInline var deletedAt: Int64
        @usableFromInline var deletedBy: String
        @usableFromInline var updatedAt: Int64
        @usableFromInline var pinnedAt: Int64
        @usableFromInline var pinnedBy: String
        @usableFromInline var reactions: [ReactionCount]
        @usableFromInline var quotedMessage: MessagePreview?
        @usableFromInline var parentMessage: MessagePreview?
        @usableFromInline var savedAt: Int64
        @usableFromInline var hasMentionedMe: Bool
        @usableFromInline var threadSubscribed: Bool

        @usableFromInline init(
            id: Int64,
            muid: String,
            conversationId: String,
            sender: String,
            receiverType: ReceiverType,
            receiverUid: String,
            type: String,
            category: MessageCategory,
            text: String?,
            data: JSONValue?,
            attachments: [Attachment],
            metadata: JSONValue?,
            tags: [String],
            mentionedUids: [String],
            parentMessageId: Int64,
            quotedMessageId: Int64,
            replyCount: Int,
            sentAt: Int64,
            editedAt: Int64,
            editedBy: String,
            deletedAt: Int64,
            deletedBy: String,
            updatedAt: Int64,
            pinnedAt: Int64,
            pinnedBy: String,
            reactions: [ReactionCount],
            quotedMessage: MessagePreview?,
            parentMessage: MessagePreview?,
            savedAt: Int64,
            hasMentionedMe: Bool,
            threadSubscribed: Bool
        ) {
            self.id = id
            self.muid = muid
            self.conversationId = conversationId
            self.sender = sender
            self.receiverType = receiverType
            self.receiverUid = receiverUid
            self.type = type
            self.category = category
            self.text = text
            self.data = data
            self.attachments = attachments
            self.metadata = metadata
            self.tags = tags
            self.mentionedUids = mentionedUids
            self.parentMessageId = parentMessageId
            self.quotedMessageId = quotedMessageId
            self.replyCount = replyCount
            self.sentAt = sentAt
            self.editedAt = editedAt
            self.editedBy = editedBy
            self.deletedAt = deletedAt
            self.deletedBy = deletedBy
            self.updatedAt = updatedAt
            self.pinnedAt = pinnedAt
            self.pinnedBy = pinnedBy
            self.reactions = reactions
            self.quotedMessage = quotedMessage
            self.parentMessage = parentMessage
            self.savedAt = savedAt
            self.hasMentionedMe = hasMentionedMe
            self.threadSubscribed = threadSubscribed
        }
    }

    @usableFromInline final class Storage: @unchecked Sendable {
        // Changed only through `uniqueFields`, which copies a shared box first.
        @usableFromInline var fields: Fields

        @usableFromInline init(_ fields: Fields) { self.fields = fields }
    }

    /// The fields, made this copy's own before a change.
    @inlinable var uniqueFields: Fields {
        _read { yield storage.fields }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.fields) }
            yield &storage.fields
        }
    }

    public init(from decoder: any Decoder) throws { storage = Storage(try Fields(from: decoder)) }

    public func encode(to encoder: any Encoder) throws { try storage.fields.encode(to: encoder) }

    @inlinable public static func == (lhs: Message, rhs: Message) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    @inlinable public func hash(into hasher: inout Hasher) { storage.fields.hash(into: &hasher) }

    public var isDeleted: Bool { deletedAt != 0 }
    public var isReply: Bool { parentMessageId != 0 }
    public var isQuoteReply: Bool { quotedMessageId != 0 }
    public var isPinned: Bool { pinnedAt != 0 }

    /// The receiver this message was addressed to.
    public var receiver: Receiver { receiverType == .group ? .group(receiverUid) : .user(receiverUid) }

    /// The conversation as `viewer` addresses it: the group, or in a one-on-one conversation the
    /// other person (the receiver as sent, for the sender; the sender, for the receiver). A reply
    /// or a listing from the receiver's side is addressed so, never to the receiver themself.
    public func receiver(seenBy viewer: String) -> Receiver {
        guard receiverType == .user else { return .group(receiverUid) }
        return .user(viewer == sender ? receiverUid : sender)
    }

    /// The same message with the per-viewer fields set to "not reported".
    public var withoutViewerFields: Message {
        var copy = self
        copy.savedAt = 0
        copy.hasMentionedMe = false
        copy.threadSubscribed = false
        for index in copy.reactions.indices { copy.reactions[index].reactedByMe = false }
        return copy
    }
}

/// `message`, `action`, `custom`: CometChat's categories that Perch stores.
public enum MessageCategory: String, Sendable, Hashable, Codable, CaseIterable {
    case message
    case action
    case custom
}

/// The standard message types; custom messages carry any other type string.
public enum MessageType {
    public static let text = "text"
    public static let image = "image"
    public static let video = "video"
    public static let audio = "audio"
    public static let file = "file"
    public static let media: Set<String> = [image, video, audio, file]
}

/// A file attached to a media message.
public struct Attachment: Sendable, Hashable, Codable {
    public var name: String
    public var size: Int64
    public var mimeType: String
    public var `extension`: String
    public var url: String

    public init(name: String, size: Int64, mimeType: String, extension: String, url: String) {
        self.name = name
        self.size = size
        self.mimeType = mimeType
        self.extension = `extension`
        self.url = url
    }
}

/// A message shown inside another: a quote reply's quoted message, a pinned reply's parent.
public struct MessagePreview: Sendable, Hashable, Codable {
    public var id: Int64
    public var sender: String
    public var type: String
    public var category: MessageCategory
    public var text: String?
    public var attachments: [Attachment]
    public var parentMessageId: Int64
    public var sentAt: Int64
    public var deletedAt: Int64

    public init(_ message: Message) {
        id = message.id
        sender = message.sender
        type = message.type
        category = message.category
        text = message.text
        attachments = message.attachments
        parentMessageId = message.parentMessageId
        sentAt = message.sentAt
        deletedAt = message.deletedAt
    }
}
