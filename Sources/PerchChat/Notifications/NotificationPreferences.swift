/// Which top-level messages notify a user (CometChat's `MessagesOptions`).
public enum MessagesOption: Int, Sendable, Hashable, Codable, CaseIterable {
    case dontSubscribe = 1
    case subscribeToAll = 2
    case subscribeToMentions = 3

    public var name: String {
        switch self {
        case .dontSubscribe: return "DONT_SUBSCRIBE"
        case .subscribeToAll: return "SUBSCRIBE_TO_ALL"
        case .subscribeToMentions: return "SUBSCRIBE_TO_MENTIONS"
        }
    }
}

/// Which thread replies notify a user (`RepliesOptions`); raw 4 is subscribed threads only.
public enum RepliesOption: Int, Sendable, Hashable, Codable, CaseIterable {
    case dontSubscribe = 1
    case subscribeToAll = 2
    case subscribeToMentions = 3
    case subscribeToSubscribedThreads = 4

    public var name: String {
        switch self {
        case .dontSubscribe: return "DONT_SUBSCRIBE"
        case .subscribeToAll: return "SUBSCRIBE_TO_ALL"
        case .subscribeToMentions: return "SUBSCRIBE_TO_MENTIONS"
        case .subscribeToSubscribedThreads: return "SUBSCRIBE_TO_SUBSCRIBED_THREADS"
        }
    }
}

/// Which quote replies notify a user (`QuotedRepliesOptions`); raw 4 is quotes of own messages.
/// Raw 4 here is not raw 4 of ``RepliesOption``: the two enums are separate on purpose.
public enum QuotedRepliesOption: Int, Sendable, Hashable, Codable, CaseIterable {
    case dontSubscribe = 1
    case subscribeToAll = 2
    case subscribeToMentions = 3
    case subscribeToQuotesOnOwnMessages = 4

    public var name: String {
        switch self {
        case .dontSubscribe: return "DONT_SUBSCRIBE"
        case .subscribeToAll: return "SUBSCRIBE_TO_ALL"
        case .subscribeToMentions: return "SUBSCRIBE_TO_MENTIONS"
        case .subscribeToQuotesOnOwnMessages: return "SUBSCRIBE_TO_QUOTES_ON_OWN_MESSAGES"
        }
    }
}

/// One set of preferences: for group conversations, or for one-on-one conversations.
public struct ConversationPreferences: Sendable, Hashable, Codable {
    public var messages: MessagesOption
    public var replies: RepliesOption
    public var quotedReplies: QuotedRepliesOption

    public init(messages: MessagesOption, replies: RepliesOption, quotedReplies: QuotedRepliesOption) {
        self.messages = messages
        self.replies = replies
        self.quotedReplies = quotedReplies
    }

    /// CometChat's defaults: every message and reply, quotes of one's own messages.
    public static let groupDefault = ConversationPreferences(
        messages: .subscribeToAll, replies: .subscribeToAll, quotedReplies: .subscribeToAll)
    public static let oneOnOneDefault = ConversationPreferences(
        messages: .subscribeToAll, replies: .subscribeToAll, quotedReplies: .subscribeToAll)
}

/// A user's notification preferences.
public struct NotificationPreferences: Sendable, Hashable, Codable {
    public var group: ConversationPreferences
    public var oneOnOne: ConversationPreferences
    /// Do not disturb (CometChat's `mutePreferences.dnd`): no notification at all while on.
    public var doNotDisturb: Bool

    public init(
        group: ConversationPreferences = .groupDefault, oneOnOne: ConversationPreferences = .oneOnOneDefault,
        doNotDisturb: Bool = false
    ) {
        self.group = group
        self.oneOnOne = oneOnOne
        self.doNotDisturb = doNotDisturb
    }

    public func forReceiverType(_ type: ReceiverType) -> ConversationPreferences {
        type == .group ? group : oneOnOne
    }

    enum CodingKeys: String, CodingKey {
        case group, oneOnOne, doNotDisturb
    }

    /// Preferences stored before do-not-disturb existed read as off.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        group = try container.decode(ConversationPreferences.self, forKey: .group)
        oneOnOne = try container.decode(ConversationPreferences.self, forKey: .oneOnOne)
        doNotDisturb = try container.decodeIfPresent(Bool.self, forKey: .doNotDisturb) ?? false
    }
}

/// A change to some of a user's notification preferences (a `PUT` body): each field given replaces
/// that preference, and the others stay as they are when the change is applied.
public struct NotificationPreferencesChange: Sendable, Hashable {
    /// A change to one set of preferences (group, or one-on-one).
    public struct Conversation: Sendable, Hashable {
        public var messages: MessagesOption?
        public var replies: RepliesOption?
        public var quotedReplies: QuotedRepliesOption?

        public init(
            messages: MessagesOption? = nil, replies: RepliesOption? = nil, quotedReplies: QuotedRepliesOption? = nil
        ) {
            self.messages = messages
            self.replies = replies
            self.quotedReplies = quotedReplies
        }

        public func applied(to preferences: ConversationPreferences) -> ConversationPreferences {
            ConversationPreferences(
                messages: messages ?? preferences.messages, replies: replies ?? preferences.replies,
                quotedReplies: quotedReplies ?? preferences.quotedReplies)
        }
    }

    public var group: Conversation
    public var oneOnOne: Conversation
    public var doNotDisturb: Bool?

    public init(
        group: Conversation = Conversation(), oneOnOne: Conversation = Conversation(), doNotDisturb: Bool? = nil
    ) {
        self.group = group
        self.oneOnOne = oneOnOne
        self.doNotDisturb = doNotDisturb
    }

    public func applied(to preferences: NotificationPreferences) -> NotificationPreferences {
        NotificationPreferences(
            group: group.applied(to: preferences.group), oneOnOne: oneOnOne.applied(to: preferences.oneOnOne),
            doNotDisturb: doNotDisturb ?? preferences.doNotDisturb)
    }
}

/// One conversation a user muted (CometChat's `MutedConversation`): no notification of it reaches
/// them until `until` (epoch seconds; 0: until they unmute it).
public struct MutedConversation: Sendable, Hashable {
    /// The conversation from the muting user's side: the group, or the other user.
    public var receiver: Receiver
    public var until: Int64

    public init(receiver: Receiver, until: Int64) {
        self.receiver = receiver
        self.until = until
    }

    /// Whether a mute ending at `until` still holds at `now`: a mute ends when its second comes.
    public static func holds(until: Int64, at now: Int64) -> Bool { until == 0 || until > now }
}

/// The rules of muting (pure: the caller gives the clock).
public enum MuteRules {
    /// A mute's end must lie ahead: one already past would mute nothing.
    /// - Throws: `ERR_BAD_REQUEST {field}` (`until`, or the body's name for it).
    public static func checkUntil(_ until: Int64, now: Int64, field: String = "until") throws(ChatError) {
        guard MutedConversation.holds(until: until, at: now) else {
            throw ChatError.badRequest(field, "must lie ahead (epoch seconds), or be 0 for until unmuted")
        }
    }

    /// At most this many conversations in one call.
    public static let batchLimit = 100
}
