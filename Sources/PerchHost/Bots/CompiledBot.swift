import Foundation
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
        /// A `command` rule's `help` line.
        var help: String? = nil
        /// A `command` rule's typed arguments.
        var usage: CommandUsage? = nil
        /// Who the rule is for, and what a refused command answers.
        var allow: Access? = nil
        var deny: Access? = nil
        var refusal: Refusal = .private
    }

    /// A command the bot's `help` answer lists, where its rule's conditions on the conversation and
    /// the sender hold.
    struct HelpEntry: Sendable {
        var command: String
        var help: String?
        var conditions: Conditions
        /// The rule itself, for its `allow`/`deny`: a command the asker may not use is not listed.
        var rule: CompiledRule
    }

    var identity: BotIdentity
    var configuration: BotConfiguration
    var rules: [CompiledRule]
    var plugins: [String: any BotPlugin]
    /// Whether the follow commands and subscription actions are on for this bot (the follow
    /// controls' gate, `ui.threadSubscription.enabled`, ANDed with the bot's flag).
    var threadSubscriptionEnabled: Bool
    /// The commands the built-in `help` lists, in file order; empty when the bot has no built-in
    /// `help` (no commands, `help_command: false`, or a `help` command of its own).
    var helpEntries: [HelpEntry] = []

    /// The bot's plugins in its file's order (the order they start in).
    var pluginsInOrder: [(name: String, plugin: any BotPlugin)] {
        configuration.plugins.compactMap { reference in plugins[reference.name].map { (reference.name, $0) } }
    }

    var needsSenderScope: Bool {
        rules.contains { rule in
            rule.conditions.senderScope != nil || !(rule.allow?.scopes.isEmpty ?? true)
                || !(rule.deny?.scopes.isEmpty ?? true)
        }
    }
    /// Whether a command rule declares typed arguments (`usage`): then a command's are parsed.
    var hasUsages = false

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
    /// Posts to the plugins reached over HTTP.
    var httpClient: (any PluginHTTPClient)? = nil
    /// Only checking the configuration (`perch check`): a plugin with `url` needs no client then.
    var checking = true

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
                    pattern: nil, wordList: nil, actions: rule.actions, help: rule.help, usage: rule.usage,
                    allow: rule.allow,
                    deny: rule.deny, refusal: rule.refusal)
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
                if let text = reference.url, let url = URL(string: text) {
                    if let httpClient {
                        plugins[reference.name] = HTTPPlugin(
                            name: reference.name, url: url, secret: reference.secret, headers: reference.headers ?? [:],
                            timeoutMilliseconds: reference.timeoutMilliseconds,
                            config: reference.config.map { ExternalPlugin.json(of: $0.node) } ?? .object([:]),
                            client: httpClient, lifecycle: reference.lifecycle)
                    } else if !checking {
                        findings.append(
                            Finding(
                                location: entry.locations.location(of: "plugins[\(index)].url"),
                                path: "plugins[\(index)].url",
                                message: "this host has no HTTP client to post with "
                                    + "(an embedder gives BotHost.Options.httpClient; `perch run` has one)"))
                    }
                } else if let exec = reference.exec {
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
            var compiled = CompiledBot(
                identity: BotIdentity(name: bot.name, uid: bot.user.uid, system: bot.system), configuration: bot,
                rules: rules, plugins: plugins, threadSubscriptionEnabled: gate && bot.threadSubscription)
            compiled.hasUsages = rules.contains { $0.usage != nil }
            compiled.addHelpCommand()
            bots.append(compiled)
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

extension CompiledBot {
    /// The name the built-in help's answer has in the log, the metrics and a dry run.
    static let helpRuleName = "built-in help"

    /// Gives a bot with commands its `help` command (errbot's `!help`, Hubot's `help`), unless
    /// `help_command: false` or a rule of its own answers `help`. Commands whose every action is
    /// off behind the thread-subscription gate are not listed while it is closed.
    mutating func addHelpCommand() {
        guard configuration.helpCommand else { return }
        var entries: [HelpEntry] = []
        for rule in rules {
            guard case .command(let name) = rule.trigger else { continue }
            if name == "help" { return }
            if !threadSubscriptionEnabled, rule.actions.allSatisfy(isThreadSubscriptionAction) { continue }
            entries.append(HelpEntry(command: name, help: rule.help, conditions: rule.conditions, rule: rule))
        }
        helpEntries = entries
    }

    private func isThreadSubscriptionAction(_ action: Action) -> Bool {
        switch action {
        case .subscribe, .unsubscribe: true
        case .plugin(let name): plugins[name]?.offersThreadSubscriptions ?? false
        default: false
        }
    }
}
