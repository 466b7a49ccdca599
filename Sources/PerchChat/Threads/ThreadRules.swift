/// Threads are one level deep and live in one conversation.
public enum ThreadRules {
    /// Checks that `parent` can take a reply sent into `conversationId`.
    /// - Throws: `ERR_MESSAGE_ID_NOT_FOUND` (missing or deleted), `ERR_WRONG_MESSAGE_THREAD`
    ///   (another conversation), `ERR_MESSAGE_THREAD_NESTING` (the parent is itself a reply),
    ///   `ERR_MESSAGE_ACTION_NOT_ALLOWED` (an action message has no thread).
    public static func checkReply(to parent: Message?, parentId: Int64, conversationId: String) throws(ChatError) {
        guard let parent, !parent.isDeleted else { throw .messageNotFound(parentId) }
        guard parent.conversationId == conversationId else {
            throw ChatError(.wrongMessageThread, ["parentMessageId": .int(parentId)])
        }
        guard !parent.isReply else {
            throw ChatError(.messageThreadNesting, ["parentMessageId": .int(parentId)])
        }
        guard parent.category != .action else {
            throw ChatError(
                .messageActionNotAllowed,
                ["parentMessageId": .int(parentId), "reason": "action messages have no thread"])
        }
    }

    /// The id of the thread a message belongs to: its parent's for a reply, its own otherwise.
    public static func threadRoot(of message: Message) -> Int64 {
        message.isReply ? message.parentMessageId : message.id
    }
}
