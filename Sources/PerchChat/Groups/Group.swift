/// A group conversation.
public struct Group: Sendable, Hashable, Codable {
    public var guid: String
    public var name: String
    public var type: GroupType
    public var owner: String
    public var metadata: JSONValue?
    public var membersCount: Int
    public var createdAt: Int64
    public var updatedAt: Int64

    public init(
        guid: String, name: String, type: GroupType = .public, owner: String, metadata: JSONValue? = nil,
        membersCount: Int = 0, createdAt: Int64 = 0, updatedAt: Int64 = 0
    ) {
        self.guid = guid
        self.name = name
        self.type = type
        self.owner = owner
        self.metadata = metadata
        self.membersCount = membersCount
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    public var conversationId: String { ConversationID.group(guid) }
}

/// `public` groups anyone may join; `private` groups take members only when added.
public enum GroupType: String, Sendable, Hashable, Codable, CaseIterable {
    case `public`
    case `private`
}

/// A member's scope, ordered: owner > admin > moderator > participant.
public enum GroupMemberScope: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    case participant
    case moderator
    case admin
    case owner

    var rank: Int {
        switch self {
        case .participant: return 0
        case .moderator: return 1
        case .admin: return 2
        case .owner: return 3
        }
    }

    public static func < (lhs: GroupMemberScope, rhs: GroupMemberScope) -> Bool { lhs.rank < rhs.rank }

    /// Moderators and above may moderate: delete others' messages, pin, kick and ban.
    public var canModerate: Bool { self >= .moderator }
}

/// A user's standing in one group.
public struct GroupMember: Sendable, Hashable, Codable {
    public var guid: String
    public var uid: String
    public var scope: GroupMemberScope
    public var joinedAt: Int64

    public init(guid: String, uid: String, scope: GroupMemberScope, joinedAt: Int64 = 0) {
        self.guid = guid
        self.uid = uid
        self.scope = scope
        self.joinedAt = joinedAt
    }
}
