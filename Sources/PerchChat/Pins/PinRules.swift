/// Who may pin and save (docs/chat-model.md, "Pins and saves").
public enum PinRules {
    /// Checks a pin or unpin: in a group only its owner, admins and moderators; in one-on-one both
    /// participants; `app_system` anywhere. Action messages cannot be pinned.
    /// - Throws: `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`, `ERR_MESSAGE_ACTION_NOT_ALLOWED`,
    ///   `ERR_PERMISSION_DENIED`.
    public static func checkPin(_ message: Message?, id: Int64, by actor: Participation) throws(ChatError) {
        guard let message, !message.isDeleted else { throw .messageNotFound(id) }
        try AccessRules.checkRead(actor, messageId: id)
        guard message.category != .action else {
            throw ChatError(
                .messageActionNotAllowed, ["messageId": .int(id), "reason": "action messages cannot be pinned"])
        }
        if message.receiverType == .group, !actor.isSystem, !(actor.scope?.canModerate ?? false) {
            throw ChatError(.permissionDenied, ["messageId": .int(id)])
        }
    }

    /// Checks the conversation's pin limit before a new pin (a re-pin takes no new place).
    /// - Throws: `ERR_PINNED_MESSAGES_LIMIT_EXCEEDED {limit}`.
    public static func checkPinLimit(pinned: Int, limit: Int, alreadyPinned: Bool) throws(ChatError) {
        guard alreadyPinned || pinned < limit else {
            throw ChatError(.pinnedMessagesLimitExceeded, ["limit": .int(Int64(limit))])
        }
    }

    /// How many of the pinner's own oldest pins a new pin releases under ``PinOverflow/unpinOldest``
    /// so that the conversation keeps at most `limit` pins: none while there is room (or for a
    /// re-pin), one at the limit, more when the limit was lowered below the pins already there.
    public static func pinsToRelease(pinned: Int, limit: Int, alreadyPinned: Bool) -> Int {
        alreadyPinned ? 0 : max(0, pinned - limit + 1)
    }

    /// Checks a save: any live, non-action message the user can see.
    /// - Throws: `ERR_MESSAGE_ID_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS`, `ERR_MESSAGE_ACTION_NOT_ALLOWED`.
    public static func checkSave(_ message: Message?, id: Int64, by actor: Participation) throws(ChatError) {
        guard let message, !message.isDeleted else { throw .messageNotFound(id) }
        try AccessRules.checkRead(actor, messageId: id)
        guard message.category != .action else {
            throw ChatError(
                .messageActionNotAllowed, ["messageId": .int(id), "reason": "action messages cannot be saved"])
        }
    }

    /// Checks the user's save limit before a new save; only live, accessible saves count.
    /// - Throws: `ERR_SAVED_MESSAGES_LIMIT_EXCEEDED {limit}`.
    public static func checkSaveLimit(saved: Int, limit: Int, alreadySaved: Bool) throws(ChatError) {
        guard alreadySaved || saved < limit else {
            throw ChatError(.savedMessagesLimitExceeded, ["limit": .int(Int64(limit))])
        }
    }
}

/// What a pin does when its conversation already holds `limits.pinsPerConversation` pins.
public enum PinOverflow: String, Sendable, Equatable, CaseIterable {
    /// Refuse with `ERR_PINNED_MESSAGES_LIMIT_EXCEEDED {limit}` (the default).
    case refuse
    /// Unpin the oldest pins the same pinner made, in the same transaction, to make room; refuse as
    /// above when the pinner holds none of the pins (people's pins are never released for it).
    case unpinOldest = "unpin_oldest"
}
