import PerchChat

/// One page of a message's reactions, oldest first.
public struct ReactionPage: Sendable, Hashable {
    public var reactions: [Reaction]
    /// Whether more lie after this page (continue after its last reaction).
    public var hasMore: Bool

    public init(reactions: [Reaction], hasMore: Bool) {
        self.reactions = reactions
        self.hasMore = hasMore
    }
}

extension ChatService {
    /// Adds `uid`'s reaction to a message (CometChat's `addReaction`); `onMessageReactionAdded`
    /// reaches the whole conversation. Reacting again with the same reaction changes nothing and
    /// announces nothing. Answers the message with its counts for `uid`.
    /// - Throws: `ERR_BAD_REQUEST` (the reaction's text), `ERR_MESSAGE_ID_NOT_FOUND`,
    ///   `ERR_MESSAGE_NO_ACCESS`, `ERR_MESSAGE_ACTION_NOT_ALLOWED` (an action message, or a 51st
    ///   different reaction: `{messageId, limit}`).
    public func addReaction(_ reaction: String, to id: Int64, as uid: String) async throws(ChatError) -> Message {
        try ReactionRules.checkText(reaction)
        let now = clock.now()
        return try await writing { tx in
            let (found, actor) = try Self.lookup(tx, id, by: uid)
            let message = try ReactionRules.checkReact(found, id: id, by: actor)
            let counts = try tx.reactionCounts(messageIds: [id], viewer: uid)[id] ?? []
            if !counts.contains(where: { $0.reaction == reaction && $0.reactedByMe }) {
                try ReactionRules.checkRoom(for: reaction, on: counts, messageId: id)
                var added = Reaction(messageId: id, reaction: reaction, uid: uid, reactedAt: now)
                added.id = try tx.setReaction(added, added: true) ?? 0
                try Self.announce(tx, .messageReactionAdded, message, reaction: added, at: now)
            }
            return try Self.decorate(tx, [message], for: uid)[0]
        }
    }

    /// Takes back `uid`'s reaction to a message (`removeReaction`); `onMessageReactionRemoved`
    /// reaches the whole conversation. Taking back a reaction one never made succeeds and
    /// announces nothing.
    /// - Throws: as ``addReaction(_:to:as:)`` but the limit.
    public func removeReaction(_ reaction: String, from id: Int64, as uid: String) async throws(ChatError) -> Message {
        try ReactionRules.checkText(reaction)
        let now = clock.now()
        return try await writing { tx in
            let (found, actor) = try Self.lookup(tx, id, by: uid)
            let message = try ReactionRules.checkReact(found, id: id, by: actor)
            let counts = try tx.reactionCounts(messageIds: [id], viewer: uid)[id] ?? []
            if counts.contains(where: { $0.reaction == reaction && $0.reactedByMe }) {
                var removed = Reaction(messageId: id, reaction: reaction, uid: uid, reactedAt: now)
                removed.id = try tx.setReaction(removed, added: false) ?? 0
                try Self.announce(tx, .messageReactionRemoved, message, reaction: removed, at: now)
            }
            return try Self.decorate(tx, [message], for: uid)[0]
        }
    }

    /// Who reacted to a message (CometChat's `ReactionsRequest`), oldest first; with `reaction`,
    /// only those who reacted so. `after` continues after the reaction of a previous page with
    /// that id.
    /// - Throws: `ERR_BAD_REQUEST` (`limit` outside 1–100, the reaction's text),
    ///   `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`.
    public func reactions(
        to id: Int64, reaction: String? = nil, limit: Int = 30, after: Int64? = nil, as viewer: String
    ) async throws(ChatError) -> ReactionPage {
        guard (1...100).contains(limit) else { throw .badRequest("limit", "must be 1–100") }
        if let reaction { try ReactionRules.checkText(reaction) }
        return try await reading { tx in
            guard let message = try tx.message(id), !message.isDeleted else { throw ChatError.messageNotFound(id) }
            try AccessRules.checkRead(try Self.participation(tx, uid: viewer, towards: message), messageId: id)
            let rows = try tx.reactions(messageId: id, reaction: reaction, limit: limit + 1, after: after)
            return ReactionPage(reactions: Array(rows.prefix(limit)), hasMore: rows.count > limit)
        }
    }
}
