/// A bot file's actions against the features config.yaml turns off: a bot that pins while pins are
/// off, saves while saves are off, or takes the follow commands while the thread-subscription
/// switch is closed is told where, once, by `perch check` and at start. The host then makes no
/// such call (no failure logged on every message).
extension BotValidator {
    mutating func validateFeatures(_ loaded: LoadedBot) {
        let bot = loaded.bot
        let followOn = config.ui.threadSubscription.enabled && bot.threadSubscription
        let switchName =
            config.ui.threadSubscription.enabled
            ? "this bot's `thread_subscription: false`" : "config.yaml's ui.threadSubscription.enabled: false"
        let followPlugins = Set(bot.plugins.map(\.name).filter { $0 == "thread-follow" })
        for (index, rule) in bot.rules.enumerated() {
            for (position, action) in rule.actions.enumerated() {
                let path = "rules[\(index)].do[\(position)]"
                let at = loaded.locations.contains(path + "." + action.name) ? path + "." + action.name : path
                switch action {
                case .pin where !config.features.pin, .unpin where !config.features.pin:
                    warning(loaded, at, "pins are off (config.yaml's features.pin: false): this action does nothing")
                case .save where !config.features.save:
                    warning(loaded, at, "saves are off (config.yaml's features.save: false): this action does nothing")
                case .subscribe, .unsubscribe:
                    if !followOn {
                        warning(loaded, at, "thread subscriptions are off (\(switchName)): this action does nothing")
                    }
                case .plugin(let name) where followPlugins.contains(name) && !followOn:
                    warning(
                        loaded, at,
                        "the follow commands are off (\(switchName)): `\(name)` answers nothing and subscribes nobody")
                default:
                    break
                }
            }
        }
    }
}
