/// A message, with every field of CometChat's BaseMessage that Perch serves.
///
/// Timestamps are epoch seconds; 0 means "not set", so the presence of a timestamp is the boolean
/// (`pinnedAt != 0` is "pinned"). `savedAt`, `hasMentionedMe` and `threadSubscribed` are per viewer:
/// a fetch fills them for the viewer who fetched; a live payload carries them as 0/false, meaning
/// "not reported".
public struct Message: Sendable, Hashable, Codable {
    public var id: Int64
    public var muid: String
    public var conversationId: String
    public var sender: String
    public var receiverType: ReceiverType
    public var receiverUid: String
    public var type: String
    public var category: MessageCategory
    public var text: String?
    public var data: JSONValue?
    public var attachments: [Attachment]
    public var metadata: JSONValue?
    public var tags: [String]
    public var mentionedUids: [String]
    public var parentMessageId: Int64
    public var quotedMessageId: Int64
    public var replyCount: Int
    public var sentAt: Int64
    public var editedAt: Int64
    public var editedBy: String
    public var deletedAt: Int64
    public var deletedBy: String
    public var updatedAt: Int64
    public var pinnedAt: Int64
    public var pinnedBy: String
    /// Each reaction's count, oldest first (by each reaction's oldest standing one);
    /// `reactedByMe` is per viewer.
    public var reactions: [ReactionCount]
    /// The quoted message, as it is now (deleted shows as deleted), on fetched quote replies.
    public var quotedMessage: MessagePreview?
    /// The thread's root, where a reply is shown out of its thread (pinned lists).
    public var parentMessage: MessagePreview?
    // Per viewer.
    public var savedAt: Int64
    public var hasMentionedMe: Bool
    public var threadSubscribed: Bool

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
        self.savedAt = savedAt
        self.hasMentionedMe = hasMentionedMe
        self.threadSubscribed = threadSubscribed
    }

    public var isDeleted: Bool { deletedAt != 0 }
    public var isReply: Bool { parentMessageId != 0 }
    public var isQuoteReply: Bool { quotedMessageId != 0 }
    public var isPinned: Bool { pinnedAt != 0 }

    /// The receiver this message was addressed to.
    public var receiver: Receiver { receiverType == .group ? .group(receiverUid) : .user(receiverUid) }

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
