import PerchChat

/// The notification outbox in the store's terms: each user's routed notifications with their read
/// state, the feed the delivery consumers (webhooks, plugins) follow, and what those consumers
/// gave up on. The rules (who is notified, who may read what) live in the service.
public protocol NotificationReadTransaction {
    /// The user's outbox rows after `seq`, oldest first (only the unread ones when `unreadOnly`),
    /// and the rows after `seq` the retention removed before the reader came
    /// (``NotificationPage/missed``).
    func notifications(for uid: String, after seq: Int64, limit: Int, unreadOnly: Bool) throws -> NotificationPage
    /// The user's outbox rows before `seq` (nil: the newest), newest first.
    func latestNotifications(for uid: String, before seq: Int64?, limit: Int, unreadOnly: Bool) throws
        -> [NotificationRecord]
    /// How many of the user's outbox rows are unread.
    func unreadNotificationCount(uid: String) throws -> Int
    /// Every user's outbox rows after `seq`, oldest first: what a delivery consumer reads next.
    func routedNotifications(after seq: Int64, limit: Int) throws -> [NotificationRecord]
    /// The newest outbox row's sequence (0: none yet).
    func newestNotificationSequence() throws -> Int64
    /// The last outbox row a delivery consumer has finished with (nil: it never ran).
    func deliveryCursor(consumer: String) throws -> Int64?
    /// The lowest cursor among the delivery consumers that saved theirs at `time` or later and are
    /// listening (a cursor of -1 is a feed nobody listens to): the retention prunes no outbox row
    /// such a consumer has not handled. Nil when none did.
    func oldestDeliveryCursor(savedSince time: Int64) throws -> Int64?
    /// The rows a delivery consumer gave up on, newest first (every consumer's when nil).
    func deadLetters(consumer: String?, limit: Int) throws -> [DeadLetter]
}

/// The outbox's writes.
public protocol NotificationWriteTransaction {
    /// Appends one outbox row per recipient of a message, in the order given, unread.
    func appendNotifications(_ recipients: [NotificationRecipient], messageId: Int64, at time: Int64) throws
    /// Marks the user's rows `seqs` read at `time`; others' rows, rows already read and rows that
    /// do not exist are left alone. Returns the sequences it marked.
    func markNotificationsRead(uid: String, seqs: [Int64], at time: Int64) throws -> [Int64]
    /// Marks every row of the user up to `seq` read at `time` (a cursor: it never moves back).
    func markNotificationsRead(uid: String, through seq: Int64, at time: Int64) throws
    func setDeliveryCursor(consumer: String, seq: Int64, at time: Int64) throws
    /// Marks the delivery cursors of `consumers` saved at `time`, their sequences unchanged
    /// (consumers still configured: the retention holds the outbox back for them).
    func keepDeliveryCursors(_ consumers: [String], at time: Int64) throws
    func appendDeadLetter(_ letter: DeadLetter) throws
}

/// One entry of a user's notification outbox.
public struct NotificationRecord: Sendable, Hashable, Codable {
    public var seq: Int64
    public var uid: String
    public var messageId: Int64
    public var reason: NotificationReason
    public var createdAt: Int64
    /// When the user read it, in epoch seconds (0: unread).
    public var readAt: Int64
    /// The message as the recipient sees it now: filled in by the service, nil where a listing
    /// leaves it out or the recipient may no longer read it (they left a private group).
    public var message: Message?

    public init(
        seq: Int64, uid: String, messageId: Int64, reason: NotificationReason, createdAt: Int64, readAt: Int64 = 0,
        message: Message? = nil
    ) {
        self.seq = seq
        self.uid = uid
        self.messageId = messageId
        self.reason = reason
        self.createdAt = createdAt
        self.readAt = readAt
        self.message = message
    }
}

/// A page of a user's notification outbox.
public struct NotificationPage: Sendable {
    public var records: [NotificationRecord]
    /// The outbox sequences after the reader's that the retention removed before it read them
    /// (some may have been the reader's): the page starts after them. Nil when none were.
    public var missed: ClosedRange<Int64>?

    public init(records: [NotificationRecord], missed: ClosedRange<Int64>? = nil) {
        self.records = records
        self.missed = missed
    }
}

/// An outbox row a delivery consumer gave up on after its last try, kept for an operator to see.
public struct DeadLetter: Sendable, Hashable, Codable {
    public var consumer: String
    public var record: NotificationRecord
    public var attempts: Int
    public var lastError: String
    public var at: Int64

    public init(consumer: String, record: NotificationRecord, attempts: Int, lastError: String, at: Int64) {
        self.consumer = consumer
        self.record = record
        self.attempts = attempts
        self.lastError = lastError
        self.at = at
    }
}
