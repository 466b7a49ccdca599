import Foundation
import PerchChat
import PerchRegex
import PerchYAML

/// The checks across bot files: unique names and users, references to groups, users, plugins
/// and strings, regular expressions, schedules and template placeholders.
struct BotValidator {
    let config: PerchConfiguration
    let bots: [LoadedBot]
    let swiftPlugins: Set<String>
    /// Where an `exec` plugin's program would be found at start.
    let programs: ProgramFinder
    let knownGroups: Set<String>
    let knownUsers: Set<String>
    /// config.yaml's `seed.groups` or `seed.users` could not be read: its own finding says why,
    /// and every group or user named unknown after it would mislead.
    let groupsUnreadable: Bool
    let usersUnreadable: Bool
    var findings: [Finding] = []

    /// `configRefused`: what decoding refused in config.yaml.
    init(
        config: PerchConfiguration, bots: [LoadedBot], swiftPlugins: Set<String>, programs: ProgramFinder,
        configRefused: RefusedPaths
    ) {
        self.config = config
        self.bots = bots
        self.swiftPlugins = swiftPlugins
        self.programs = programs
        switch config.backend {
        case .embedded:
            knownGroups = Set(config.seed.groups.map(\.guid))
            knownUsers = Set(config.seed.users.map(\.uid) + bots.map(\.bot.user.uid))
            groupsUnreadable = configRefused.covers("seed.groups")
            usersUnreadable = configRefused.covers("seed.users")
        case .matrix:
            knownGroups = Set(config.matrix.rooms.keys)
            knownUsers = Set(bots.map(\.bot.user.uid))
            groupsUnreadable = configRefused.covers("matrix.rooms")
            usersUnreadable = false
        }
    }

    /// Whether `guid` is a group of the backend: a seeded group, or a room of `matrix.rooms` (any is
    /// when that list could not be read).
    func isKnownGroup(_ guid: String) -> Bool { groupsUnreadable || knownGroups.contains(guid) }

    /// Whether `uid` is a person or a bot: a seeded user or a bot on the embedded backend (any when
    /// `seed.users` could not be read), a Matrix id or a bot on Matrix.
    func isKnownUser(_ uid: String) -> Bool {
        usersUnreadable || knownUsers.contains(uid)
            || (config.backend == .matrix && MatrixConfiguration.isUserID(uid))
    }

    /// Where the groups a bot names must be, said in a finding.
    var groupsPlace: String { config.backend == .matrix ? "not in matrix.rooms" : "not in seed.groups" }

    /// What the users a bot names must be, said in a finding.
    var usersPlace: String {
        config.backend == .matrix
            ? "not a Matrix id like @alice:example.org, and not a bot" : "not seeded and not a bot"
    }

    mutating func error(_ bot: LoadedBot, _ path: String, _ message: String) {
        guard !bot.refused.covers(path) else { return }
        findings.append(Finding(location: bot.locations.location(of: path), path: path, message: message))
    }

    mutating func warning(_ bot: LoadedBot, _ path: String, _ message: String) {
        guard !bot.refused.covers(path) else { return }
        findings.append(
            Finding(location: bot.locations.location(of: path), severity: .warning, path: path, message: message))
    }

    /// The time zones Foundation knows (the tz data built into it), for suggestions.
    static var timeZones: Set<String> { Set(TimeZone.knownTimeZoneIdentifiers) }

    func unknown(_ kind: String, _ name: String, among known: Set<String>, where place: String) -> String {
        var message = "unknown \(kind) '\(name)'"
        if let close = suggestion(for: name, among: known) { message += "; did you mean '\(close)'?" }
        return message + " (\(place))"
    }

    consuming func validate() -> [Finding] {
        var names: [String: LoadedBot] = [:]
        var uids: [String: LoadedBot] = [:]
        let seeded = Set(config.seed.users.map(\.uid))
        for loaded in bots {
            let bot = loaded.bot
            if bot.name.isEmpty {
                error(loaded, "name", "a bot needs a name")
            } else if let first = names[bot.name] {
                error(loaded, "name", "another bot is named '\(bot.name)' (\(first.locations.location(of: "name")))")
            } else {
                names[bot.name] = loaded
            }
            if !User.isValidUID(bot.user.uid) {
                error(loaded, "user.uid", "'\(bot.user.uid)' is not a valid uid (1–100 of A–Z, a–z, 0–9, _, -)")
            } else if bot.user.uid == User.system {
                error(loaded, "user.uid", "'app_system' is reserved; give the bot its own uid and `system: true`")
            } else if let first = uids[bot.user.uid] {
                error(
                    loaded, "user.uid",
                    "bot '\(first.bot.name)' already uses user '\(bot.user.uid)' (\(first.locations.location(of: "user.uid")))"
                )
            } else if seeded.contains(bot.user.uid) {
                error(loaded, "user.uid", "user '\(bot.user.uid)' is a seeded person in config.yaml, not a bot")
            } else {
                uids[bot.user.uid] = loaded
            }
            if bot.commandPrefix.isEmpty || bot.commandPrefix.contains(where: \.isWhitespace) {
                error(loaded, "command_prefix", "a command prefix is one or more non-space characters")
            }
            for (index, group) in bot.groups.enumerated() where !isKnownGroup(group.guid) {
                error(
                    loaded, "groups[\(index)]",
                    unknown("group", group.guid, among: knownGroups, where: groupsPlace))
            }
            validateRateLimit(loaded)
            validatePlugins(loaded)
            if config.backend == .matrix { validateForMatrix(loaded) }
            validateFeatures(loaded)
            var ruleNames: [String: String] = [:]
            for (index, rule) in bot.rules.enumerated() {
                validateRule(loaded, index)
                // A rule's name keys its schedule's and webhook's sends (two rules of one name
                // firing in one minute were one message) and names it in the log and metrics.
                let name = rule.name ?? "rules[\(index)]"
                let path = rule.name == nil ? "rules[\(index)]" : "rules[\(index)].name"
                if let first = ruleNames[name] {
                    error(
                        loaded, path,
                        "another rule of this bot is named '\(name)' (\(loaded.locations.location(of: first)))")
                } else {
                    ruleNames[name] = path
                }
            }
        }
        return findings
    }

    mutating func validateRateLimit(_ loaded: LoadedBot) {
        let limit = loaded.bot.rateLimit
        for (path, value) in [
            ("rate_limit.per_minute", limit.perMinute), ("rate_limit.burst", limit.burst),
            ("rate_limit.per_conversation_per_minute", limit.perConversationPerMinute),
        ] where !(1...100_000).contains(value) {
            error(loaded, path, "\(value) is out of range; expected 1 to 100000")
        }
    }

    mutating func validatePlugins(_ loaded: LoadedBot) {
        var seen: Set<String> = []
        for (index, plugin) in loaded.bot.plugins.enumerated() {
            let path = "plugins[\(index)]"
            if !seen.insert(plugin.name).inserted {
                error(loaded, path + ".name", "plugin '\(plugin.name)' is listed twice")
            }
            if plugin.exec != nil, plugin.url != nil {
                error(loaded, path + ".url", "give `exec` or `url`, not both")
            }
            if plugin.url != nil, plugin.notifications {
                error(
                    loaded, path + ".notifications",
                    "a plugin reached over HTTP is posted its rules' calls only; post notifications to a URL with "
                        + "config.yaml's notifications.webhooks (docs/notifications.md)")
            }
            if let url = plugin.url {
                validateURL(loaded, plugin, url, path: path)
            } else if plugin.secret != nil {
                error(loaded, path + ".secret", "`secret` signs the posts of a plugin with `url`; this one has none")
            } else if plugin.headers != nil {
                error(
                    loaded, path + ".headers", "`headers` go with the posts of a plugin with `url`; this one has none")
            } else if plugin.lifecycle {
                error(
                    loaded, path + ".lifecycle",
                    "`lifecycle` asks a plugin with `url` to be posted start and stop; "
                        + "Swift and `exec` plugins always get them")
            }
            validatePostCredentials(loaded, plugin, path: path)
            switch (plugin.url, plugin.exec) {
            case (nil, let exec?):
                if exec.isEmpty || exec[0].isEmpty {
                    error(loaded, path + ".exec", "exec needs a command")
                } else if let problem = programs.problem(with: exec[0]) {
                    // A warning: the host may run where this check did not (another PATH).
                    warning(loaded, path + ".exec[0]", problem + "; the plugin cannot start here")
                }
            case (nil, nil) where !swiftPlugins.contains(plugin.name):
                error(
                    loaded, path + ".name",
                    unknown(
                        "plugin", plugin.name, among: swiftPlugins,
                        where: "no Swift plugin has this name; give `exec` or `url` for an external one"))
            default: break  // reached over HTTP (nothing to start here), or a Swift plugin
            }
            if !(10...600_000).contains(plugin.timeoutMilliseconds) {
                error(
                    loaded, path + ".timeout_ms", "\(plugin.timeoutMilliseconds) is out of range; expected 10 to 600000"
                )
            }
        }
    }

    /// A plugin reached over HTTP: its URL, and whether any rule calls it (it is posted nothing else).
    mutating func validateURL(_ loaded: LoadedBot, _ plugin: PluginReference, _ url: String, path: String) {
        if let problem = Self.problem(withPluginURL: url) { error(loaded, path + ".url", problem) }
        let called = loaded.bot.rules.contains { rule in
            rule.actions.contains { if case .plugin(plugin.name) = $0 { true } else { false } }
        }
        if !called {
            warning(
                loaded, path + ".url",
                "no rule's `plugin: \(plugin.name)` action calls this plugin, and a plugin reached over HTTP "
                    + "is posted only those")
        }
    }

    /// The headers and the secret a plugin's posts carry.
    mutating func validatePostCredentials(_ loaded: LoadedBot, _ plugin: PluginReference, path: String) {
        for (name, value) in (plugin.headers ?? [:]).sorted(by: { $0.key < $1.key }) {
            if let problem = Self.problem(withHeaderName: name) {
                error(loaded, path + ".headers." + name, problem)
            } else if value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) {
                error(loaded, path + ".headers." + name, "a header's value is one line")
            }
        }
        if let secret = plugin.secret, secret.utf8.count < 16 {
            error(loaded, path + ".secret", Self.shortSecret("a plugin's secret"))
        }
    }

    /// The finding for a secret too short to be one (`what`: which secret).
    static func shortSecret(_ what: String) -> String {
        what + " needs at least 16 characters; write ${SOME_VARIABLE} to keep it out of the file"
    }

    /// The headers Perch sets on a plugin's posts itself.
    static let ownHeaders: Set<String> = [
        "content-type", "content-length", "host", "x-perch-delivery", "x-hub-signature-256",
    ]

    /// Why `name` cannot be a header of a plugin's posts: nil when it is an HTTP token (RFC 9110)
    /// that Perch does not set itself.
    static func problem(withHeaderName name: String) -> String? {
        let token = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        guard !name.isEmpty, name.allSatisfy(token.contains) else { return "'\(name)' is not a header name" }
        guard !ownHeaders.contains(name.lowercased()) else { return "Perch sets '\(name)' on each post itself" }
        return nil
    }

    /// Why `text` is no URL a plugin can be posted to: nil when it is an `http` or `https` URL with
    /// a host.
    static func problem(withPluginURL text: String) -> String? {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            return "'\(text)' is not a URL"
        }
        guard scheme == "http" || scheme == "https" else {
            return "the URL's scheme is '\(scheme)'; expected http or https"
        }
        guard let host = components.host, !host.isEmpty else { return "the URL '\(text)' has no host" }
        return nil
    }

    mutating func validateRule(_ loaded: LoadedBot, _ index: Int) {
        let bot = loaded.bot
        let rule = bot.rules[index]
        let path = "rules[\(index)]"
        // A trigger that decoding refused stands in as `message`: the checks of the rule against its
        // trigger would only add findings about that stand-in (`{args}` is only set for command
        // triggers, beside a command name that was refused), so they stand down.
        let trigger = loaded.refused.covers(path + ".on") ? nil : rule.trigger
        switch rule.trigger {
        case .mention(let uids):
            for (position, uid) in uids.enumerated() where !isKnownUser(uid) {
                error(
                    loaded, item(loaded, path + ".on.mention", position),
                    unknown("user", uid, among: knownUsers, where: usersPlace))
            }
        case .schedule(let cron, let target, let zone):
            do { _ = try CronExpression(cron) } catch { self.error(loaded, path + ".on.schedule", error.description) }
            if let zone, TimeZone(identifier: zone) == nil {
                error(
                    loaded, path + ".on.timezone",
                    unknown("time zone", zone, among: Self.timeZones, where: "an IANA name such as Europe/Berlin"))
            }
            switch target {
            case .group(let guid) where !isKnownGroup(guid):
                error(
                    loaded, path + ".on.group", unknown("group", guid, among: knownGroups, where: groupsPlace))
            case .user(let uid) where !isKnownUser(uid):
                error(
                    loaded, path + ".on.user",
                    unknown("user", uid, among: knownUsers, where: usersPlace))
            default: break
            }
        case .webhook(let name, let target, let secret):
            if !User.isValidUID(name) {
                error(loaded, path + ".on.webhook", "a webhook name is 1–100 of A–Z, a–z, 0–9, _, -")
            }
            if let secret, secret.utf8.count < 16 {
                error(loaded, path + ".on.secret", Self.shortSecret("a webhook secret"))
            }
            switch target {
            case .group(let guid)? where !isKnownGroup(guid):
                error(
                    loaded, path + ".on.group", unknown("group", guid, among: knownGroups, where: groupsPlace))
            case .user(let uid)? where !isKnownUser(uid):
                error(
                    loaded, path + ".on.user",
                    unknown("user", uid, among: knownUsers, where: usersPlace))
            default: break
            }
        default:
            break
        }
        let conditions = rule.conditions
        for (position, guid) in (conditions.groups ?? []).enumerated() where !isKnownGroup(guid) {
            error(
                loaded, item(loaded, path + ".when.groups", position),
                unknown("group", guid, among: knownGroups, where: groupsPlace))
        }
        for (position, uid) in (conditions.from ?? []).enumerated() where !isKnownUser(uid) {
            error(
                loaded, item(loaded, path + ".when.from", position),
                unknown("user", uid, among: knownUsers, where: usersPlace))
        }
        if trigger != nil { neverFires(loaded, rule, at: path) }
        var captures: Set<String> = rule.usage?.placeholders ?? []
        var isCommand = false
        if case .command = rule.trigger { isCommand = true }
        if rule.usage != nil, !isCommand {
            error(loaded, path + ".usage", "`usage` declares a command's arguments; this rule is no command")
        }
        if let pattern = conditions.textMatches {
            do {
                captures.formUnion(try Pattern(pattern).captureNames.values)
            } catch {
                self.error(loaded, path + ".when.text_matches", "invalid regular expression: \(error.description)")
            }
        }
        if let words = conditions.containsWords {
            if words.isEmpty { error(loaded, path + ".when.contains_words", "the word list is empty") }
            for (position, word) in words.enumerated() where word.trimmingCharacters(in: .whitespaces).isEmpty {
                error(loaded, path + ".when.contains_words[\(position)]", "a word cannot be empty")
            }
        }
        if !rule.trigger.isMessageTrigger, conditions.textMatches != nil || conditions.containsWords != nil,
            rule.trigger != .edited
        {
            error(
                loaded, path + ".when",
                "text conditions apply to message triggers (message, thread_reply, mention, command, edited)")
        }
        if rule.actions.isEmpty { error(loaded, path + ".do", "a rule needs at least one action") }
        if let help = rule.help, trigger != nil {
            if case .command = rule.trigger {
                if help.allSatisfy(\.isWhitespace) {
                    error(loaded, path + ".help", "`help` is empty: say in a few words what the command does")
                }
            } else {
                error(
                    loaded, path + ".help",
                    "`help` describes a command for the bot's `help` answer, and this rule's trigger is not `{command: NAME}`"
                )
            }
        }
        validateAccess(loaded, rule, path: path)
        let plugins = Set(bot.plugins.map(\.name))
        for (position, action) in rule.actions.enumerated() {
            let actionPath = "\(path).do[\(position)]"
            switch action {
            case .pin(let asSystem, _) where asSystem && !bot.system:
                error(loaded, actionPath + ".pin", "pinning as app_system needs `system: true` on the bot")
            case .plugin(let name) where !plugins.contains(name):
                error(
                    loaded, actionPath + ".plugin",
                    unknown("plugin", name, among: plugins, where: "not in this bot's plugins"))
            case .subscribe(.user(let uid)), .unsubscribe(.user(let uid)):
                if !isKnownUser(uid) {
                    error(
                        loaded, actionPath + "." + action.name,
                        unknown("user", uid, among: knownUsers, where: "write sender, self or a known uid"))
                } else if case .subscribe = action, !bot.allowSubscribingOthers, uid != bot.user.uid {
                    error(
                        loaded, actionPath + ".subscribe",
                        "subscribing \(uid) brings them notifications they did not ask for; "
                            + "write `allow_subscribing_others: true` in the bot file to allow it")
                }
            default:
                break
            }
            if let trigger, let reason = Self.unservable(action, by: trigger) {
                let written = actionPath + "." + action.name
                error(loaded, loaded.locations.contains(written) ? written : actionPath, reason)
            }
            if let template = action.template {
                validateTemplate(
                    loaded, template, at: actionPath + "." + action.name, captures: captures, trigger: trigger)
            }
        }
    }

    /// Why `action` cannot run on `trigger`'s events, if it cannot: it acts on a message, a sender or
    /// a conversation the event does not carry (a schedule has no message; a member's join has a
    /// member, not a message; a webhook without `group` or `user` has no conversation).
    static func unservable(_ action: Action, by trigger: Trigger) -> String? {
        switch (trigger.subject, action) {
        case (_, .plugin), (.message, _): return nil
        case (.member, .reply), (.member, .directMessage), (.member, .kick), (.member, .ban): return nil
        case (.member, _):
            return "'\(action.name)' acts on a message, and a member_joined event has none "
                + "(reply, direct_message, kick, ban and plugin act on the member and the group)"
        case (.nothing, .reply):
            guard case .webhook(_, nil, _) = trigger else { return nil }
            return "a webhook rule replies into the conversation given with `group` or `user` beside `webhook`"
        case (.nothing, _):
            return "'\(action.name)' acts on a message or its sender, and a \(trigger.name) rule has "
                + "neither (it can reply into its conversation or hand the event to a plugin)"
        }
    }

    /// Warnings for a rule that can never fire, or fires far less than it reads: the file is
    /// valid, but what it asks for cannot happen (a condition on a group the bot is not in, two
    /// conditions that exclude each other, a trigger its `hears` keeps away in groups).
    mutating func neverFires(_ loaded: LoadedBot, _ rule: Rule, at path: String) {
        let bot = loaded.bot
        let conditions = rule.conditions
        if rule.trigger.subject != .nothing {
            let joined = bot.groups.map(\.guid)
            for (position, guid) in (conditions.groups ?? []).enumerated()
            where isKnownGroup(guid) && !joined.contains(guid) {
                let groups = joined.isEmpty ? "it is in none" : "its groups: " + joined.joined(separator: ", ")
                warning(
                    loaded, item(loaded, path + ".when.groups", position),
                    "the bot is not in group '\(guid)' (\(groups)), so this rule never hears it; add it to `groups`")
            }
            if conditions.oneOnOne == true, conditions.groups != nil {
                warning(
                    loaded, path + ".when.one_on_one",
                    "one_on_one: true and `groups` exclude each other: this rule never fires")
            }
            if conditions.oneOnOne == true, conditions.senderScope != nil {
                warning(
                    loaded, path + ".when.one_on_one",
                    "a sender's scope is their scope in a group, and one_on_one: true leaves no group: "
                        + "this rule never fires")
            }
        }
        if case .threadReply = rule.trigger, conditions.threaded == false {
            warning(loaded, path + ".when.threaded", "a thread_reply is threaded: with threaded: false it never fires")
        }
        // Moderation and pins in a group need the bot's scope there: as a participant each one is
        // refused (ERR_PERMISSION_DENIED) at every message, a warning in the log and nothing done.
        if rule.trigger.subject != .nothing, conditions.oneOnOne != true {
            let participant = bot.groups.filter { group in
                group.scope == .participant && (conditions.groups?.contains(group.guid) ?? true)
            }.map(\.guid)
            for (index, action) in rule.actions.enumerated() where !participant.isEmpty {
                let name: String
                switch action {
                case .delete, .kick, .ban, .unpin: name = action.name
                case .pin(let asSystem, _) where !asSystem: name = action.name
                default: continue
                }
                warning(
                    loaded, path + ".do[\(index)]",
                    "'\(name)' needs the bot to be a moderator, admin or owner of the group, and it is a participant "
                        + "of \(participant.joined(separator: ", ")): write `- { guid: \(participant[0]), scope: moderator }` "
                        + "under `groups`" + (name == "pin" ? ", or pin `as: app_system` (with `system: true`)" : ""))
            }
        }
        switch (bot.hears, rule.trigger) {
        case (.mentions, .command):
            warning(
                loaded, path + ".on",
                "with hears: mentions, a command in a group reaches this bot only when it also mentions the bot "
                    + "(one-on-one, always); `hears: commands` or `all` lets every command in")
        case (.commands, .mention):
            warning(
                loaded, path + ".on",
                "with hears: commands, a mention in a group reaches this bot only when the message is a command "
                    + "(one-on-one, always); `hears: mentions` or `all` lets every mention in")
        default: break
        }
    }

    /// `list[index]` when the list was written as a list, else `list` (a single value).
    func item(_ loaded: LoadedBot, _ list: String, _ index: Int) -> String {
        loaded.locations.contains("\(list)[\(index)]") ? "\(list)[\(index)]" : list
    }

    /// A placeholder `{ROOT.FIELD}` names one of `fields`.
    private mutating func checkField(
        _ loaded: LoadedBot, _ variable: [String], at path: String, among fields: Set<String>
    ) {
        guard variable.count != 2 || !fields.contains(variable[1]) else { return }
        let root = variable[0]
        error(
            loaded, path,
            "unknown placeholder '{\(variable.joined(separator: "."))}'; \(root) has "
                + fields.sorted().map { "{\(root).\($0)}" }.joined(separator: ", "))
    }

    mutating func validateTemplate(
        _ loaded: LoadedBot, _ template: Template, at path: String, captures: Set<String>,
        trigger: Trigger?
    ) {
        for variable in template.variables {
            let root = variable[0]
            switch root {
            case "strings":
                let key = variable.dropFirst().joined(separator: ".")
                if config.strings[key] == nil {
                    error(
                        loaded, path,
                        unknown(
                            "string", key, among: Set(config.strings.entries.keys), where: "not in the strings table"))
                }
            case "sender", "message", "parent":
                if let trigger, trigger.subject == .nothing || (trigger.subject == .member && root != "sender") {
                    let event = "a \(trigger.name) " + (trigger.subject == .member ? "event" : "rule")
                    error(loaded, path, "{\(variable.joined(separator: "."))} is not set: \(event) has no \(root)")
                    continue
                }
                checkField(
                    loaded, variable, at: path, among: root == "sender" ? ["uid", "name"] : ["id", "text", "sender"])
            case "group":
                if variable.count != 2 || variable[1] != "guid" {
                    error(loaded, path, "unknown placeholder; write {group.guid}")
                }
            case "webhook":
                switch trigger {
                case .webhook?, nil: break
                default: error(loaded, path, "{webhook...} is only set for webhook triggers")
                }
            case "args":
                switch trigger {
                case .command?, nil: break
                default: error(loaded, path, "{args} is only set for command triggers")
                }
            case "actor":
                checkField(loaded, variable, at: path, among: ["uid", "name"])
                switch trigger {
                case .pinned?, .unpinned?, .edited?, .deleted?, .threadSubscribed?, .threadUnsubscribed?, .saved?,
                    .unsaved?, nil:
                    break
                default:
                    error(
                        loaded, path,
                        "{actor...} is only set for pinned, unpinned, edited, deleted, thread_subscribed, "
                            + "thread_unsubscribed, saved and unsaved triggers")
                }
            case "reaction":
                if variable.count != 1 { error(loaded, path, "unknown placeholder; write {reaction}") }
                switch trigger {
                case .reactionAdded?, .reactionRemoved?, nil: break
                default: error(loaded, path, "{reaction} is only set for reaction_added and reaction_removed triggers")
                }
            default:
                if !captures.contains(variable.joined(separator: ".")) {
                    var message = "unknown placeholder '{\(variable.joined(separator: "."))}'"
                    let names = captures.union(["sender.name", "sender.uid", "message.text", "parent.text", "args"])
                    if let close = suggestion(for: variable.joined(separator: "."), among: names) {
                        message += "; did you mean '{\(close)}'?"
                    } else {
                        message += " (neither a named capture of text_matches nor an argument of usage)"
                    }
                    error(loaded, path, message)
                }
            }
        }
    }
}
