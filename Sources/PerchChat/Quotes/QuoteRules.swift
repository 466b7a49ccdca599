/// Quote replies (Sendbird's; docs/chat-model.md, "Threads and quote replies"): one level deep,
/// within one conversation.
public enum QuoteRules {
    /// Checks that `quoted` can be quoted by a message sent into `conversationId`.
    /// - Throws: `ERR_MESSAGE_ID_NOT_FOUND` (missing or deleted), `ERR_WRONG_MESSAGE_THREAD`
    ///   (another conversation), `ERR_MESSAGE_ACTION_NOT_ALLOWED` (a quote of a quote reply, or of
    ///   an action message).
    public static func checkQuote(of quoted: Message?, quotedId: Int64, conversationId: String) throws(ChatError) {
        guard let quoted, !quoted.isDeleted else { throw .messageNotFound(quotedId) }
        guard quoted.conversationId == conversationId else {
            throw ChatError(.wrongMessageThread, ["quotedMessageId": .int(quotedId)])
        }
        guard !quoted.isQuoteReply else {
            throw ChatError(
                .messageActionNotAllowed,
                ["quotedMessageId": .int(quotedId), "reason": "a quote reply cannot be quoted"])
        }
        guard quoted.category != .action else {
            throw ChatError(
                .messageActionNotAllowed,
                ["quotedMessageId": .int(quotedId), "reason": "an action message cannot be quoted"])
        }
    }
}
