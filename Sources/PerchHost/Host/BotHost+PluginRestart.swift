/// Restarting a plugin on demand (`perch plugin restart NAME`, `POST /v3/plugins/{name}/restart`).
extension BotHost {
    /// Stops and starts again the plugin `name` of every running bot that has it (of `bot` only,
    /// when given), in the bots' order, each within the lifecycle's time limit.
    /// - Returns: the bots whose plugin restarted (empty when none has it).
    public func restartPlugin(_ name: String, bot: String? = nil) async -> [String] {
        var restarted: [String] = []
        let lifecycle = PluginLifecycle(logger: logger, metrics: metrics)
        for (botName, runtime) in roster.all.sorted(by: { $0.key < $1.key }) where bot == nil || bot == botName {
            guard let plugin = runtime.bot.plugins[name] else { continue }
            let slot = PluginLifecycle.Slot(bot: botName, name: name, plugin: plugin)
            runtime.logger.info("plugin \(name): restarting it on request")
            await lifecycle.stop([slot])
            let environment = PluginEnvironment(
                bot: runtime.bot, plugin: name, logger: runtime.logger, actions: runtime.actions,
                strings: runtime.strings)
            _ = await lifecycle.start([(slot, environment)], consequence: "restart it again once it is mended")
            restarted.append(botName)
        }
        return restarted
    }
}
