import PerchChat
import PerchConfig
import PerchMatch
import PerchRegex
import PerchYAML

/// A bot file turned into what the hot path needs: patterns compiled, word lists registered in the
/// host's one matcher, plugins created. Built once per (re)load, never per event.
struct CompiledBot: Sendable {
    struct CompiledRule: Sendable {
        var name: String
        var trigger: Trigger
        var conditions: Conditions
        var pattern: Pattern?
        /// This rule's list in the host's ``WordListMatcher``.
        var wordList: Int?
        var actions: [Action]
    }

    var identity: BotIdentity
    var configuration: BotConfiguration
    var rules: [CompiledRule]
    var plugins: [String: any BotPlugin]
    /// Whether the follow commands and subscription actions are on for this bot (seed 001's gate
    /// ANDed with the bot's flag).
    var threadSubscriptionEnabled: Bool

    var needsSenderScope: Bool { rules.contains { $0.conditions.senderScope != nil } }
    /// Whether deciding which rules fire needs the sender's profile (`sender_is_bot`).
    var needsSender: Bool { rules.contains { $0.conditions.senderIsBot != nil } }
}

/// Builds the compiled bots of a configuration and the host's word-list matcher.
struct BotCompiler {
    let registry: PluginRegistry
    let gate: Bool
    /// Where external plugins run (the configuration's directory), so `exec` paths resolve there.
    var workingDirectory: String? = nil
    /// Where the compiled word lists are kept between starts (the data directory); nil compiles
    /// every time.
    var cacheDirectory: String? = nil

    struct Output: Sendable {
        var bots: [CompiledBot]
        var matcher: WordListMatcher
        var findings: [Finding]
    }

    func compile(_ loaded: [LoadedBot]) -> Output {
        var lists: [[String]] = []
        var bots: [CompiledBot] = []
        var findings: [Finding] = []
        for entry in loaded where entry.bot.enabled {
            let bot = entry.bot
            var rules: [CompiledBot.CompiledRule] = []
            for (index, rule) in bot.rules.enumerated() {
                var compiled = CompiledBot.CompiledRule(
                    name: rule.name ?? "rules[\(index)]", trigger: rule.trigger, conditions: rule.conditions,
                    pattern: nil, wordList: nil, actions: rule.actions)
                if let source = rule.conditions.textMatches { compiled.pattern = try? Pattern(source) }
                if let words = rule.conditions.containsWords {
                    compiled.wordList = lists.count
                    lists.append(words)
                }
                rules.append(compiled)
            }
            var plugins: [String: any BotPlugin] = [:]
            for (index, reference) in bot.plugins.enumerated() {
                let path = "plugins[\(index)].config"
                if let exec = reference.exec {
                    plugins[reference.name] = ExternalPlugin(
                        name: reference.name, command: exec, timeoutMilliseconds: reference.timeoutMilliseconds,
                        config: reference.config.map { ExternalPlugin.json(of: $0.node) } ?? .object([:]),
                        workingDirectory: workingDirectory)
                } else if let made = registry.make(reference.name, config: reference.config, path: path) {
                    findings += made.findings.map { finding in
                        var copy = finding
                        if copy.location.file.isEmpty {
                            copy.location = entry.locations.location(of: "plugins[\(index)]")
                        }
                        return copy
                    }
                    if let plugin = made.plugin { plugins[reference.name] = plugin }
                }
            }
            bots.append(
                CompiledBot(
                    identity: BotIdentity(name: bot.name, uid: bot.user.uid, system: bot.system), configuration: bot,
                    rules: rules, plugins: plugins, threadSubscriptionEnabled: gate && bot.threadSubscription))
        }
        let matcher: WordListMatcher
        do {
            matcher = try WordListMatcher(lists: lists, cacheDirectory: cacheDirectory)
        } catch {
            findings.append(Finding(location: .init(file: "bots", line: 1, column: 1), message: error.description))
            matcher = try! WordListMatcher(lists: [])
        }
        return Output(bots: bots, matcher: matcher, findings: findings)
    }
}
