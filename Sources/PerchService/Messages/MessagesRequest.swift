import PerchChat

/// A page request over messages, mirroring CometChat's `MessagesRequest`.
///
/// Give `uid` (the one-on-one conversation with that user) or `guid` (a group), or only
/// `parentMessageId` (that thread). `messageId` is the cursor: ``ChatService/fetchPrevious(_:as:)``
/// returns the `limit` messages just before it (the newest when nil), ``ChatService/fetchNext(_:as:)``
/// those just after it; both in ascending id order. Paging by id never skips or repeats a message
/// while new ones arrive.
public struct MessagesRequest: Sendable, Hashable {
    public var uid: String?
    public var guid: String?
    public var parentMessageId: Int64?
    public var hideReplies: Bool
    public var hideDeleted: Bool
    public var categories: [MessageCategory]
    public var types: [String]
    public var limit: Int
    public var messageId: Int64?
    public var searchKeyword: String?
    public var mentionedUids: [String]
    public var pinned: Bool
    public var saved: Bool
    /// Only this sender's messages (the REST API's `sender`).
    public var sender: String?
    /// Only messages carrying one of these tags (`setTags`).
    public var tags: [String] = []
    /// Leaves out quote replies (`hideQuotedMessages`).
    public var hideQuotedMessages = false
    /// Only messages that mention someone (`hasMentions`).
    public var hasMentions = false
    /// Only messages with attachments (`hasAttachments`).
    public var hasAttachments = false
    /// Only messages someone reacted to (`hasReactions`).
    public var hasReactions = false
    /// Only messages sent at or after this second (the REST API's `fromTimestamp`).
    public var fromTimestamp: Int64?
    /// Only messages sent at or before this second (`toTimestamp`).
    public var toTimestamp: Int64?

    public init(
        uid: String? = nil, guid: String? = nil, parentMessageId: Int64? = nil, hideReplies: Bool = false,
        hideDeleted: Bool = false, categories: [MessageCategory] = [], types: [String] = [], limit: Int = 30,
        messageId: Int64? = nil, searchKeyword: String? = nil, mentionedUids: [String] = [], pinned: Bool = false,
        saved: Bool = false
    ) {
        self.uid = uid
        self.guid = guid
        self.parentMessageId = parentMessageId
        self.hideReplies = hideReplies
        self.hideDeleted = hideDeleted
        self.categories = categories
        self.types = types
        self.limit = limit
        self.messageId = messageId
        self.searchKeyword = searchKeyword
        self.mentionedUids = mentionedUids
        self.pinned = pinned
        self.saved = saved
    }
}

/// One page of messages and where the next pages start.
public struct MessagePage: Sendable, Hashable {
    /// In ascending id order.
    public var messages: [Message]
    /// Whether more messages lie beyond this page in the fetched direction.
    public var hasMore: Bool
    /// The cursor for the page before this one (the first id), or nil when empty.
    public var previousCursor: Int64?
    /// The cursor for the page after this one (the last id), or nil when empty.
    public var nextCursor: Int64?

    public init(messages: [Message], hasMore: Bool) {
        self.messages = messages
        self.hasMore = hasMore
        previousCursor = messages.first?.id
        nextCursor = messages.last?.id
    }
}

extension ChatService {
    /// The page of messages before `request.messageId` (the newest page when nil).
    public func fetchPrevious(_ request: MessagesRequest, as viewer: String) async throws(ChatError) -> MessagePage {
        try await fetch(request, forward: false, as: viewer)
    }

    /// The page of messages after `request.messageId` (from the oldest when nil).
    public func fetchNext(_ request: MessagesRequest, as viewer: String) async throws(ChatError) -> MessagePage {
        try await fetch(request, forward: true, as: viewer)
    }

    func fetch(_ request: MessagesRequest, forward: Bool, as viewer: String) async throws(ChatError) -> MessagePage {
        guard (1...100).contains(request.limit) else { throw .badRequest("limit", "must be 1–100") }
        if request.uid != nil && request.guid != nil {
            throw .badRequest("uid", "give uid or guid, not both")
        }
        if request.saved { return try await fetchSaved(request, as: viewer) }
        if request.pinned { return try await fetchPinned(request, as: viewer) }
        return try await reading { tx in
            _ = try Self.requireUser(tx, viewer)
            let conversation = try Self.conversation(tx, of: request, viewer: viewer)
            var query = MessageQuery(
                conversationId: conversation, limit: request.limit + 1, filter: try request.filter())
            query.direction = forward ? .after(request.messageId ?? 0) : .before(request.messageId)
            var rows = try tx.listMessages(query)
            let hasMore = rows.count > request.limit
            rows = Array(rows.prefix(request.limit))
            if !forward { rows.reverse() }
            return MessagePage(messages: try Self.decorate(tx, rows, for: viewer), hasMore: hasMore)
        }
    }

    /// The conversation a request names, after checking the viewer may read it.
    static func conversation(_ tx: any ChatReadTransaction, of request: MessagesRequest, viewer: String) throws
        -> String
    {
        if let guid = request.guid {
            _ = try requireGroup(tx, guid)
            let actor = try participation(tx, uid: viewer, in: .group(guid))
            if case .banned = actor.standing {
                throw ChatError(.bannedGroupMember, ["uid": .string(viewer), "guid": .string(guid)])
            }
            guard actor.canRead else { throw ChatError(.groupNotJoined, ["guid": .string(guid)]) }
            if let parent = request.parentMessageId, parent != 0 {
                try checkThread(tx, parent, in: ConversationID.group(guid))
            }
            return ConversationID.group(guid)
        }
        if let uid = request.uid {
            _ = try requireUser(tx, uid)
            let conversation = ConversationID.user(viewer, uid)
            if let parent = request.parentMessageId, parent != 0 { try checkThread(tx, parent, in: conversation) }
            return conversation
        }
        if let parentId = request.parentMessageId, parentId != 0 {
            guard let parent = try tx.message(parentId) else { throw ChatError.messageNotFound(parentId) }
            try AccessRules.checkRead(try participation(tx, uid: viewer, towards: parent), messageId: parentId)
            return parent.conversationId
        }
        throw ChatError.badRequest("uid", "give uid, guid or parentMessageId")
    }

    static func checkThread(_ tx: any ChatReadTransaction, _ parentId: Int64, in conversation: String) throws {
        guard let parent = try tx.message(parentId) else { throw ChatError.messageNotFound(parentId) }
        guard parent.conversationId == conversation else {
            throw ChatError(.wrongMessageThread, ["parentMessageId": .int(parentId)])
        }
    }
}

extension MessagesRequest {
    /// The request's filters in the store's terms, the same for a conversation's messages, its
    /// pinned ones and the saved ones.
    func filter() throws(ChatError) -> MessageFilter {
        var filter = MessageFilter(
            parentMessageId: parentMessageId ?? (hideReplies ? 0 : nil), hideDeleted: hideDeleted,
            categories: categories, types: types, searchKeyword: searchKeyword, mentionedUids: mentionedUids,
            sender: sender)
        filter.tags = tags
        filter.hideQuoted = hideQuotedMessages
        filter.onlyWithMentions = hasMentions
        filter.onlyWithAttachments = hasAttachments
        filter.onlyWithReactions = hasReactions
        if fromTimestamp != nil || toTimestamp != nil {
            let from = fromTimestamp ?? 0
            let to = toTimestamp ?? Int64.max
            guard from <= to else { throw ChatError.badRequest("fromTimestamp", "after toTimestamp") }
            filter.sentAt = from...to
        }
        return filter
    }
}
