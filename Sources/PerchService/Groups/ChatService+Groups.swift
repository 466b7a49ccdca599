import PerchChat

extension ChatService {
    /// Creates a group; its creator becomes the owner.
    /// - Throws: `ERR_BAD_REQUEST`, `ERR_UID_NOT_FOUND`, `ERR_GUID_ALREADY_EXISTS`.
    public func createGroup(
        guid: String, name: String, type: GroupType = .public, owner: String,
        metadata: JSONValue? = nil
    ) async throws(ChatError) -> Group {
        guard User.isValidUID(guid) else {
            throw .badRequest("guid", "must be 1–100 characters of A–Z, a–z, 0–9, _ and -")
        }
        guard !name.isEmpty, name.utf8.count <= 100 else { throw .badRequest("name", "must be 1–100 characters") }
        let now = clock.now()
        return try await writing { tx in
            _ = try Self.requireUser(tx, owner)
            guard try tx.group(guid) == nil else { throw ChatError(.guidAlreadyExists, ["guid": .string(guid)]) }
            let group = Group(
                guid: guid, name: name, type: type, owner: owner, metadata: metadata, membersCount: 1,
                createdAt: now, updatedAt: now)
            try tx.insertGroup(group)
            try tx.upsertMember(GroupMember(guid: guid, uid: owner, scope: .owner, joinedAt: now))
            return group
        }
    }

    /// Changes a group's name, type or metadata (what is nil stays), as its owner, an admin or
    /// `app_system`. Ownership moves by scope changes, not here.
    /// - Throws: `ERR_BAD_REQUEST` (a name that is empty or over 100 characters), `ERR_GUID_NOT_FOUND`
    ///   (also for a private group the actor is not in), `ERR_GROUP_NOT_JOINED`, `ERR_GROUP_NO_CLEARANCE`.
    public func updateGroup(
        _ guid: String, name: String? = nil, type: GroupType? = nil, metadata: JSONValue? = nil, by actor: String
    ) async throws(ChatError) -> Group {
        if let name, name.trimmingCharacters(in: .whitespaces).isEmpty || name.utf8.count > 100 {
            throw .badRequest("name", "must be 1–100 characters")
        }
        let now = clock.now()
        return try await writing { tx in
            var group = try Self.requireGroup(tx, guid)
            let who = try Self.participation(tx, uid: actor, in: .group(guid))
            if group.type == .private, who.scope == nil { throw ChatError.guidNotFound(guid) }
            try GroupRules.checkUpdate(actor: who, guid: guid)
            if let name { group.name = name }
            if let type { group.type = type }
            if let metadata { group.metadata = metadata }
            group.updatedAt = now
            try tx.updateGroup(group)
            return group
        }
    }

    /// Creates the group with this owner when absent (seeding). Idempotent; an existing group is
    /// left as it is.
    public func ensureGroup(guid: String, name: String, type: GroupType, owner: String) async throws(ChatError) -> Group
    {
        let now = clock.now()
        return try await writing { tx in
            if let group = try tx.group(guid) { return group }
            _ = try Self.requireUser(tx, owner)
            let group = Group(
                guid: guid, name: name, type: type, owner: owner, membersCount: 1, createdAt: now,
                updatedAt: now)
            try tx.insertGroup(group)
            try tx.upsertMember(GroupMember(guid: guid, uid: owner, scope: .owner, joinedAt: now))
            return group
        }
    }

    /// Makes `uid` a member with `scope` (a bot's groups): adds them unless banned, or changes a
    /// member's scope (never the owner's). Idempotent; emits `onMemberAddedToGroup` when it adds and
    /// `onGroupMemberScopeChanged` when it changes a scope, with the group's owner as the actor.
    public func ensureMember(guid: String, uid: String, scope: GroupMemberScope) async throws(ChatError) {
        let now = clock.now()
        try await writing { tx in try Self.ensureMember(tx, guid: guid, uid: uid, scope: scope, at: now) }
    }

    /// A membership config.yaml's seed names: applied as ``ensureMember(guid:uid:scope:)`` the first
    /// time the seed names it and whenever its scope there changes, and otherwise left as people
    /// made it since. Someone who left, was kicked or had their scope changed is not put back by
    /// the next start or reload, as Slack and Matrix keep a person out of a room they left.
    public func ensureSeededMember(guid: String, uid: String, scope: GroupMemberScope) async throws(ChatError) {
        let now = clock.now()
        try await writing { tx in
            guard try tx.seededScope(guid: guid, uid: uid) != scope else { return }
            try Self.ensureMember(tx, guid: guid, uid: uid, scope: scope, at: now)
            try tx.recordSeededMember(guid: guid, uid: uid, scope: scope)
        }
    }

    static func ensureMember(
        _ tx: any ChatWriteTransaction, guid: String, uid: String, scope: GroupMemberScope, at now: Int64
    ) throws {
        let group = try requireGroup(tx, guid)
        _ = try requireUser(tx, uid)
        if let existing = try tx.member(guid: guid, uid: uid) {
            if existing.scope != scope, existing.scope != .owner {
                try tx.upsertMember(GroupMember(guid: guid, uid: uid, scope: scope, joinedAt: existing.joinedAt))
                // Announced as a person's scope change is: the members' lists and the action
                // message in the group's history follow.
                try memberEvent(
                    tx, .groupMemberScopeChanged, group: group, uid: uid, actor: User.system, scope: scope,
                    oldScope: existing.scope, at: now)
            }
            return
        }
        guard try !tx.isBanned(guid: guid, uid: uid) else { return }
        try tx.upsertMember(GroupMember(guid: guid, uid: uid, scope: scope, joinedAt: now))
        // The configuration did it (a bot file's groups, the seed): the app is the actor, never a
        // person who did nothing.
        try memberEvent(tx, .memberAddedToGroup, group: group, uid: uid, actor: User.system, scope: scope, at: now)
    }

    /// A group, for someone who may see it: any user for a public group, members for a private one.
    /// - Throws: `ERR_GUID_NOT_FOUND` (also for a private group the viewer is not in).
    public func group(_ guid: String, as viewer: String) async throws(ChatError) -> Group {
        try await reading { tx in
            let group = try Self.requireGroup(tx, guid)
            if group.type == .private, viewer != User.system, try tx.member(guid: guid, uid: viewer) == nil {
                throw ChatError.guidNotFound(guid)
            }
            return group
        }
    }

    /// Groups the viewer may see: public ones and private ones they belong to, in guid order.
    public func groups(as viewer: String, limit: Int = 100, after: String? = nil) async throws(ChatError) -> [Group] {
        guard (1...100).contains(limit) else { throw .badRequest("limit", "must be 1–100") }
        return try await reading { tx in
            var visible: [Group] = []
            var cursor = after
            while visible.count < limit {
                let page = try tx.groups(limit: limit, after: cursor)
                for group in page {
                    let isMember = try tx.member(guid: group.guid, uid: viewer) != nil
                    if group.type == .public || viewer == User.system || isMember { visible.append(group) }
                }
                guard page.count == limit, let last = page.last else { break }
                cursor = last.guid
            }
            return Array(visible.prefix(limit))
        }
    }

    /// A group's members, for its members.
    /// - Throws: `ERR_GUID_NOT_FOUND`, `ERR_GROUP_NOT_JOINED`.
    public func members(of guid: String, as viewer: String, limit: Int = 100, after: String? = nil)
        async throws(ChatError) -> [GroupMember]
    {
        guard (1...1000).contains(limit) else { throw .badRequest("limit", "must be 1–1000") }
        return try await reading { tx in
            _ = try Self.requireGroup(tx, guid)
            let actor = try Self.participation(tx, uid: viewer, in: .group(guid))
            guard actor.canRead else { throw ChatError(.groupNotJoined, ["guid": .string(guid)]) }
            return try tx.members(guid: guid, limit: limit, after: after)
        }
    }

    /// Adds users to a group (owners and admins).
    /// - Throws: `ERR_GUID_NOT_FOUND`, `ERR_UID_NOT_FOUND`, `ERR_GROUP_NO_CLEARANCE`,
    ///   `ERR_BANNED_GROUPMEMBER`, `ERR_ALREADY_JOINED`, `ERR_BAD_REQUEST` (owner scope).
    public func addMembers(to guid: String, _ additions: [(uid: String, scope: GroupMemberScope)], by actor: String)
        async throws(ChatError)
    {
        guard !additions.isEmpty, additions.count <= 100 else { throw .badRequest("members", "give 1–100 members") }
        guard additions.allSatisfy({ $0.scope != .owner }) else { throw .badRequest("scope", "a group has one owner") }
        let list = additions.map { ($0.uid, $0.scope) }
        let now = clock.now()
        try await writing { tx in
            let group = try Self.requireGroup(tx, guid)
            let who = try Self.participation(tx, uid: actor, in: .group(guid))
            guard let scope = who.scope, scope >= .admin else { throw ChatError(.groupNoClearance) }
            for (uid, memberScope) in list {
                _ = try Self.requireUser(tx, uid)
                guard try tx.member(guid: guid, uid: uid) == nil else {
                    throw ChatError(.alreadyJoined, ["uid": .string(uid), "guid": .string(guid)])
                }
                guard try !tx.isBanned(guid: guid, uid: uid) else {
                    throw ChatError(.bannedGroupMember, ["uid": .string(uid), "guid": .string(guid)])
                }
                if memberScope == .admin, scope != .owner, !who.isSystem { throw ChatError(.groupNoScopeClearance) }
                try tx.upsertMember(GroupMember(guid: guid, uid: uid, scope: memberScope, joinedAt: now))
                try Self.memberEvent(
                    tx, .memberAddedToGroup, group: group, uid: uid, actor: actor, scope: memberScope,
                    at: now)
            }
        }
    }

    /// Joins a public group.
    /// - Throws: `ERR_GUID_NOT_FOUND`, `ERR_GROUP_JOIN_NOT_ALLOWED` (private), `ERR_BANNED_GROUPMEMBER`,
    ///   `ERR_ALREADY_JOINED`.
    public func join(_ guid: String, as uid: String) async throws(ChatError) -> GroupMember {
        let now = clock.now()
        return try await writing { tx in
            let group = try Self.requireGroup(tx, guid)
            _ = try Self.requireUser(tx, uid)
            guard try tx.member(guid: guid, uid: uid) == nil else {
                throw ChatError(.alreadyJoined, ["uid": .string(uid), "guid": .string(guid)])
            }
            guard try !tx.isBanned(guid: guid, uid: uid) else {
                throw ChatError(.bannedGroupMember, ["uid": .string(uid), "guid": .string(guid)])
            }
            guard group.type == .public else { throw ChatError(.groupJoinNotAllowed, ["guid": .string(guid)]) }
            let member = GroupMember(guid: guid, uid: uid, scope: .participant, joinedAt: now)
            try tx.upsertMember(member)
            try Self.memberEvent(
                tx, .groupMemberJoined, group: group, uid: uid, actor: uid, scope: .participant, at: now)
            return member
        }
    }

    /// Leaves a group. The owner cannot leave (ownership has nowhere to go).
    /// - Throws: `ERR_GUID_NOT_FOUND`, `ERR_GROUP_NOT_JOINED`, `ERR_BAD_REQUEST`.
    public func leave(_ guid: String, as uid: String) async throws(ChatError) {
        let now = clock.now()
        try await writing { tx in
            let group = try Self.requireGroup(tx, guid)
            guard let member = try tx.member(guid: guid, uid: uid) else {
                throw ChatError(.groupNotJoined, ["guid": .string(guid)])
            }
            guard member.scope != .owner else { throw ChatError.badRequest("uid", "the owner cannot leave the group") }
            try tx.removeMember(guid: guid, uid: uid)
            try Self.memberEvent(tx, .groupMemberLeft, group: group, uid: uid, actor: uid, at: now, alsoTo: uid)
        }
    }

    /// Removes a member (moderators and above, over lower scopes).
    /// - Throws: `ERR_GUID_NOT_FOUND`, `ERR_UID_NOT_FOUND`, `ERR_NOT_A_MEMBER`, `ERR_GROUP_NO_CLEARANCE`,
    ///   `ERR_GROUP_NO_SCOPE_CLEARANCE`, `ERR_GROUP_NO_SELF_ACTION`.
    public func kick(_ uid: String, from guid: String, by actor: String) async throws(ChatError) {
        let now = clock.now()
        try await writing { tx in
            let group = try Self.requireGroup(tx, guid)
            _ = try Self.requireUser(tx, uid)
            let who = try Self.participation(tx, uid: actor, in: .group(guid))
            guard let target = try tx.member(guid: guid, uid: uid) else {
                try GroupRules.checkRemoval(actor: who, target: uid, targetScope: nil)
                throw ChatError(.notAMember, ["uid": .string(uid), "guid": .string(guid)])
            }
            try GroupRules.checkRemoval(actor: who, target: uid, targetScope: target.scope)
            try tx.removeMember(guid: guid, uid: uid)
            try Self.memberEvent(tx, .groupMemberKicked, group: group, uid: uid, actor: actor, at: now, alsoTo: uid)
        }
    }

    /// Bans a user (member or not) from a group: they are removed and cannot rejoin.
    /// - Throws: as ``kick(_:from:by:)``, and `ERR_UID_NOT_FOUND`.
    public func ban(_ uid: String, from guid: String, by actor: String) async throws(ChatError) {
        let now = clock.now()
        try await writing { tx in
            let group = try Self.requireGroup(tx, guid)
            _ = try Self.requireUser(tx, uid)
            let who = try Self.participation(tx, uid: actor, in: .group(guid))
            let target = try tx.member(guid: guid, uid: uid)
            try GroupRules.checkRemoval(actor: who, target: uid, targetScope: target?.scope)
            guard try !tx.isBanned(guid: guid, uid: uid) else { return }
            try tx.removeMember(guid: guid, uid: uid)
            try tx.setBanned(guid: guid, uid: uid, banned: true, at: now)
            try Self.memberEvent(tx, .groupMemberBanned, group: group, uid: uid, actor: actor, at: now, alsoTo: uid)
        }
    }

    /// Lifts a ban; the user may join again.
    /// - Throws: `ERR_GUID_NOT_FOUND`, `ERR_UID_NOT_FOUND`, `ERR_GROUP_NO_CLEARANCE`, `ERR_BAD_REQUEST`
    ///   (not banned).
    public func unban(_ uid: String, from guid: String, by actor: String) async throws(ChatError) {
        let now = clock.now()
        try await writing { tx in
            let group = try Self.requireGroup(tx, guid)
            _ = try Self.requireUser(tx, uid)
            let who = try Self.participation(tx, uid: actor, in: .group(guid))
            guard let scope = who.scope, scope.canModerate else { throw ChatError(.groupNoClearance) }
            guard try tx.isBanned(guid: guid, uid: uid) else {
                throw ChatError.badRequest("uid", "\(uid) is not banned")
            }
            try tx.setBanned(guid: guid, uid: uid, banned: false, at: now)
            try Self.memberEvent(tx, .groupMemberUnbanned, group: group, uid: uid, actor: actor, at: now, alsoTo: uid)
        }
    }

    /// Banned uids of a group, in uid order, for its moderators and above.
    /// - Throws: `ERR_GUID_NOT_FOUND` (also for a private group the viewer is not in),
    ///   `ERR_GROUP_NO_CLEARANCE`.
    public func bannedUsers(of guid: String, as viewer: String) async throws(ChatError) -> [String] {
        try await reading { tx in
            let group = try Self.requireGroup(tx, guid)
            let who = try Self.participation(tx, uid: viewer, in: .group(guid))
            if group.type == .private, who.scope == nil { throw ChatError.guidNotFound(guid) }
            guard let scope = who.scope, scope.canModerate else { throw ChatError(.groupNoClearance) }
            return try tx.bannedUids(guid: guid)
        }
    }

    /// Changes a member's scope with CometChat's rules.
    /// - Throws: `ERR_GUID_NOT_FOUND`, `ERR_UID_NOT_FOUND`, `ERR_NOT_A_MEMBER`, `ERR_GROUP_NO_CLEARANCE`,
    ///   `ERR_GROUP_NO_SCOPE_CLEARANCE`, `ERR_GROUP_NO_SELF_ACTION`, `ERR_SAME_SCOPE`.
    public func changeScope(of uid: String, in guid: String, to scope: GroupMemberScope, by actor: String)
        async throws(ChatError) -> GroupMember
    {
        let now = clock.now()
        return try await writing { tx in
            let group = try Self.requireGroup(tx, guid)
            _ = try Self.requireUser(tx, uid)
            let who = try Self.participation(tx, uid: actor, in: .group(guid))
            // Whether the actor may change scopes at all comes first: someone who may not is told
            // the same whether `uid` is in the group or not (a private group's members are not theirs
            // to learn).
            if uid != actor, !who.isSystem, (who.scope ?? .participant) < .admin {
                throw ChatError(.groupNoClearance)
            }
            guard let target = try tx.member(guid: guid, uid: uid) else {
                throw ChatError(.notAMember, ["uid": .string(uid), "guid": .string(guid)])
            }
            try GroupRules.checkScopeChange(actor: who, target: uid, current: target.scope, to: scope)
            let updated = GroupMember(guid: guid, uid: uid, scope: scope, joinedAt: target.joinedAt)
            try tx.upsertMember(updated)
            try Self.memberEvent(
                tx, .groupMemberScopeChanged, group: group, uid: uid, actor: actor, scope: scope,
                oldScope: target.scope, at: now)
            return updated
        }
    }

    static func memberEvent(
        _ tx: any ChatWriteTransaction, _ name: EventName, group: Group, uid: String,
        actor: String, scope: GroupMemberScope? = nil, oldScope: GroupMemberScope? = nil, at time: Int64,
        alsoTo extra: String? = nil, excludedSession: String? = nil
    ) throws {
        let change = MemberChange(guid: group.guid, uid: uid, actor: actor, scope: scope, oldScope: oldScope)
        let event = ChatEvent(name: name, conversationId: group.conversationId, createdAt: time, member: change)
        _ = try tx.appendEvent(
            event,
            audience: EventAudience(
                group: group.guid, users: extra.map { [$0] } ?? [], excludedSession: excludedSession))
        // Like CometChat, the conversation keeps an action message of the change ("dave joined").
        var data: [String: JSONValue] = [
            "action": .string(Self.actionVerb(name)), "on": .string(uid), "by": .string(actor),
        ]
        if let scope { data["scope"] = .string(scope.rawValue) }
        if let oldScope { data["oldScope"] = .string(oldScope.rawValue) }
        let action = Message(
            conversationId: group.conversationId, sender: actor, receiverType: .group, receiverUid: group.guid,
            type: "groupMember", category: .action, text: Self.actionText(name, uid: uid, actor: actor, scope: scope),
            data: .object(data), sentAt: time, updatedAt: time)
        _ = try tx.insertMessage(action)
    }

    static func actionVerb(_ name: EventName) -> String {
        switch name {
        case .groupMemberJoined: return "joined"
        case .groupMemberLeft: return "left"
        case .groupMemberKicked: return "kicked"
        case .groupMemberBanned: return "banned"
        case .groupMemberUnbanned: return "unbanned"
        case .groupMemberScopeChanged: return "scopeChanged"
        default: return "added"
        }
    }

    static func actionText(_ name: EventName, uid: String, actor: String, scope: GroupMemberScope?) -> String {
        switch name {
        case .groupMemberJoined: return "\(uid) joined"
        case .groupMemberLeft: return "\(uid) left"
        case .groupMemberKicked: return "\(actor) kicked \(uid)"
        case .groupMemberBanned: return "\(actor) banned \(uid)"
        case .groupMemberUnbanned: return "\(actor) unbanned \(uid)"
        case .groupMemberScopeChanged: return "\(actor) made \(uid) \(scope?.rawValue ?? "")"
        default: return "\(actor) added \(uid)"
        }
    }
}
