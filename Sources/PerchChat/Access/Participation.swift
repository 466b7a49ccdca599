/// What the rules need to know about one actor in one conversation: the facts the store looks up,
/// handed to pure functions.
public struct Participation: Sendable, Hashable {
    public enum Standing: Sendable, Hashable {
        /// A participant of a one-on-one conversation.
        case oneOnOneParticipant
        /// A member of the group with this scope.
        case member(GroupMemberScope)
        /// Banned from the group.
        case banned
        /// Not part of the conversation (never joined, left or was kicked).
        case outsider
        /// `app_system`, which may act anywhere.
        case system
    }

    public var uid: String
    public var receiverType: ReceiverType
    public var standing: Standing

    public init(uid: String, receiverType: ReceiverType, standing: Standing) {
        self.uid = uid
        self.receiverType = receiverType
        self.standing = standing
    }

    /// Whether the actor may read the conversation's messages.
    public var canRead: Bool {
        switch standing {
        case .oneOnOneParticipant, .member, .system: return true
        case .banned, .outsider: return false
        }
    }

    /// The actor's group scope, `.owner` for app_system, nil outside groups.
    public var scope: GroupMemberScope? {
        switch standing {
        case .member(let scope): return scope
        case .system: return .owner
        default: return nil
        }
    }

    public var isSystem: Bool { standing == .system }
}

/// Who may see and send in a conversation.
public enum AccessRules {
    /// Checks that the actor may send a message into the conversation.
    /// - Throws: `ERR_BANNED_GROUPMEMBER` when banned, `ERR_GROUP_NOT_JOINED` when not a member.
    public static func checkSend(_ actor: Participation, guid: String?) throws(ChatError) {
        switch actor.standing {
        case .oneOnOneParticipant, .member, .system: return
        case .banned: throw ChatError(.bannedGroupMember, ["uid": .string(actor.uid), "guid": .string(guid ?? "")])
        case .outsider: throw ChatError(.groupNotJoined, ["guid": .string(guid ?? "")])
        }
    }

    /// Checks that the actor may see a message of the conversation.
    /// - Throws: `ERR_MESSAGE_NO_ACCESS`.
    public static func checkRead(_ actor: Participation, messageId: Int64) throws(ChatError) {
        guard actor.canRead else { throw ChatError(.messageNoAccess, ["messageId": .int(messageId)]) }
    }
}
