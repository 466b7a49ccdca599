import PerchChat

/// A rule's `allow:` or `deny:`: who it is for, matched against the sender. Any listed criterion
/// that holds matches: one of `users`, in one of `groups`, with one of `scopes` in the group, or,
/// with `admins: true`, one of config.yaml's `admins`.
public struct Access: Decodable, Sendable, Equatable {
    /// `users`: these senders (uids).
    public var users: [String]
    /// `groups`: messages in these groups (guids).
    public var groups: [String]
    /// `scopes`: senders with one of these scopes in the group.
    public var scopes: [GroupMemberScope]
    /// `admins` (default false): config.yaml's `admins`.
    public var admins: Bool

    enum CodingKeys: String, CodingKey { case users, groups, scopes, admins }

    public init(users: [String] = [], groups: [String] = [], scopes: [GroupMemberScope] = [], admins: Bool = false) {
        self.users = users
        self.groups = groups
        self.scopes = scopes
        self.admins = admins
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        users = try c.decodeIfPresent([String].self, forKey: .users) ?? []
        groups = try c.decodeIfPresent([String].self, forKey: .groups) ?? []
        scopes = try c.decodeIfPresent([GroupMemberScope].self, forKey: .scopes) ?? []
        admins = try c.decodeIfPresent(Bool.self, forKey: .admins) ?? false
    }

    /// Whether it names nobody (an `allow` so would let nobody in).
    public var isEmpty: Bool { users.isEmpty && groups.isEmpty && scopes.isEmpty && !admins }

    /// Whether the sender `uid`, in group `guid` (nil: a one-on-one conversation) with `scope`,
    /// matches; `admins` are config.yaml's.
    public func matches(uid: String, guid: String?, scope: GroupMemberScope?, admins configured: Set<String>) -> Bool {
        if users.contains(uid) { return true }
        if let guid, groups.contains(guid) { return true }
        if let scope, scopes.contains(scope) { return true }
        return admins && configured.contains(uid)
    }
}

/// What a command refused by `allow`/`deny` answers (`refusal:` on the rule).
public enum Refusal: String, Sendable, Decodable, CaseIterable {
    /// A direct message to the sender (the strings key `COMMAND_REFUSED`).
    case `private`
    /// Nothing (the log says it).
    case silent
}
