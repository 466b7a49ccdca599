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

    public init(group: ConversationPreferences = .groupDefault, oneOnOne: ConversationPreferences = .oneOnOneDefault) {
        self.group = group
        self.oneOnOne = oneOnOne
    }

    public func forReceiverType(_ type: ReceiverType) -> ConversationPreferences {
        type == .group ? group : oneOnOne
    }
}
