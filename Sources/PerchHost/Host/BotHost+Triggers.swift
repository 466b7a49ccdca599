import Foundation
import PerchChat
import PerchConfig
import PerchService

extension BotHost {
    /// Runs the schedule rules due in the minute of `epochSeconds` (UTC), each read on its own time
    /// zone's wall clock. Each firing sends with a muid of (bot, rule, minute), so a minute is never
    /// posted twice, even across a restart.
    public func runSchedules(at epochSeconds: Int64) async {
        let minute = epochSeconds / 60 * 60
        for runtime in currentRuntimes.values {
            for rule in runtime.bot.rules {
                guard case .schedule(let cron, let target, let zone) = rule.trigger,
                    let expression = try? CronExpression(cron),
                    expression.isDue(minute: minute, in: zone.flatMap(TimeZone.init(identifier:)))
                else { continue }
                await fire(runtime, rule: rule, target: target, webhook: nil, key: "schedule:\(rule.name):\(minute)")
            }
        }
    }

    /// Delivers a webhook's JSON body to the rules listening on `name`: every one (a caller with
    /// the app's API key), or, with `accepting`, those with a `secret` it accepts (a request
    /// signed with it or carrying it). Returns how many rules fired.
    @discardableResult
    public func webhook(
        _ name: String, body: JSONValue, accepting: (@Sendable (_ secret: String) -> Bool)? = nil
    ) async -> Int {
        var fired = 0
        for runtime in currentRuntimes.values {
            for rule in runtime.bot.rules {
                guard case .webhook(let hook, let target, let secret) = rule.trigger, hook == name else { continue }
                if let accepting {
                    guard let secret, accepting(secret) else { continue }
                }
                fired += 1
                let key = "webhook:\(rule.name):\(UUID().uuidString)"
                await fire(runtime, rule: rule, target: target, webhook: body, key: key)
            }
        }
        return fired
    }

    /// What the schedule rules due in the minute of `epochSeconds` (UTC) would post, without posting
    /// it (`perch dry-run --at`): each rule due, bots by name, its actions rendered.
    public func dryRunSchedules(at epochSeconds: Int64) -> [DryRunResult] {
        let minute = epochSeconds / 60 * 60
        var results: [DryRunResult] = []
        for (name, runtime) in currentRuntimes.sorted(by: { $0.key < $1.key }) {
            for rule in runtime.bot.rules {
                guard case .schedule(let cron, let target, let zone) = rule.trigger,
                    let expression = try? CronExpression(cron),
                    expression.isDue(minute: minute, in: zone.flatMap(TimeZone.init(identifier:)))
                else { continue }
                let context = triggeredContext(runtime, target: target, webhook: nil, key: "dry-run")
                let described = rule.actions.map { action -> String in
                    guard let template = action.template else { return action.summary }
                    return "\(action.name): \(runtime.render(template, context))"
                }
                let place: String
                switch target {
                case .group(let guid): place = " in group \(guid)"
                case .user(let uid): place = " to \(uid)"
                }
                results.append(DryRunResult(bot: name, rule: rule.name + place, actions: described))
            }
        }
        return results
    }

    /// Runs a time- or hook-driven rule: its actions post into the target conversation.
    func fire(
        _ runtime: BotRuntime, rule: CompiledBot.CompiledRule, target: Trigger.ScheduleTarget?,
        webhook: JSONValue?, key: String
    ) async {
        let context = triggeredContext(runtime, target: target, webhook: webhook, key: key)
        for action in rule.actions {
            await runtime.perform(action, context: context, rule: rule.name)
        }
    }

    /// The context of a time- or hook-driven rule: no event, its message the target conversation,
    /// its sends numbered under `key`.
    func triggeredContext(
        _ runtime: BotRuntime, target: Trigger.ScheduleTarget?, webhook: JSONValue?, key: String
    ) -> BotContext {
        let conversation: String
        var message: Message?
        switch target {
        case .group(let guid)?:
            conversation = ConversationID.group(guid)
            message = Message(
                conversationId: conversation, sender: runtime.identity.uid, receiverType: .group, receiverUid: guid)
        case .user(let uid)?:
            conversation = ConversationID.user(runtime.identity.uid, uid)
            message = Message(
                conversationId: conversation, sender: runtime.identity.uid, receiverType: .user, receiverUid: uid)
        case nil:
            conversation = ""
        }
        let event = ChatEvent(
            name: .customMessageReceived, conversationId: conversation, createdAt: options.clock.now())
        let context = BotContext(
            bot: runtime.identity, event: event, message: message, parent: nil, sender: nil, captures: [:],
            strings: runtime.strings, logger: runtime.logger, actions: runtime.actions,
            threadSubscriptionEnabled: runtime.bot.threadSubscriptionEnabled, webhook: webhook,
            muidPrefix: "perch:\(runtime.identity.name):\(key)")
        return context
    }

    func startScheduler() {
        let clock = options.clock
        // The minute of the start, read now: read in the task, it was whatever minute the task
        // first ran in.
        let started = clock.now() / 60
        scheduler = Task { [weak self] in
            var last = started
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                let minute = clock.now() / 60
                guard minute > last else {
                    last = min(last, minute)  // the clock was set back: go on from its minute
                    continue
                }
                // Minutes passed while the loop did not run (a busy machine; a stop in a debugger)
                // are run late, up to five; after a longer gap (a suspended machine) only the last
                // five, as Vixie cron catches up on short jumps of the clock only.
                let missed = max(last + 1, minute - 4)
                last = minute
                for due in missed...minute { await self?.runSchedules(at: due * 60) }
            }
        }
    }

    /// What the bots would do with a message, without doing it (`perch dry-run`).
    /// - Throws: the chat service's refusal when the message itself would be refused (an unknown
    ///   sender or group, a sender not in the group, a thread root that is not there), as the send would.
    public func dryRun(as uid: String, to receiver: Receiver, thread: Int64? = nil, text: String) async throws
        -> [DryRunResult]
    {
        guard let service else { throw HostError("the host is not running") }
        let mentions = try await service.checkSend(
            MessageDraft(to: receiver, text: text, parentMessageId: thread ?? 0), as: uid)
        let message = Message(
            id: 0, conversationId: receiver.conversationId(sender: uid), sender: uid, receiverType: receiver.type,
            receiverUid: receiver.id, text: text, mentionedUids: mentions, parentMessageId: thread ?? 0)
        let event = ChatEvent(
            name: .textMessageReceived, conversationId: message.conversationId, createdAt: 0,
            message: message)
        var results: [DryRunResult] = []
        for (name, runtime) in currentRuntimes.sorted(by: { $0.key < $1.key }) {
            let audience: Bool
            switch receiver {
            case .group(let guid): audience = try await service.scope(of: runtime.identity.uid, in: guid) != nil
            case .user(let other): audience = other == runtime.identity.uid
            }
            guard audience, runtime.hears(event) else { continue }
            let facts = await runtime.facts(for: event)
            for decision in runtime.decide(facts) {
                let context = runtime.makeContext(facts, captures: decision.captures)
                let described = decision.actions.map { action -> String in
                    guard let template = action.template else { return action.summary }
                    return "\(action.name): \(runtime.render(template, context))"
                }
                results.append(DryRunResult(bot: name, rule: decision.rule, actions: described))
            }
            // A plugin reached over HTTP is posted only its `plugin:` actions, not every event.
            let hearing = runtime.bot.configuration.plugins.filter {
                $0.url == nil && runtime.bot.plugins[$0.name] != nil
            }
            for plugin in hearing.map(\.name).sorted() {
                results.append(
                    DryRunResult(bot: name, rule: "(plugin hooks)", actions: ["plugin \(plugin) hears the event"]))
            }
        }
        return results
    }
}

/// One rule that would fire in a dry run, with its actions rendered.
public struct DryRunResult: Sendable, Hashable, CustomStringConvertible {
    public var bot: String
    public var rule: String
    public var actions: [String]

    /// A text of several lines keeps them under its action, indented.
    public var description: String {
        "\(bot) / \(rule):\n"
            + actions.map { "  - " + $0.replacingOccurrences(of: "\n", with: "\n    ") }.joined(separator: "\n")
    }
}

extension CronExpression {
    /// Whether the minute starting at `minute` (UTC) matches on the wall clock of `zone` (UTC when
    /// nil). A minute the clocks skip (the hour lost to summer time) never matches; of a minute
    /// they show twice (the hour repeated when they go back) only the first does, as a person
    /// reading the clock would expect: once a day, not twice that night.
    func isDue(minute: Int64, in zone: TimeZone?) -> Bool {
        guard let zone else { return matches(epochSeconds: minute) }
        func offset(_ epoch: Int64) -> Int64 {
            Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(epoch))))
        }
        let now = offset(minute)
        guard matches(epochSeconds: minute + now) else { return false }
        // Six hours back is before any change of the last few hours, and after the one before it.
        let before = offset(minute - 6 * 3600)
        guard before > now else { return true }
        // The clocks went back by before - now: the same wall-clock minute came that long ago if
        // the change had not happened yet then.
        return offset(minute - (before - now)) != before
    }
}
