/// One user's reaction to a message (CometChat's `Reaction`): an emoji, or any short word
/// without spaces (`+1`, `:eyes:`).
public struct Reaction: Sendable, Hashable, Codable {
    /// Increasing in the order reactions were added (0 before it is stored).
    public var id: Int64
    public var messageId: Int64
    public var reaction: String
    public var uid: String
    public var reactedAt: Int64

    public init(id: Int64 = 0, messageId: Int64, reaction: String, uid: String, reactedAt: Int64) {
        self.id = id
        self.messageId = messageId
        self.reaction = reaction
        self.uid = uid
        self.reactedAt = reactedAt
    }
}

/// How many people reacted to a message with one reaction (CometChat's `ReactionCount`).
/// `reactedByMe` is per viewer: a fetch fills it, and a live
/// payload carries `false`, meaning "not reported".
public struct ReactionCount: Sendable, Hashable, Codable {
    public var reaction: String
    public var count: Int
    public var reactedByMe: Bool

    public init(reaction: String, count: Int, reactedByMe: Bool = false) {
        self.reaction = reaction
        self.count = count
        self.reactedByMe = reactedByMe
    }
}

/// The rules of reacting (pure: the caller looks the facts up).
public enum ReactionRules {
    /// The longest reaction, in UTF-8 bytes: room for any emoji sequence (a family with skin
    /// tones is 41) and for a short word.
    public static let maximumBytes = 64
    /// The most different reactions one message holds (Slack's limit is 50 as well).
    public static let perMessage = 50

    /// Checks a reaction's text: 1–64 UTF-8 bytes with no white space or control characters.
    /// - Throws: `ERR_BAD_REQUEST` naming `reaction`.
    public static func checkText(_ reaction: String) throws(ChatError) {
        guard !reaction.isEmpty, reaction.utf8.count <= maximumBytes else {
            throw .badRequest("reaction", "must be 1–\(maximumBytes) bytes of UTF-8")
        }
        guard
            !reaction.unicodeScalars.contains(where: {
                $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F
            })
        else {
            throw .badRequest("reaction", "must have no spaces or control characters")
        }
    }

    /// Checks that `actor` may react to (or take back a reaction to) a message: any live, non-action
    /// message they can see. Answers the message.
    /// - Throws: `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`, `ERR_MESSAGE_ACTION_NOT_ALLOWED`.
    @discardableResult
    public static func checkReact(_ message: Message?, id: Int64, by actor: Participation) throws(ChatError)
        -> Message
    {
        guard let message, !message.isDeleted else { throw .messageNotFound(id) }
        try AccessRules.checkRead(actor, messageId: id)
        guard message.category != .action else {
            throw ChatError(
                .messageActionNotAllowed, ["messageId": .int(id), "reason": "action messages take no reactions"])
        }
        return message
    }

    /// Checks that a new reaction fits on the message: one already there always does.
    /// - Throws: `ERR_MESSAGE_ACTION_NOT_ALLOWED {messageId, limit}`.
    public static func checkRoom(for reaction: String, on counts: [ReactionCount], messageId: Int64)
        throws(ChatError)
    {
        guard counts.count < perMessage || counts.contains(where: { $0.reaction == reaction }) else {
            throw ChatError(
                .messageActionNotAllowed,
                [
                    "messageId": .int(messageId), "limit": .int(Int64(perMessage)),
                    "reason": .string("a message holds at most \(perMessage) different reactions"),
                ])
        }
    }
}
