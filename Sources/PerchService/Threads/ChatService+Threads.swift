import PerchChat
import PerchLock

extension ChatService {
    /// Subscribes `uid` to the thread of `parentMessageId`. Idempotent; allowed on a message with no
    /// replies yet; a (re)subscription bumps the thread's `updatedAt` in the user's inbox. No
    /// listener event fires (docs/chat-model.md, "Thread subscriptions"). Returns the parent with `threadSubscribed` set.
    /// - Throws: `ERR_UID_NOT_FOUND` (a bot's `subscribe: UID` may name anyone),
    ///   `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`, `ERR_MESSAGE_ACTION_NOT_ALLOWED`.
    public func subscribeToThread(_ parentMessageId: Int64, as uid: String) async throws(ChatError) -> Message {
        let now = clock.now()
        return try await writing { tx in
            _ = try Self.requireUser(tx, uid)
            let (parent, actor) = try Self.lookup(tx, parentMessageId, by: uid)
            try ThreadSubscriptionRules.check(parent, id: parentMessageId, by: actor)
            if try tx.subscribe(uid: uid, to: parent!, at: now) {
                try Self.announceSubscription(tx, parent: parent!, uid: uid, subscribed: true, at: now)
            }
            return try Self.decorate(tx, [parent!], for: uid)[0]
        }
    }

    /// Unsubscribes `uid` from the thread; its row leaves the inbox, and its replies notify the
    /// user of nothing, whatever their conversation-level preference, until they reply or are
    /// mentioned there (or subscribe again). Idempotent, and not sticky: that reply or mention
    /// subscribes the user again.
    /// - Throws: `ERR_UID_NOT_FOUND`, `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`,
    ///   `ERR_MESSAGE_ACTION_NOT_ALLOWED`.
    public func unsubscribeFromThread(_ parentMessageId: Int64, as uid: String) async throws(ChatError) -> Message {
        let now = clock.now()
        return try await writing { tx in
            _ = try Self.requireUser(tx, uid)
            let (parent, actor) = try Self.lookup(tx, parentMessageId, by: uid)
            try ThreadSubscriptionRules.check(parent, id: parentMessageId, by: actor)
            if try tx.unsubscribe(uid: uid, from: parentMessageId) {
                try Self.announceSubscription(tx, parent: parent!, uid: uid, subscribed: false, at: now)
            }
            return try Self.decorate(tx, [parent!], for: uid)[0]
        }
    }

    /// Inside a send: the automatic subscriptions of a new reply, then the bump of the thread.
    /// Returns the thread's subscribers afterwards. The thread's first reply is its first that
    /// subscribes: quiet replies (a bot's) before it started nothing. A bot is never subscribed.
    static func subscribeOnReply(_ tx: any ChatWriteTransaction, parent: Message, reply: Message, at now: Int64)
        throws -> Set<String>
    {
        let isFirstReply = try parent.replyCount == 0 || !tx.hasSubscribingReply(in: parent.id, before: reply.id)
        let candidates = ThreadSubscriptionRules.autoSubscribers(
            parent: parent, reply: reply, isFirstReply: isFirstReply)
        for uid in candidates {
            guard let user = try tx.user(uid), user.role != User.botRole else { continue }
            guard try participation(tx, uid: uid, towards: parent).canRead else { continue }
            if try tx.subscribe(uid: uid, to: parent, at: now) {
                try announceSubscription(tx, parent: parent, uid: uid, subscribed: true, at: now)
            }
        }
        try tx.touchThread(parent.id, at: now)
        return Set(try tx.threadSubscribers(of: parent.id))
    }

    /// Inside a write: `onThreadSubscribed` / `onThreadUnsubscribed` for a change of `uid`'s
    /// subscription to `parent`'s thread, to the user's sessions and to the conversation's bots (a
    /// follow is nobody else's business: the other people of a group hear nothing of it).
    static func announceSubscription(
        _ tx: any ChatWriteTransaction, parent: Message, uid: String, subscribed: Bool, at now: Int64
    ) throws {
        var users = [uid]
        switch parent.receiver {
        case .group(let guid):
            // The group's bots from one remembered query: a role lookup a member cost a 1,000-member
            // group's first replies 1,000 of them.
            users += try tx.botMemberUids(guid: guid).filter { $0 != uid }
        case .user(let receiver):
            for other in [parent.sender, receiver] where other != uid && !users.contains(other) {
                if try tx.user(other)?.role == User.botRole { users.append(other) }
            }
        }
        let event = ChatEvent(
            name: subscribed ? .threadSubscribed : .threadUnsubscribed, conversationId: parent.conversationId,
            createdAt: now, message: try decorateLive(tx, parent), actor: uid)
        _ = try tx.appendEvent(event, audience: EventAudience(users: users))
    }

    /// Starts a threads-inbox request for `viewer` (CometChat's `ThreadsRequest`): single use and
    /// forward only.
    /// - Throws: `ERR_BAD_REQUEST` for a limit outside 1–100, for both uid and guid, and for
    ///   `participatedByMe: false` without a conversation.
    public func threadsRequest(_ options: ThreadsRequest.Options, as viewer: String) throws(ChatError) -> ThreadsRequest
    {
        guard (1...100).contains(options.limit) else { throw .badRequest("limit", "must be 1–100") }
        guard options.uid == nil || options.guid == nil else { throw .badRequest("uid", "give uid or guid, not both") }
        guard options.participatedByMe || options.uid != nil || options.guid != nil else {
            throw .badRequest("participatedByMe", "listing every thread needs a uid or guid")
        }
        return ThreadsRequest(service: self, options: options, viewer: viewer)
    }

    /// One page of the inbox from `cursor`; the request object and the HTTP API both use it.
    public func fetchThreads(_ options: ThreadsRequest.Options, as viewer: String, after cursor: ThreadCursor?)
        async throws(ChatError) -> (threads: [MessageThread], hasMore: Bool)
    {
        _ = try threadsRequest(options, as: viewer)
        return try await reading { tx in
            _ = try Self.requireUser(tx, viewer)
            var conversation: String?
            if let guid = options.guid {
                _ = try Self.requireGroup(tx, guid)
                let actor = try Self.participation(tx, uid: viewer, in: .group(guid))
                guard actor.canRead else { throw ChatError(.groupNotJoined, ["guid": .string(guid)]) }
                conversation = ConversationID.group(guid)
            } else if let uid = options.uid {
                _ = try Self.requireUser(tx, uid)
                conversation = ConversationID.user(viewer, uid)
            }
            var rows =
                options.participatedByMe
                ? try tx.subscribedThreadRows(
                    uid: viewer, conversationId: conversation, limit: options.limit + 1, after: cursor)
                : try tx.conversationThreadRows(conversationId: conversation!, limit: options.limit + 1, after: cursor)
            let hasMore = rows.count > options.limit
            rows = Array(rows.prefix(options.limit))
            let parents = try tx.messages(rows.map(\.parentMessageId))
            let decorated = try Self.decorate(tx, Array(parents.values), for: viewer)
            let byId = Dictionary(uniqueKeysWithValues: decorated.map { ($0.id, $0) })
            var lastReplies: [Int64: Message] = [:]
            let replies = try rows.compactMap { try tx.lastReply(of: $0.parentMessageId) }
            for reply in try Self.decorate(tx, replies, for: viewer) { lastReplies[reply.parentMessageId] = reply }
            var threads: [MessageThread] = []
            for row in rows {
                guard let parent = byId[row.parentMessageId], !parent.isDeleted else { continue }
                let last = lastReplies[parent.id]
                threads.append(
                    MessageThread(
                        parentMessageId: parent.id, parentMessage: parent, replyCount: parent.replyCount,
                        lastReply: last, conversationId: parent.conversationId, receiverType: parent.receiverType,
                        receiverUid: parent.receiver(seenBy: viewer).id, isSubscribed: parent.threadSubscribed,
                        cursorUpdatedAt: row.updatedAt))
            }
            return (threads, hasMore)
        }
    }
}

/// One row of the threads inbox (CometChat's `MessageThread`).
public struct MessageThread: Sendable, Hashable, Codable {
    public var parentMessageId: Int64
    public var parentMessage: Message
    public var replyCount: Int
    /// The newest live reply; nil for a thread with no replies yet.
    public var lastReply: Message?
    public var conversationId: String
    public var receiverType: ReceiverType
    public var receiverUid: String
    /// Always true in the participated-by-me list: presence is the subscription.
    public var isSubscribed: Bool
    /// Reserved: always nil (unknown), which is not 0.
    public var unreadReplyCount: Int?
    /// Whole seconds; part of the paging cursor. Do not sort a UI on it.
    public var updatedAt: Int64

    public init(
        parentMessageId: Int64, parentMessage: Message, replyCount: Int, lastReply: Message?,
        conversationId: String, receiverType: ReceiverType, receiverUid: String, isSubscribed: Bool,
        cursorUpdatedAt: Int64
    ) {
        self.parentMessageId = parentMessageId
        self.parentMessage = parentMessage
        self.replyCount = replyCount
        self.lastReply = lastReply
        self.conversationId = conversationId
        self.receiverType = receiverType
        self.receiverUid = receiverUid
        self.isSubscribed = isSubscribed
        self.unreadReplyCount = nil
        self.updatedAt = cursorUpdatedAt
    }

    public var cursor: ThreadCursor { ThreadCursor(updatedAt: updatedAt, parentMessageId: parentMessageId) }
}

/// A single-use, forward-only request over the threads inbox. Paging follows the compound
/// `(updatedAt, id)` cursor, so threads updated in the same second spill across pages and none is
/// skipped or repeated; a thread bumped by a reply between two pages is not shown twice.
public final class ThreadsRequest: Sendable {
    public struct Options: Sendable, Hashable {
        /// Page size, 1–100 (default 30).
        public var limit: Int
        public var uid: String?
        public var guid: String?
        /// Default true: only threads the user is subscribed to.
        public var participatedByMe: Bool

        public init(limit: Int = 30, uid: String? = nil, guid: String? = nil, participatedByMe: Bool = true) {
            self.limit = limit
            self.uid = uid
            self.guid = guid
            self.participatedByMe = participatedByMe
        }
    }

    let service: ChatService
    public let options: Options
    let viewer: String
    private let state = Lock<(cursor: ThreadCursor?, seen: Set<Int64>, hasMore: Bool)>((nil, [], true))

    init(service: ChatService, options: Options, viewer: String) {
        self.service = service
        self.options = options
        self.viewer = viewer
    }

    /// Whether another page may exist.
    public var hasMore: Bool { state.withLock { $0.hasMore } }

    /// The next page; empty once the end is reached.
    public func fetchNext() async throws(ChatError) -> [MessageThread] {
        let cursor = state.withLock { $0.hasMore ? $0.cursor : nil }
        guard hasMore else { return [] }
        let page = try await service.fetchThreads(options, as: viewer, after: cursor)
        return state.withLock { state in
            if let last = page.threads.last { state.cursor = last.cursor }
            state.hasMore = page.hasMore
            let fresh = page.threads.filter { !state.seen.contains($0.parentMessageId) }
            state.seen.formUnion(fresh.map(\.parentMessageId))
            return fresh
        }
    }
}
