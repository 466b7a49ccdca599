/// A rule's `allow:` and `deny:`, and config.yaml's `admins:`: every user and group named exists,
/// and a rule that can never fire for anyone is said so.
extension BotValidator {
    mutating func validateAccess(_ loaded: LoadedBot, _ rule: Rule, path: String) {
        for (key, access) in [("allow", rule.allow), ("deny", rule.deny)] {
            guard let access else { continue }
            for (index, uid) in access.users.enumerated() where !isKnownUser(uid) {
                error(
                    loaded, "\(path).\(key).users[\(index)]",
                    unknown("user", uid, among: knownUsers, where: "not a known uid"))
            }
            for (index, guid) in access.groups.enumerated() where !isKnownGroup(guid) {
                error(
                    loaded, "\(path).\(key).groups[\(index)]",
                    unknown("group", guid, among: knownGroups, where: groupsPlace))
            }
            if access.admins, config.admins.isEmpty {
                warning(loaded, "\(path).\(key).admins", "config.yaml names no `admins`: this matches nobody")
            }
        }
        guard let allow = rule.allow else { return }
        let botGroups = Set(loaded.bot.groups.map(\.guid))
        let reachable =
            !allow.users.isEmpty || !allow.scopes.isEmpty || (allow.admins && !config.admins.isEmpty)
            || allow.groups.contains { botGroups.contains($0) }
        let denied = rule.deny.map { deny in
            Set(allow.users).isSubset(of: deny.users) && Set(allow.groups).isSubset(of: deny.groups)
                && Set(allow.scopes).isSubset(of: deny.scopes) && (!allow.admins || deny.admins)
        }
        if allow.isEmpty || !reachable || denied == true {
            warning(
                loaded, "\(path).allow",
                "this rule can never fire: `allow` lets in nobody "
                    + (denied == true ? "that `deny` does not shut out" : "the bot can hear (its groups, its users)"))
        }
    }
}
