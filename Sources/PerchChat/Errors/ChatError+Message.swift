extension ChatError {
    /// The English text of this error, rendered from the code and the params in one place.
    public var message: String {
        func param(_ key: String) -> String { params[key]?.description ?? "?" }
        switch code {
        case .messageIdNotFound: return "Message \(param("messageId")) does not exist or was deleted."
        case .messageNoAccess: return "You do not have access to this message."
        case .messageActionNotAllowed:
            if let reason = params["reason"] { return "This action is not allowed on this message: \(reason)." }
            if let count = params["quoteReplyCount"] {
                guard count != .int(1) else { return "The message has a quote reply; delete it first." }
                return "The message has \(count) quote replies; delete them first."
            }
            return "This action is not allowed on this message."
        case .messageNotASender: return "Only the sender may do this to the message."
        case .messageThreadNesting: return "Threads are one level deep: a reply cannot have replies."
        case .wrongMessageThread:
            if params["quotedMessageId"] != nil { return "The quoted message belongs to another conversation." }
            return "The parent message belongs to another conversation."
        case .permissionDenied: return "Your scope does not allow this here."
        case .pinnedMessagesLimitExceeded:
            return "The conversation already has the maximum of \(param("limit")) pinned messages."
        case .savedMessagesLimitExceeded: return "You already have the maximum of \(param("limit")) saved messages."
        case .featureNotAccessible: return "The feature \(param("feature")) is not enabled for this app."
        case .uidNotFound: return "User \(param("uid")) does not exist."
        case .uidAlreadyExists: return "User \(param("uid")) already exists."
        case .guidNotFound: return "Group \(param("guid")) does not exist."
        case .guidAlreadyExists: return "Group \(param("guid")) already exists."
        case .groupNotJoined: return "You are not a member of group \(param("guid"))."
        case .notAMember: return "User \(param("uid")) is not a member of group \(param("guid"))."
        case .alreadyJoined: return "User \(param("uid")) is already a member of group \(param("guid"))."
        case .groupJoinNotAllowed: return "Group \(param("guid")) cannot be joined without an invitation."
        case .bannedGroupMember: return "User \(param("uid")) is banned from group \(param("guid"))."
        case .groupNoClearance: return "Your scope in the group does not allow this."
        case .groupNoScopeClearance: return "Your scope does not allow this for a group \(param("scope"))."
        case .groupNoSelfAction: return "You cannot do this to yourself."
        case .sameScope: return "The member already has scope \(param("scope"))."
        case .emptyMessageText: return "A text message needs text."
        case .invalidReceiverType: return "receiverType must be user or group."
        case .invalidMessageData: return "The message data is invalid: \(param("reason"))."
        case .webhookNotFound: return "No bot rule listens on the webhook \(param("name"))."
        case .botNotFound: return "No bot has the uid \(param("uid"))."
        case .pluginNotFound: return "No running bot has the plugin \(param("name"))."
        case .badRequest: return "Invalid \(param("field")): \(param("reason"))."
        case .tooManyRequests: return "Too many requests; retry after \(param("retryAfter")) seconds."
        case .authNoCredentials: return "No credentials: send an apikey or authtoken header."
        case .authInvalidToken: return "The auth token is not valid."
        case .authInvalidAPIKey: return "The API key is not valid."
        case .serviceUnavailable:
            guard params["reason"] == "storage_full" else { return "The service is shutting down; try again shortly." }
            return
                "The service cannot store anything now: its disk is full; try again in \(param("retryAfter")) seconds."
        default: return "Internal error \(param("id"))."
        }
    }
}
