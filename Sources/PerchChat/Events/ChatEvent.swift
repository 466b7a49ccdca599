/// One entry of the durable event log: a listener callback, named as CometChat names it, with its
/// payload. Message payloads carry the per-viewer fields as "not reported" (0 / false).
public struct ChatEvent: Sendable, Hashable, Codable {
    public var seq: Int64
    public var name: EventName
    public var conversationId: String
    public var createdAt: Int64
    public var message: Message?
    public var member: MemberChange?
    /// The reaction added or taken back (`onMessageReactionAdded`, `onMessageReactionRemoved`).
    public var reaction: Reaction?
    /// Who did it, where the message does not say: the editor, the deleter, who pinned or unpinned
    /// (the bot behind a pin as `app_system`), who saved or unsaved. nil on new messages (their
    /// sender did it), reactions and member changes (they name their own), and on events logged
    /// before Perch recorded it.
    public var actor: String?
    /// What the user marked read (`onNotificationsRead`).
    public var read: NotificationsRead?

    public init(
        seq: Int64 = 0, name: EventName, conversationId: String, createdAt: Int64, message: Message? = nil,
        member: MemberChange? = nil, reaction: Reaction? = nil, actor: String? = nil, read: NotificationsRead? = nil
    ) {
        self.seq = seq
        self.name = name
        self.conversationId = conversationId
        self.createdAt = createdAt
        self.message = message
        self.member = member
        self.reaction = reaction
        self.actor = actor
        self.read = read
    }

    /// Whose doing the event is, for a listener that ignores its own (a bot): the reactor of a
    /// reaction, else the event's ``actor`` (a pin of the listener's own message by someone else is
    /// theirs), else the message's sender. A save or unsave has none: it reaches only the saver,
    /// whose other sessions are to hear it, and the session it came from is left out by session.
    public var author: String? {
        if let reaction { return reaction.uid }
        if name == .messageSaved || name == .messageUnsaved { return nil }
        return actor ?? message?.sender
    }

    /// Whom a bot's rules call the sender (`{sender...}`, `from`, `sender_scope`, a direct message,
    /// `subscribe: sender`, a kick): who subscribed or unsubscribed, whoever reacted, else the
    /// message's sender (of a pinned, edited or deleted message too), else the member of a member
    /// event.
    public var senderUid: String? {
        if name == .threadSubscribed || name == .threadUnsubscribed { return actor }
        return reaction?.uid ?? message?.sender ?? member?.uid
    }
}

/// A change of group membership: who, by whom, and the scopes involved.
public struct MemberChange: Sendable, Hashable, Codable {
    public var guid: String
    public var uid: String
    public var actor: String
    public var scope: GroupMemberScope?
    public var oldScope: GroupMemberScope?

    public init(
        guid: String, uid: String, actor: String, scope: GroupMemberScope? = nil,
        oldScope: GroupMemberScope? = nil
    ) {
        self.guid = guid
        self.uid = uid
        self.actor = actor
        self.scope = scope
        self.oldScope = oldScope
    }
}

/// Notifications a user marked read, for their other sessions: these outbox rows, and every row up
/// to `through` (0: none that way); `unreadCount` is what stays unread after it.
public struct NotificationsRead: Sendable, Hashable, Codable {
    public var seqs: [Int64]
    public var through: Int64
    public var unreadCount: Int

    public init(seqs: [Int64] = [], through: Int64 = 0, unreadCount: Int) {
        self.seqs = seqs
        self.through = through
        self.unreadCount = unreadCount
    }
}

/// The listener callbacks, with CometChat's names as raw values.
public enum EventName: String, Sendable, Hashable, Codable, CaseIterable {
    case textMessageReceived = "onTextMessageReceived"
    case mediaMessageReceived = "onMediaMessageReceived"
    case customMessageReceived = "onCustomMessageReceived"
    case messageEdited = "onMessageEdited"
    case messageDeleted = "onMessageDeleted"
    case messagePinned = "onMessagePinned"
    case messageUnpinned = "onMessageUnpinned"
    case messageSaved = "onMessageSaved"
    case messageUnsaved = "onMessageUnsaved"
    case messageReactionAdded = "onMessageReactionAdded"
    case messageReactionRemoved = "onMessageReactionRemoved"
    case groupMemberJoined = "onGroupMemberJoined"
    case groupMemberLeft = "onGroupMemberLeft"
    case groupMemberKicked = "onGroupMemberKicked"
    case groupMemberBanned = "onGroupMemberBanned"
    case groupMemberUnbanned = "onGroupMemberUnbanned"
    case groupMemberScopeChanged = "onGroupMemberScopeChanged"
    case memberAddedToGroup = "onMemberAddedToGroup"
    /// Perch's own: a user marked notifications read (reaches that user only).
    case notificationsRead = "onNotificationsRead"
    /// Perch's own: `actor` subscribed to, or unsubscribed from, the thread of `message`, by any
    /// means (a person's control, a command, a bot's action, a reply or mention); reaches the
    /// user and the conversation's bots.
    case threadSubscribed = "onThreadSubscribed"
    case threadUnsubscribed = "onThreadUnsubscribed"

    /// The "received" callback for a new message of this type and category.
    public static func received(_ message: Message) -> EventName {
        if message.category == .custom { return .customMessageReceived }
        if MessageType.media.contains(message.type) { return .mediaMessageReceived }
        return .textMessageReceived
    }

    public var isNewMessage: Bool {
        self == .textMessageReceived || self == .mediaMessageReceived || self == .customMessageReceived
    }
}

/// Who receives an event: every member of a group at read time, and/or listed users; a session
/// may be left out (a user's own save reaches only their other sessions).
public struct EventAudience: Sendable, Hashable {
    public var group: String?
    public var users: [String]
    public var excludedSession: String?

    public init(group: String? = nil, users: [String] = [], excludedSession: String? = nil) {
        self.group = group
        self.users = users
        self.excludedSession = excludedSession
    }
}
