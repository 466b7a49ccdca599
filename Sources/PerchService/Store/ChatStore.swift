import PerchChat
import PerchLock

/// Where the chat service keeps its state. SQLite today; a PostgreSQL store (several hosts, one
/// database) implements the same protocols.
///
/// A body runs inside one transaction: all of its writes commit together or none do, and a body
/// that throws leaves nothing behind. A store may commit several callers' bodies in one commit
/// (group commit); `write` returns only once its body's commit is durable.
public protocol ChatStore: Sendable {
    func write<T: Sendable>(_ body: @escaping @Sendable (any ChatWriteTransaction) throws -> T) async throws -> T
    /// Queues `body` for the writer before returning, so bodies submitted one after another commit
    /// in that order; the answer's `value` waits for the commit. Lets a caller go on while its
    /// writes batch (a bot's replies to a run of messages) without giving up their order.
    /// `callerGoesOn`: the caller has more work at once, so the store never commits on its thread
    /// (the caller's work and the commit then run side by side).
    func submit<T: Sendable>(_ body: @escaping @Sendable (any ChatWriteTransaction) throws -> T, callerGoesOn: Bool)
        -> PendingWrite<T>
    /// Whether ``submit(_:callerGoesOn:)`` keeps the order of calls (a store that takes the default
    /// one does not): a caller may then start the next write before the last one commits.
    var submitsInOrder: Bool { get }
    func read<T: Sendable>(_ body: @escaping @Sendable (any ChatReadTransaction) throws -> T) async throws -> T
    /// The events `uid` may see after `seq` (``ChatReadTransaction/events(for:session:after:limit:)``
    /// in a read transaction, unless the store can answer from memory).
    func events(for uid: String, session: String?, after seq: Int64, limit: Int) async throws -> EventPage
    /// The sequence number of the newest committed event.
    func latestEventSequence() async throws -> Int64
    /// Returns once an event after `seq` is committed, the store closes, or the task is cancelled.
    /// With a `uid`, the store may sleep through events that user cannot see, events left out for
    /// `session` (``EventAudience/excludedSession``), and, with `ignoringOwnMessages`, events whose
    /// message `uid` sent, others' reactions to it excepted (a bot never handles those); it wakes at
    /// least for every other event the user can see, now and then for none, and, when
    /// `endingAtTick`, at the store's poll tick (a consumer with a cursor to save). A wait for anyone
    /// (`uid` nil) ends at every tick.
    func waitForEvents(
        after seq: Int64, for uid: String?, session: String?, ignoringOwnMessages: Bool, endingAtTick: Bool)
        async
    /// The newest outbox row of `uid` that this store's own commits appended while `uid` was
    /// watched, known without a read (0: none yet); nil when the store does not keep it, and a
    /// live stream then reads the outbox whenever its user is sent a message.
    func notifiedThrough(_ uid: String) -> Int64?
    /// A stream of `uid`'s notifications begins (each call is ended by
    /// ``unwatchNotifications(of:)``): from now on ``notifiedThrough(_:)`` follows `uid`.
    func watchNotifications(of uid: String)
    func unwatchNotifications(of uid: String)
    /// Closes the store; later calls fail with ``StoreClosedError``.
    func close() async
}

/// What a store throws for a call after (or cut short by) ``ChatStore/close()``: the host is
/// shutting down. The service answers it as ``ChatError/Code/serviceUnavailable`` and does not log
/// it as a failure.
public struct StoreClosedError: Error, Sendable, CustomStringConvertible {
    public init() {}
    public var description: String { "the store is closed" }
}

/// A store's error that can say its disk is full (SQLite's `SQLITE_FULL`; a PostgreSQL store's
/// `disk_full`, 53100). The service answers it as
/// `ERR_SERVICE_UNAVAILABLE {reason: storage_full, retryAfter}`: nothing of the call was written,
/// and the same call succeeds once there is room.
public protocol StoreFailure: Error {
    var isStorageFull: Bool { get }
}

extension ChatStore {
    public func notifiedThrough(_ uid: String) -> Int64? { nil }
    public func watchNotifications(of uid: String) {}
    public func unwatchNotifications(of uid: String) {}

    public func events(for uid: String, session: String?, after seq: Int64, limit: Int) async throws -> EventPage {
        try await read { tx in try tx.events(for: uid, session: session, after: seq, limit: limit) }
    }
}

/// The typed reads the service needs. Implementations answer from their own indexes; the rules
/// live in the service, not here.
public protocol ChatReadTransaction: NotificationReadTransaction {
    func user(_ uid: String) throws -> User?
    func users(limit: Int, after uid: String?) throws -> [User]
    func group(_ guid: String) throws -> Group?
    func groups(limit: Int, after guid: String?) throws -> [Group]
    func member(guid: String, uid: String) throws -> GroupMember?
    func members(guid: String, limit: Int, after uid: String?) throws -> [GroupMember]
    func memberUids(guid: String) throws -> [String]
    /// The members of `guid` whose user is a bot (``User/botRole``).
    func botMemberUids(guid: String) throws -> [String]
    func isBanned(guid: String, uid: String) throws -> Bool
    func bannedUids(guid: String) throws -> [String]
    func message(_ id: Int64) throws -> Message?
    func messages(_ ids: [Int64]) throws -> [Int64: Message]
    func message(sender: String, muid: String) throws -> Message?
    func liveQuoteReplyCount(of id: Int64) throws -> Int
    func listMessages(_ query: MessageQuery) throws -> [Message]
    func pinnedCount(conversationId: String) throws -> Int
    /// Pinned messages of a conversation that pass the filter, newest pin first, after the
    /// `(pinnedAt, id)` cursor.
    func pinnedMessages(
        conversationId: String, matching filter: MessageFilter, limit: Int, after cursor: (Int64, Int64)?
    ) throws -> [Message]
    /// The oldest pins `pinnedBy` made in a conversation, oldest pin first.
    func oldestPinnedMessages(conversationId: String, pinnedBy: String, limit: Int) throws -> [Message]
    /// Live saves of messages the user can still see.
    func liveSaveCount(uid: String) throws -> Int
    /// The user's live, accessible saved messages that pass the filter, newest save first, after the
    /// `(savedAt, id)` cursor.
    func savedMessages(uid: String, matching filter: MessageFilter, limit: Int, after cursor: (Int64, Int64)?)
        throws -> [Message]
    func savedAt(uid: String, messageIds: [Int64]) throws -> [Int64: Int64]
    /// Each message's reaction counts, ordered by each reaction's oldest standing one; with a
    /// `viewer`, `reactedByMe` says whether they reacted so. Messages with none are left out.
    func reactionCounts(messageIds: [Int64], viewer: String?) throws -> [Int64: [ReactionCount]]
    /// Who reacted to a message (with `reaction` only, only so), oldest first, after the reaction
    /// with id `after`.
    func reactions(messageId: Int64, reaction: String?, limit: Int, after: Int64?) throws -> [Reaction]
    func subscribedThreads(uid: String, parentIds: [Int64]) throws -> Set<Int64>
    func threadSubscribers(of parentId: Int64) throws -> [String]
    /// Whether a reply before `id` in the thread was sent by someone who is not a bot (a reply that
    /// made the thread's automatic subscriptions).
    func hasSubscribingReply(in parentId: Int64, before id: Int64) throws -> Bool
    /// The users who unsubscribed from the thread and have not replied, been mentioned or
    /// subscribed there since: its replies notify them of nothing.
    func threadMutes(of parentId: Int64) throws -> [String]
    /// The user's accessible subscribed threads, `(parentId, updatedAt)`, by `(updatedAt, id)`
    /// descending after the cursor, optionally in one conversation.
    func subscribedThreadRows(uid: String, conversationId: String?, limit: Int, after cursor: ThreadCursor?) throws
        -> [ThreadCursor]
    /// Every thread of a conversation that has had replies, `(parentId, lastReplyAt)`, by
    /// `(lastReplyAt, id)` descending after the cursor.
    func conversationThreadRows(conversationId: String, limit: Int, after cursor: ThreadCursor?) throws
        -> [ThreadCursor]
    /// The newest live reply of a thread.
    func lastReply(of parentId: Int64) throws -> Message?
    func preferences(of uids: [String]) throws -> [String: NotificationPreferences]
    /// The users who muted a conversation, with each mute's end (0: until unmuted), expired ones
    /// included: the caller compares them with its clock.
    func mutes(conversationId: String) throws -> [String: Int64]
    /// A user's muted conversations, expired ones included, by conversation id.
    func mutedConversations(uid: String) throws -> [MutedConversation]
    /// The events `uid` may see after `seq`, oldest first, leaving out those excluded for `session`.
    func events(for uid: String, session: String?, after seq: Int64, limit: Int) throws -> EventPage
    func cursor(consumer: String) throws -> Int64?
    /// The lowest cursor among the consumers that saved theirs at `time` or later (the retention
    /// prunes no event such a consumer has not handled), nil when none did.
    func oldestCursor(savedSince time: Int64) throws -> Int64?
    /// The newest retention mark written at `time` or earlier.
    func logMark(atOrBefore time: Int64) throws -> LogMark?
    func pluginValue(bot: String, key: String) throws -> String?
    /// A plugin value with what it was written as and its expiry (expired ones included: the caller
    /// compares with its clock).
    func pluginEntry(bot: String, key: String) throws -> StoredPluginValue?
    /// The values of `bot` whose keys start with `prefix`, in key order.
    func pluginEntries(bot: String, prefix: String, limit: Int) throws -> [StoredPluginValue]
    /// Every store (`bot` column) that holds a value.
    func pluginStores() throws -> [String]
    /// The scope config.yaml's seed last gave `uid` in `guid`; nil when the seed never named them.
    func seededScope(guid: String, uid: String) throws -> GroupMemberScope?
    /// The user of an auth token, by the token's hash.
    func tokenOwner(hash: String) throws -> String?
    func media(_ id: String) throws -> MediaFile?
    /// The messages carrying a media file.
    func mediaMessages(_ id: String) throws -> [Int64]
}

/// The typed writes; every write transaction can also read.
public protocol ChatWriteTransaction: ChatReadTransaction, NotificationWriteTransaction {
    func insertUser(_ user: User) throws
    func updateUser(_ user: User) throws
    func insertGroup(_ group: Group) throws
    func updateGroup(_ group: Group) throws
    func upsertMember(_ member: GroupMember) throws
    func removeMember(guid: String, uid: String) throws
    /// Records that the seed gave `uid` in `guid` this scope.
    func recordSeededMember(guid: String, uid: String, scope: GroupMemberScope) throws
    func setBanned(guid: String, uid: String, banned: Bool, at time: Int64) throws
    /// Inserts a new message and returns its id, greater than every earlier id.
    func insertMessage(_ message: Message) throws -> Int64
    func updateMessage(_ message: Message) throws
    func adjustReplyCount(of id: Int64, by delta: Int, updatedAt: Int64) throws
    func setSaved(uid: String, messageId: Int64, at time: Int64?) throws
    /// Adds a reaction the user has not made, or with `added` false takes one back; returns the
    /// row's id (nil when there was none to take back).
    func setReaction(_ reaction: Reaction, added: Bool) throws -> Int64?
    func removeReactions(of messageId: Int64) throws
    /// Subscribes (or re-subscribes, bumping `updatedAt`) a user to a thread.
    /// Subscribes a user to a thread, lifting an unsubscription's mute; true when they were not
    /// subscribed before.
    @discardableResult func subscribe(uid: String, to parent: Message, at time: Int64) throws -> Bool
    /// Unsubscribes a user from a thread, muting its replies for them (``threadMutes(of:)``); true
    /// when they were subscribed before.
    @discardableResult func unsubscribe(uid: String, from parentId: Int64) throws -> Bool
    /// Bumps every subscriber's row of the thread (a new reply).
    func touchThread(_ parentId: Int64, at time: Int64) throws
    func removeSubscriptions(of parentId: Int64) throws
    func setPreferences(_ preferences: NotificationPreferences, for uid: String) throws
    /// Mutes a conversation (`receiver`, from the user's side) for a user until `until` (0: until
    /// unmuted), or with nil unmutes it.
    func setMuted(uid: String, _ receiver: Receiver, until: Int64?) throws
    func removeSaves(of messageId: Int64) throws
    func appendEvent(_ event: ChatEvent, audience: EventAudience) throws -> Int64
    func setCursor(consumer: String, seq: Int64, at time: Int64) throws
    /// Marks the cursors of `consumers` saved at `time`, their sequences unchanged (consumers still
    /// running: the retention holds the log back for them however long they sleep).
    func keepCursors(_ consumers: [String], at time: Int64) throws
    /// Writes a retention mark (the newest event and outbox row now) and drops the marks older than
    /// the newest one at or before `cutoff`, which the pass uses.
    func markLogs(at time: Int64, keepingFrom cutoff: Int64) throws
    /// Deletes up to `limit` of the oldest events with sequences up to `events`, and as many outbox
    /// rows up to `outbox`, never the newest row of either (a new row's id is the largest plus one,
    /// so it is never one used before). A reader after an event pruned here is told so
    /// (``EventPage/missed``).
    func pruneLogs(events: Int64, outbox: Int64, limit: Int) throws -> LogPruning
    /// Removes the per-user audience rows of the events pruned so far, for up to `limit` users
    /// after `uid` in uid order; returns the last user looked at, nil once past the last.
    func pruneEventAudiences(after uid: String, limit: Int) throws -> String?
    /// Sets (or with nil removes) a bot's plugin value.
    func setPluginValue(bot: String, key: String, value: String?) throws
    func setPluginEntry(bot: String, key: String, text: String, isJSON: Bool, expiresAt: Int64) throws
    /// Removes the values of `bot` whose keys start with `prefix` (every one for ""); returns how many.
    func clearPluginValues(bot: String, prefix: String) throws -> Int
    func insertToken(hash: String, uid: String, at time: Int64) throws
    func insertMedia(_ file: MediaFile) throws
    func addMediaReference(_ id: String, messageId: Int64) throws
}

/// What a listing keeps of the messages it reads: every set field narrows it, and the empty filter
/// keeps them all. The conversation listings, the pinned and the saved ones read the same filter.
public struct MessageFilter: Sendable, Hashable {
    /// nil: any; 0: top-level only (`hideReplies`); an id: that thread's replies.
    public var parentMessageId: Int64?
    public var hideDeleted = false
    public var categories: [MessageCategory] = []
    public var types: [String] = []
    public var searchKeyword: String?
    /// Only messages mentioning one of these users.
    public var mentionedUids: [String] = []
    /// Only this sender's messages.
    public var sender: String?
    /// Only messages carrying one of these tags.
    public var tags: [String] = []
    /// Leaves out quote replies.
    public var hideQuoted = false
    /// Only messages that mention someone.
    public var onlyWithMentions = false
    /// Only messages with attachments.
    public var onlyWithAttachments = false
    /// Only messages someone reacted to.
    public var onlyWithReactions = false
    /// Only messages sent in these seconds (both ends included).
    public var sentAt: ClosedRange<Int64>?

    public init(
        parentMessageId: Int64? = nil, hideDeleted: Bool = false, categories: [MessageCategory] = [],
        types: [String] = [], searchKeyword: String? = nil, mentionedUids: [String] = [], sender: String? = nil
    ) {
        self.parentMessageId = parentMessageId
        self.hideDeleted = hideDeleted
        self.categories = categories
        self.types = types
        self.searchKeyword = searchKeyword
        self.mentionedUids = mentionedUids
        self.sender = sender
    }
}

/// A page request over one conversation's messages, in the store's terms.
public struct MessageQuery: Sendable, Hashable {
    public enum Direction: Sendable, Hashable {
        /// Messages with ids below the bound (or the newest when nil), newest first in the store.
        case before(Int64?)
        /// Messages with ids above the bound, oldest first.
        case after(Int64)
    }

    public var conversationId: String
    public var direction: Direction
    public var limit: Int
    public var filter: MessageFilter

    public init(
        conversationId: String, direction: Direction = .before(nil), limit: Int = 30,
        filter: MessageFilter = MessageFilter()
    ) {
        self.conversationId = conversationId
        self.direction = direction
        self.limit = limit
        self.filter = filter
    }
}

/// A page of a user's events. `scannedThrough` is the last sequence the page looked at (for a page
/// shorter than its limit, the newest sequence in the store when it was read), which a consumer
/// resumes after even when every event of the page was left out for its session.
public struct EventPage: Sendable {
    public var events: [ChatEvent]
    public var scannedThrough: Int64
    /// Whether the page stopped at its limit (more may follow at once); a short page scanned
    /// everything committed when it was read.
    public var isFull: Bool
    /// The sequences after the reader's that the retention removed before it read them: the page
    /// starts after them. Nil when nothing the reader asked for was pruned.
    public var missed: ClosedRange<Int64>?
    /// The user's notifications routed since the stream's last page, oldest first, with their
    /// messages (``ChatService/followEvents(for:session:after:notifications:_:)`` fills them).
    public var notifications: [NotificationRecord] = []

    public init(events: [ChatEvent], scannedThrough: Int64, isFull: Bool = false, missed: ClosedRange<Int64>? = nil) {
        self.events = events
        self.scannedThrough = scannedThrough
        self.isFull = isFull
        self.missed = missed
    }
}

/// A retention mark: at `at`, the newest event was `events` and the newest outbox row `outbox`.
public struct LogMark: Sendable, Equatable {
    public var at: Int64
    public var events: Int64
    public var outbox: Int64

    public init(at: Int64, events: Int64, outbox: Int64) {
        self.at = at
        self.events = events
        self.outbox = outbox
    }
}

/// What a pass of the retention removed.
public struct LogPruning: Sendable, Equatable {
    public var events = 0
    public var outbox = 0

    public init(events: Int = 0, outbox: Int = 0) {
        self.events = events
        self.outbox = outbox
    }
}

/// A row of the threads inbox before its messages are attached, `(updatedAt, parentMessageId)`,
/// which is also the compound cursor of the next page (after the last row).
public struct ThreadCursor: Sendable, Hashable {
    public var updatedAt: Int64
    public var parentMessageId: Int64

    public init(updatedAt: Int64, parentMessageId: Int64) {
        self.updatedAt = updatedAt
        self.parentMessageId = parentMessageId
    }
}

/// An uploaded file: who uploaded it and what it is. The bytes live in the data directory under
/// `media/<id>`; the uploader's file name is kept for display only.
public struct MediaFile: Sendable, Hashable, Codable {
    public var id: String
    public var uploader: String
    public var name: String
    public var mimeType: String
    public var `extension`: String
    public var size: Int64
    public var createdAt: Int64

    public init(
        id: String, uploader: String, name: String, mimeType: String, extension: String, size: Int64,
        createdAt: Int64
    ) {
        self.id = id
        self.uploader = uploader
        self.name = name
        self.mimeType = mimeType
        self.extension = `extension`
        self.size = size
        self.createdAt = createdAt
    }

    /// The attachment a message carries for this file.
    public var attachment: Attachment {
        Attachment(name: name, size: size, mimeType: mimeType, extension: `extension`, url: MediaFile.urlPrefix + id)
    }

    public static let urlPrefix = AttachmentRules.uploadPrefix
}

extension ChatStore {
    /// ``submit(_:callerGoesOn:)`` for a caller that waits next.
    public func submit<T: Sendable>(_ body: @escaping @Sendable (any ChatWriteTransaction) throws -> T)
        -> PendingWrite<T>
    {
        submit(body, callerGoesOn: false)
    }

    /// Only a store that queues its own writes keeps their order (below, it does not).
    public var submitsInOrder: Bool { false }

    /// A store without ordered queueing runs the body in a task: the order of commits is then not
    /// the order of calls.
    public func submit<T: Sendable>(
        _ body: @escaping @Sendable (any ChatWriteTransaction) throws -> T, callerGoesOn: Bool
    ) -> PendingWrite<T> {
        let pending = PendingWrite<T>()
        Task {
            do {
                pending.fulfil(.success(try await write(body)))
            } catch {
                pending.fulfil(.failure(error))
            }
        }
        return pending
    }
}

/// A write queued with ``ChatStore/submit(_:callerGoesOn:)``: its result once committed.
public final class PendingWrite<T: Sendable>: Sendable {
    private let state = Lock<
        (
            result: Result<T, any Error>?, waiters: [CheckedContinuation<Result<T, any Error>, Never>],
            observers: [@Sendable (Result<T, any Error>) -> Void]
        )
    >(
        (nil, [], []))

    public init() {}

    /// Sets the result once and wakes whoever waits.
    public func fulfil(_ result: Result<T, any Error>) {
        let (waiters, observers) = state.withLock { state in
            guard state.result == nil else {
                return (
                    [CheckedContinuation<Result<T, any Error>, Never>](), [@Sendable (Result<T, any Error>) -> Void]()
                )
            }
            state.result = result
            defer {
                state.waiters.removeAll()
                state.observers.removeAll()
            }
            return (state.waiters, state.observers)
        }
        for observer in observers { observer(result) }
        for waiter in waiters { waiter.resume(returning: result) }
    }

    /// Calls `observer` with the result as soon as it is set (on the committing thread, so it must
    /// be quick), or now when it already is.
    public func observe(_ observer: @escaping @Sendable (Result<T, any Error>) -> Void) {
        let ready = state.withLock { state -> Result<T, any Error>? in
            if let result = state.result { return result }
            state.observers.append(observer)
            return nil
        }
        if let ready { observer(ready) }
    }

    /// The body's result after its commit; its error, or the commit's.
    public var value: T {
        get async throws {
            let result = await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<T, any Error>, Never>) in
                let ready = state.withLock { state -> Result<T, any Error>? in
                    if let result = state.result { return result }
                    state.waiters.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
            return try result.get()
        }
    }
}
