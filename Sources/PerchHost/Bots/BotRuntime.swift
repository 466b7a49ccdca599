import Foundation
import PerchChat
import PerchConfig
import PerchLock
import PerchMatch
import PerchService

/// One bot at run time: decides, for each event of its user's stream, which rules fire, and runs
/// their actions and its plugins' hooks.
final class BotRuntime: Sendable {
    let bot: CompiledBot
    let service: ChatService
    let matcher: WordListMatcher
    let matchCache: MatchCache
    let strings: StringTable
    let logger: HostLogger
    let actions: BotActions
    let metrics: HostMetrics
    let maximumHops: Int
    /// config.yaml's `admins`, for the rules' `allow`/`deny: {admins: true}`.
    let admins: Set<String>
    /// `perch_events_dispatched_total` of this bot (every event it hears adds to it).
    private let dispatched: HostMetrics.Counter
    /// An action or a plugin failing the same way again and again (a rate limit in a busy room, a
    /// plugin that throws at every event) logs ten lines a minute at most, not a line a message.
    private let repeatedFailures = RepeatedWarnings()

    init(
        bot: CompiledBot, service: ChatService, matcher: WordListMatcher, matchCache: MatchCache, strings: StringTable,
        logger: HostLogger, actions: BotActions, metrics: HostMetrics, maximumHops: Int, admins: Set<String> = []
    ) {
        self.admins = admins
        self.bot = bot
        self.service = service
        self.matcher = matcher
        self.matchCache = matchCache
        self.strings = strings
        self.logger = logger
        self.actions = actions
        self.metrics = metrics
        self.maximumHops = maximumHops
        dispatched = metrics.counter("perch_events_dispatched_total", ["bot": bot.identity.name])
    }

    var identity: BotIdentity { bot.identity }

    /// What one rule would do for an event (for `perch dry-run` and tests).
    struct Decision: Sendable {
        var rule: String
        var actions: [Action]
        var captures: [String: String]
    }

    /// The facts of one event that every rule reads, computed once.
    struct Facts: Sendable {
        var event: ChatEvent
        var message: Message?
        var sender: User?
        var senderScope: GroupMemberScope?
        var parent: Message?
        /// Who edited, deleted, pinned or unpinned (``ChatEvent/actor``'s user).
        var actor: User?
        var command: (name: String, args: String)?
        var wordLists: Set<Int>
        var mentionsBot: Bool
        /// The command's arguments, by the usage of each rule that declares one (``parseArguments(_:)``).
        var arguments: [CommandUsage: Result<[String: String], UsageProblem>] = [:]
    }

    /// Whether the bot hears this event at all: never its own doing; in groups, `hears` decides
    /// which new messages reach it.
    func hears(_ event: ChatEvent) -> Bool {
        // A reaction, pin, edit or deletion is its doer's: one of the bot's own message by someone
        // else is heard, and its own pin as app_system is not.
        if event.author == identity.uid { return false }
        if event.reaction != nil { return true }
        if let member = event.member, member.actor == identity.uid || member.uid == identity.uid { return false }
        guard let message = event.message, message.receiverType == .group,
            event.name.isNewMessage || event.name == .messageEdited
        else { return true }
        switch bot.configuration.hears {
        case .all: return true
        case .commands:
            return (message.text ?? "").drop(while: \.isWhitespace).hasPrefix(bot.configuration.commandPrefix)
        case .mentions: return message.mentionedUids.contains(identity.uid)
        }
    }

    /// Every fact of `event`, looked up now (dry runs, schedules).
    func facts(for event: ChatEvent) async -> Facts {
        var facts = localFacts(for: event)
        await lookUp(&facts, sender: true, scope: bot.needsSenderScope, parent: true, actor: true)
        await parseArguments(&facts)
        return facts
    }

    /// The facts read from the event itself: no store reads.
    func localFacts(for event: ChatEvent) -> Facts {
        let message = event.message
        var facts = Facts(
            event: event, message: message, sender: nil, senderScope: nil, parent: nil, actor: nil, command: nil,
            wordLists: [],
            mentionsBot: message?.mentionedUids.contains(identity.uid) ?? false)
        if let text = message?.text, event.name.isNewMessage || event.name == .messageEdited {
            facts.command = Self.command(in: text, prefix: bot.configuration.commandPrefix)
            facts.wordLists = matchCache.lists(for: message!, matcher: matcher)
        }
        return facts
    }

    /// Fills in the facts that need the store: the sender, their scope in the group, the thread's
    /// root, who acted. Each is read once.
    func lookUp(_ facts: inout Facts, sender: Bool, scope: Bool, parent: Bool, actor: Bool = false) async {
        let event = facts.event
        let message = event.message
        if sender, facts.sender == nil, let uid = event.senderUid {
            facts.sender = try? await service.user(uid)
        }
        if scope, facts.senderScope == nil, let message, message.receiverType == .group, let uid = event.senderUid {
            facts.senderScope = try? await service.scope(of: uid, in: message.receiverUid)
        }
        if parent, facts.parent == nil, let message, message.isReply {
            facts.parent = try? await service.message(message.parentMessageId, as: identity.uid)
        }
        if actor, facts.actor == nil, let uid = event.actor {
            facts.actor = uid == facts.sender?.uid ? facts.sender : try? await service.user(uid)
        }
    }

    /// The rules that fire for `facts`, in file order.
    func decide(_ facts: Facts) -> [Decision] {
        var decisions: [Decision] = []
        for rule in bot.rules {
            guard var captures = matches(rule, facts) else { continue }
            var actions = rule.actions
            // A command's typed arguments are its captures; a call that does not fit them is
            // answered with the usage instead (after `allow`: nothing is said to whom it refuses).
            if let usage = rule.usage, case .command(let name) = rule.trigger, let parsed = facts.arguments[usage] {
                switch parsed {
                case .success(let values): captures.merge(values) { _, typed in typed }
                case .failure(let problem):
                    actions = [.quoteReply(.literal(usageAnswer(problem, usage, command: name)))]
                }
            }
            switch access(rule, facts) {
            case .allowed: decisions.append(Decision(rule: rule.name, actions: actions, captures: captures))
            case .refused(let answer): if let answer { decisions.append(answer) }
            }
        }
        // The built-in `help`, after the bot's own rules; its answer is made for this event.
        if !bot.helpEntries.isEmpty, facts.event.name == .textMessageReceived, facts.command?.name == "help",
            let text = helpText(facts)
        {
            decisions.append(
                Decision(rule: CompiledBot.helpRuleName, actions: [.quoteReply(.literal(text))], captures: [:]))
        }
        return decisions
    }

    /// The built-in `help` answer: the commands whose rules' conditions on the conversation and the
    /// sender hold here (those on the text are the command's own business), each once, with the
    /// first `help` written for it. `help BOT` (its uid, its name or a mention of it) asks this bot
    /// alone, and `help COMMAND` one command (as errbot's `!help command`). Nil when nothing is to be
    /// said here: another bot may have it.
    func helpText(_ facts: Facts) -> String? {
        let prefix = bot.configuration.commandPrefix
        var asked = (facts.command?.args ?? "").lowercased()
        if asked.hasPrefix(prefix.lowercased()) { asked.removeFirst(prefix.count) }
        let me = [identity.uid, bot.configuration.user.name, "@" + identity.uid, "<@uid:\(identity.uid)>"]
        let wanted: String? = asked.isEmpty || me.contains { $0.lowercased() == asked } ? nil : asked
        var commands: [(name: String, help: String?, usage: CommandUsage?)] = []
        for entry in bot.helpEntries where wanted == nil || entry.command == wanted {
            guard holds(entry.conditions, facts), permits(entry.rule, facts) else { continue }
            if let listed = commands.firstIndex(where: { $0.name == entry.command }) {
                commands[listed].help = commands[listed].help ?? entry.help
                commands[listed].usage = commands[listed].usage ?? entry.rule.usage
            } else {
                commands.append((entry.command, entry.help, entry.rule.usage))
            }
        }
        guard !commands.isEmpty else { return nil }
        var lines = commands.map {
            prefix + $0.name + ($0.usage.map { " " + $0.text } ?? "") + ($0.help.map { " — \($0)" } ?? "")
        }
        // `help COMMAND` also says what each argument is.
        if wanted != nil, let usage = commands.first?.usage {
            lines += usage.parameters.map {
                "  \($0.name): \($0.kind.explanation)" + ($0.isOptional ? " (optional)" : "")
            }
        }
        let heading = strings.text("HELP_HEADING").replacingOccurrences(of: "{name}", with: bot.configuration.user.name)
        return heading + "\n" + lines.joined(separator: "\n")
    }

    /// nil when the rule does not fire; else its captures.
    func matches(_ rule: CompiledBot.CompiledRule, _ facts: Facts) -> [String: String]? {
        let event = facts.event
        var captures: [String: String] = [:]
        switch rule.trigger {
        case .message: guard event.name.isNewMessage else { return nil }
        case .threadReply: guard event.name.isNewMessage, facts.message?.isReply == true else { return nil }
        case .mention(let uids):
            guard event.name.isNewMessage, let message = facts.message else { return nil }
            let wanted = uids.isEmpty ? [identity.uid] : uids
            guard !Set(wanted).isDisjoint(with: message.mentionedUids) else { return nil }
        case .command(let name):
            guard event.name == .textMessageReceived, let command = facts.command, command.name == name else {
                return nil
            }
            captures["args"] = command.args
        case .pinned: guard event.name == .messagePinned else { return nil }
        case .unpinned: guard event.name == .messageUnpinned else { return nil }
        case .edited: guard event.name == .messageEdited else { return nil }
        case .deleted: guard event.name == .messageDeleted else { return nil }
        case .memberJoined:
            guard event.name == .groupMemberJoined || event.name == .memberAddedToGroup else { return nil }
        case .threadSubscribed: guard event.name == .threadSubscribed else { return nil }
        case .threadUnsubscribed: guard event.name == .threadUnsubscribed else { return nil }
        case .saved: guard event.name == .messageSaved else { return nil }
        case .unsaved: guard event.name == .messageUnsaved else { return nil }
        case .reactionAdded(let reactions):
            guard event.name == .messageReactionAdded, Self.isReaction(event, oneOf: reactions) else { return nil }
        case .reactionRemoved(let reactions):
            guard event.name == .messageReactionRemoved, Self.isReaction(event, oneOf: reactions) else { return nil }
        case .schedule, .webhook: return nil
        }
        guard holds(rule.conditions, facts) else { return nil }
        let message = facts.message
        if let list = rule.wordList {
            guard facts.wordLists.contains(list) else { return nil }
        }
        if let pattern = rule.pattern {
            guard let text = message?.text else { return nil }
            switch pattern.search(text) {
            case .match(let match): captures.merge(match.named) { _, new in new }
            case .noMatch: return nil
            case .overBudget:
                overBudget(rule.name, message: message)
                return nil
            }
        }
        return captures
    }

    /// A rule's `text_matches` ran out of its budget on a message (a pattern that backtracks
    /// catastrophically on this text): the rule does not fire, the cut is counted in
    /// `perch_regex_budget_exceeded_total`, and logged as repeated warnings are.
    func overBudget(_ rule: String, message: Message?) {
        metrics.increment("perch_regex_budget_exceeded_total", ["bot": identity.name, "rule": rule])
        guard let more = repeatedFailures.suffix("budget \(rule)", at: actions.now()) else { return }
        logger.warning(
            "rule \(rule): text_matches ran out of its budget on message \(message?.id ?? 0) and did not fire; "
                + "the pattern backtracks too much on such texts\(more)", ["rule": rule])
    }

    /// Whether the event's reaction is one of `reactions` (any, when they are empty).
    static func isReaction(_ event: ChatEvent, oneOf reactions: [String]) -> Bool {
        guard let reaction = event.reaction else { return false }
        return reactions.isEmpty || reactions.contains(reaction.reaction)
    }

    /// Whether the conditions on the conversation and the sender hold (not those on the text).
    func holds(_ conditions: Conditions, _ facts: Facts) -> Bool {
        let event = facts.event
        let message = facts.message
        let receiverType = message?.receiverType ?? (event.member != nil ? .group : nil)
        let guid = message?.receiverType == .group ? message?.receiverUid : event.member?.guid
        if let groups = conditions.groups {
            guard let guid, groups.contains(guid) else { return false }
        }
        if let oneOnOne = conditions.oneOnOne {
            guard let receiverType, (receiverType == .user) == oneOnOne else { return false }
        }
        if let from = conditions.from {
            guard let sender = event.senderUid, from.contains(sender) else { return false }
        }
        if let scopes = conditions.senderScope {
            guard let scope = facts.senderScope, scopes.contains(scope) else { return false }
        }
        if let isBot = conditions.senderIsBot {
            guard (facts.sender?.isBot ?? false) == isBot else { return false }
        }
        if let threaded = conditions.threaded {
            guard let message, message.isReply == threaded else { return false }
        }
        return true
    }

    /// Handles one event: rules in order, then the plugins' hooks. Errors are logged and counted;
    /// nothing escapes.
    ///
    /// With `sends`, an event whose last step is a message send does not wait for that send's
    /// commit: the send is queued (``QueuedSends``, which `callerGoesOn` is passed to) and the lane
    /// goes on to its next event. The consumer saves its cursor past the event only once the send
    /// is committed.
    func handle(_ event: ChatEvent, queueingInto sends: QueuedSends? = nil, callerGoesOn: Bool = false) async {
        guard hears(event) else { return }
        dispatched.add()
        // The store is read only for what the rules' conditions need; the rest is read once a
        // rule fires or a plugin listens (most events of a busy room do neither).
        var facts = localFacts(for: event)
        await lookUp(&facts, sender: bot.needsSender, scope: bot.needsSenderScope, parent: false)
        if bot.hasUsages { await parseArguments(&facts) }
        let decisions = decide(facts)
        let listening =
            bot.plugins.isEmpty ? [] : bot.plugins.filter { $0.value.hears(event.name) }.sorted { $0.key < $1.key }
        guard !decisions.isEmpty || !listening.isEmpty else { return }
        await lookUp(&facts, sender: true, scope: false, parent: true, actor: true)
        if let message = facts.message, facts.sender?.isBot == true,
            LoopGuard.hops(of: message, senderIsBot: true) >= maximumHops
        {
            metrics.increment("perch_bot_loops_cut_total", ["bot": identity.name])
            logger.info("bot chain cut at \(maximumHops) hops", ["message": String(message.id)])
            return
        }
        let numbering = SendCounter()
        for (number, decision) in decisions.enumerated() {
            let context = makeContext(facts, captures: decision.captures, numbering: numbering)
            for (index, action) in decision.actions.enumerated() {
                let isLastStep =
                    number == decisions.count - 1 && index == decision.actions.count - 1 && listening.isEmpty
                if let sends, isLastStep, let answer = action.answer {
                    // Handed to the store now, in event order; the lane goes on to its next event.
                    queue(
                        answer, action: action, context: context, rule: decision.rule, into: sends,
                        callerGoesOn: callerGoesOn)
                } else {
                    await perform(action, context: context, rule: decision.rule)
                }
            }
        }
        if !listening.isEmpty {
            let context = makeContext(facts, captures: [:], numbering: numbering)
            for (name, plugin) in listening {
                await guarded(plugin: name) { try await plugin.onEvent(context) }
            }
        }
    }

    func makeContext(_ facts: Facts, captures: [String: String], numbering: SendCounter = SendCounter()) -> BotContext {
        var all = captures
        if let command = facts.command, all["args"] == nil { all["args"] = command.args }
        return BotContext(
            bot: identity, event: facts.event, message: facts.message, parent: facts.parent, sender: facts.sender,
            actor: facts.actor, captures: all, strings: strings, logger: logger, actions: actions,
            command: facts.command, threadSubscriptionEnabled: bot.threadSubscriptionEnabled, numbering: numbering)
    }

    /// Queues a message-sending action into `sends`; its failure is logged and counted as
    /// ``perform(_:context:rule:)`` does, now or at its commit.
    func queue(
        _ answer: BotContext.Answer, action: Action, context: BotContext, rule: String, into sends: QueuedSends,
        callerGoesOn: Bool
    ) {
        let template: Template
        switch action {
        case .reply(let text, _), .replyInThread(let text, _), .quoteReply(let text, _), .directMessage(let text, _):
            template = text
        default: return
        }
        do {
            try sends.queue(
                try context.draft(answer, render(template, context), notify: action.notifies), context: context,
                callerGoesOn: callerGoesOn
            ) { [self] error in
                failed(action, error, rule: rule)
            }
        } catch {
            failed(action, error, rule: rule)
        }
    }

    func failed(_ action: Action, _ error: ChatError, rule: String) {
        metrics.increment("perch_handler_errors_total", ["bot": identity.name])
        let kind = "\(rule) \(action.name) \(error.code.rawValue)"
        guard let more = repeatedFailures.suffix(kind, at: actions.now()) else { return }
        logger.warning("\(action.name) failed: \(error.code.rawValue) \(error.message)\(more)", ["rule": rule])
    }

    func perform(_ action: Action, context: BotContext, rule: String) async {
        do {
            switch action {
            case .reply(let template, let notify): try await context.reply(render(template, context), notify: notify)
            case .replyInThread(let template, let notify):
                try await context.replyInThread(render(template, context), notify: notify)
            case .quoteReply(let template, let notify):
                try await context.quoteReply(render(template, context), notify: notify)
            case .directMessage(let template, let notify):
                try await context.directMessage(render(template, context), notify: notify)
            // A feature config.yaml turns off makes no call (`perch check` said so, once).
            case .pin(let asSystem, let whenFull):
                guard service.settings.pinEnabled else { return }
                try await context.pin(asSystem: asSystem, whenFull: whenFull)
            case .unpin:
                guard service.settings.pinEnabled else { return }
                try await context.unpin()
            case .save:
                guard service.settings.saveEnabled else { return }
                try await context.save()
            case .react(let reaction): try await context.react(reaction)
            case .unreact(let reaction): try await context.unreact(reaction)
            case .subscribe(let who), .unsubscribe(let who):
                // The follow controls' gate: closed, no subscription call is made through the host.
                guard bot.threadSubscriptionEnabled else { return }
                let uid: String? = {
                    switch who {
                    case .sender: return context.event.senderUid
                    case .`self`: return identity.uid
                    case .user(let uid): return uid
                    }
                }()
                if case .subscribe = action {
                    try await context.subscribe(uid)
                } else {
                    try await context.unsubscribe(uid)
                }
            case .delete: try await context.delete()
            case .kick: try await context.kick()
            case .ban: try await context.ban()
            case .plugin(let name):
                guard let plugin = bot.plugins[name] else { return }
                await guarded(plugin: name) { try await plugin.handle(context) }
            }
        } catch {
            failed(action, error, rule: rule)
        }
    }

    func guarded(plugin name: String, _ body: @Sendable () async throws -> Void) async {
        do {
            try await body()
        } catch is CancellationError where Task.isCancelled {
            // The host stopping or reloading abandoned the call: not the plugin's failure.
        } catch {
            metrics.increment("perch_handler_errors_total", ["bot": identity.name])
            // Keyed by the error's type, not its text: a plugin's messages often name the event.
            let kind = "plugin \(name) \(String(reflecting: type(of: error)))"
            guard let more = repeatedFailures.suffix(kind, at: actions.now()) else { return }
            logger.warning("plugin \(name) failed: \(error)\(more)")
        }
    }
}

extension Action {
    /// The kind of answer a message-sending action sends (it can be the queued last step of an event).
    var answer: BotContext.Answer? {
        switch self {
        case .reply: return .reply
        case .replyInThread: return .replyInThread
        case .quoteReply: return .quoteReply
        case .directMessage: return .directMessage
        default: return nil
        }
    }
}
