/// Why a user is notified of a message.
public enum NotificationReason: String, Sendable, Hashable, Codable, CaseIterable {
    case message
    case mention
    case reply
    case subscribedThread = "subscribed_thread"
    case quoteOnOwnMessage = "quote_on_own_message"

    /// When several reasons hold, the most specific one is recorded.
    var precedence: Int {
        switch self {
        case .mention: return 5
        case .quoteOnOwnMessage: return 4
        case .subscribedThread: return 3
        case .reply: return 2
        case .message: return 1
        }
    }
}

/// One user to notify, and why.
public struct NotificationRecipient: Sendable, Hashable {
    public var uid: String
    public var reason: NotificationReason

    public init(uid: String, reason: NotificationReason) {
        self.uid = uid
        self.reason = reason
    }
}

/// Who is notified of a new message, by each user's preferences (pure: the caller supplies the facts).
public enum NotificationRouting {
    /// The facts about one new message.
    public struct Input: Sendable {
        public var message: Message
        /// Everyone who can see the conversation now (the sender is left out here).
        public var audience: [String]
        /// Each audience member's preferences for this kind of conversation; missing means `defaults`.
        public var preferences: [String: ConversationPreferences]
        public var defaults: ConversationPreferences
        /// The thread's subscribers after this reply's automatic subscriptions (replies only).
        public var threadSubscribers: Set<String>
        /// The author of the quoted message (quote replies only).
        public var quotedAuthor: String?
        /// Members who hear nothing of this message: they muted its conversation, or turned on do
        /// not disturb.
        public var silenced: Set<String>

        public init(
            message: Message, audience: [String], preferences: [String: ConversationPreferences],
            defaults: ConversationPreferences, threadSubscribers: Set<String> = [], quotedAuthor: String? = nil,
            silenced: Set<String> = []
        ) {
            self.message = message
            self.audience = audience
            self.preferences = preferences
            self.defaults = defaults
            self.threadSubscribers = threadSubscribers
            self.quotedAuthor = quotedAuthor
            self.silenced = silenced
        }
    }

    /// The recipients in audience order: never the sender, only users with access. A top-level
    /// message follows `messages`; a thread reply `replies`; a quote reply `quotedReplies`; a
    /// message that is both a thread reply and a quote reply goes to the union of the two. A
    /// silenced member gets none, a mention of them included (a mute, as in CometChat and Matrix,
    /// is a whole conversation's; `SUBSCRIBE_TO_MENTIONS` is the setting for mentions only).
    public static func recipients(_ input: Input) -> [NotificationRecipient] {
        let message = input.message
        let mentioned = Set(message.mentionedUids)
        var result: [NotificationRecipient] = []
        result.reserveCapacity(input.audience.count)
        for uid in input.audience where uid != message.sender && !input.silenced.contains(uid) {
            let preferences = input.preferences[uid] ?? input.defaults
            let isMentioned = mentioned.contains(uid)
            // The reason with the highest precedence (the first of equals), kept as found: a list
            // of reasons per member was an allocation per member of the audience.
            var best: NotificationReason?
            func consider(_ reason: NotificationReason) {
                if best.map({ $0.precedence < reason.precedence }) ?? true { best = reason }
            }
            if !message.isReply && !message.isQuoteReply {
                switch preferences.messages {
                case .dontSubscribe: break
                case .subscribeToAll: consider(isMentioned ? .mention : .message)
                case .subscribeToMentions: if isMentioned { consider(.mention) }
                }
            }
            if message.isReply {
                switch preferences.replies {
                case .dontSubscribe: break
                case .subscribeToAll: consider(isMentioned ? .mention : .reply)
                case .subscribeToMentions: if isMentioned { consider(.mention) }
                case .subscribeToSubscribedThreads:
                    if input.threadSubscribers.contains(uid) { consider(.subscribedThread) }
                }
            }
            if message.isQuoteReply {
                switch preferences.quotedReplies {
                case .dontSubscribe: break
                case .subscribeToAll: consider(isMentioned ? .mention : .reply)
                case .subscribeToMentions: if isMentioned { consider(.mention) }
                case .subscribeToQuotesOnOwnMessages:
                    if input.quotedAuthor == uid { consider(.quoteOnOwnMessage) }
                }
            }
            if let best {
                result.append(NotificationRecipient(uid: uid, reason: best))
            }
        }
        return result
    }
}
