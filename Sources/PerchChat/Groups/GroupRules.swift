/// CometChat's group rules for joining, scopes, kicks and bans.
public enum GroupRules {
    /// Checks that `actor` may change `target`'s scope to `scope`: owners and admins change scopes;
    /// only the owner changes an admin's or makes an admin; the owner's scope never changes here.
    /// - Throws: `ERR_GROUP_NO_SELF_ACTION`, `ERR_GROUP_NO_CLEARANCE`, `ERR_GROUP_NO_SCOPE_CLEARANCE`,
    ///   `ERR_SAME_SCOPE`, `ERR_BAD_REQUEST`.
    public static func checkScopeChange(
        actor: Participation, target: String, current: GroupMemberScope,
        to scope: GroupMemberScope
    ) throws(ChatError) {
        guard actor.uid != target else { throw ChatError(.groupNoSelfAction) }
        guard scope != .owner else { throw ChatError.badRequest("scope", "a group has one owner") }
        guard let actorScope = actor.scope, actorScope >= .admin else { throw ChatError(.groupNoClearance) }
        guard current != .owner else { throw noClearance(over: .owner) }
        if actorScope == .admin, current == .admin || scope == .admin { throw noClearance(over: .admin) }
        guard current != scope else { throw ChatError(.sameScope, ["scope": .string(scope.rawValue)]) }
    }

    /// Checks that `actor` may kick or ban a member with scope `target`: moderators and above,
    /// only over members of lower scope.
    /// - Throws: `ERR_GROUP_NO_SELF_ACTION`, `ERR_GROUP_NO_CLEARANCE`, `ERR_GROUP_NO_SCOPE_CLEARANCE`.
    public static func checkRemoval(actor: Participation, target uid: String, targetScope: GroupMemberScope?)
        throws(ChatError)
    {
        guard actor.uid != uid else { throw ChatError(.groupNoSelfAction) }
        guard let actorScope = actor.scope, actorScope.canModerate else { throw ChatError(.groupNoClearance) }
        if let targetScope, targetScope >= actorScope, !actor.isSystem { throw noClearance(over: targetScope) }
    }

    /// Checks that `actor` may change the group itself (its name, type or metadata): its owner and
    /// admins, as CometChat's Update Group.
    /// - Throws: `ERR_GROUP_NOT_JOINED` for someone outside it, `ERR_GROUP_NO_CLEARANCE` below admin.
    public static func checkUpdate(actor: Participation, guid: String) throws(ChatError) {
        guard let actorScope = actor.scope else { throw ChatError(.groupNotJoined, ["guid": .string(guid)]) }
        guard actorScope >= .admin else { throw ChatError(.groupNoClearance) }
    }

    /// `ERR_GROUP_NO_SCOPE_CLEARANCE {scope}`: the scope at stake (the member's, or the one to give)
    /// is out of the actor's reach.
    private static func noClearance(over scope: GroupMemberScope) -> ChatError {
        ChatError(.groupNoScopeClearance, ["scope": .string(scope.rawValue)])
    }
}
