/// Thread subscription (docs/chat-model.md, "Thread subscriptions"): who may subscribe, and whom a
/// reply subscribes.
public enum ThreadSubscriptionRules {
    /// Checks an explicit subscribe or unsubscribe to the thread of `parent`.
    /// - Throws: `ERR_MESSAGE_ID_NOT_FOUND` (missing or deleted), `ERR_MESSAGE_NO_ACCESS`,
    ///   `ERR_MESSAGE_ACTION_NOT_ALLOWED` (a reply, or an action message, has no thread).
    public static func check(_ parent: Message?, id: Int64, by actor: Participation) throws(ChatError) {
        guard let parent, !parent.isDeleted else { throw .messageNotFound(id) }
        try AccessRules.checkRead(actor, messageId: id)
        guard !parent.isReply else {
            throw ChatError(
                .messageActionNotAllowed, ["messageId": .int(id), "reason": "a reply has no thread of its own"])
        }
        guard parent.category != .action else {
            throw ChatError(
                .messageActionNotAllowed, ["messageId": .int(id), "reason": "action messages have no thread"])
        }
    }

    /// Whom a new reply subscribes: on the thread's first reply, the parent's author and the users
    /// mentioned in the parent (they started it); on every reply, its sender and the users it
    /// mentions. Unsubscribing is not sticky: these apply whatever the user did before. The caller
    /// keeps only users with access.
    public static func autoSubscribers(parent: Message, reply: Message, isFirstReply: Bool) -> [String] {
        var uids: [String] = []
        if isFirstReply { uids += [parent.sender] + parent.mentionedUids }
        uids += [reply.sender] + reply.mentionedUids
        var seen: Set<String> = []
        return uids.filter { $0 != User.system && seen.insert($0).inserted }
    }
}
