import PerchChat

/// What a bot file needs on the Matrix backend: an account, and actions Matrix can perform.
extension BotValidator {
    /// The actions the Matrix backend cannot perform, with why: `perch check` refuses a rule that
    /// uses one rather than let it fail at every message.
    static func unavailableOnMatrix(_ action: Action) -> String? {
        switch action {
        case .save:
            return "'save' is not available on the matrix backend: Matrix has no saved messages "
                + "(docs/matrix.md, \"What the backends can do\")"
        default:
            return nil
        }
    }

    mutating func validateForMatrix(_ loaded: LoadedBot) {
        let bot = loaded.bot
        if User.isValidUID(bot.user.uid), config.matrix.accounts[bot.user.uid] == nil {
            error(
                loaded, "user.uid",
                "bot '\(bot.name)' has no Matrix account: add `\(bot.user.uid): ${MATRIX_\(Self.environmentName(bot.user.uid))_TOKEN}` "
                    + "under matrix.accounts in config.yaml (its access token, from the environment)")
        }
        for (index, rule) in bot.rules.enumerated() {
            for (position, action) in rule.actions.enumerated() {
                guard let reason = Self.unavailableOnMatrix(action) else { continue }
                let path = "rules[\(index)].do[\(position)]"
                error(
                    loaded, loaded.locations.contains(path + "." + action.name) ? path + "." + action.name : path,
                    reason)
            }
        }
    }

    /// `uid` as an environment variable's part: upper case, `-` as `_`.
    static func environmentName(_ uid: String) -> String {
        uid.uppercased().replacingOccurrences(of: "-", with: "_")
    }
}
