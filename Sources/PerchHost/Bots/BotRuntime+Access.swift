import PerchChat
import PerchConfig

/// A rule's `allow:` and `deny:` (docs/configuration.md, "Permissions"): whether the rule is for
/// this event's sender, and what a refused command answers.
extension BotRuntime {
    enum AccessOutcome {
        case allowed
        /// Not for this sender; a refused command's private answer, unless the rule is silent.
        case refused(Decision?)
    }

    /// Whether the rule's `allow`/`deny` let this event's sender in (the built-in `help` lists only
    /// the commands the asker may use).
    func permits(_ rule: CompiledBot.CompiledRule, _ facts: Facts) -> Bool {
        guard rule.allow != nil || rule.deny != nil, let uid = facts.event.senderUid else { return true }
        let message = facts.message
        let guid = message?.receiverType == .group ? message?.receiverUid : facts.event.member?.guid
        let matching = { (access: Access) in
            access.matches(uid: uid, guid: guid, scope: facts.senderScope, admins: self.admins)
        }
        return rule.deny.map(matching) != true && rule.allow.map(matching) != false
    }

    /// Checked once the rule's trigger and conditions matched: `deny` first, then `allow`. A
    /// refusal is logged; a refused command answers the sender privately (`COMMAND_REFUSED`), or,
    /// with `refusal: silent`, not at all.
    func access(_ rule: CompiledBot.CompiledRule, _ facts: Facts) -> AccessOutcome {
        guard !permits(rule, facts), let uid = facts.event.senderUid else { return .allowed }
        logger.info("rule \(rule.name) refused for \(uid) by its allow/deny", ["rule": rule.name])
        guard case .command(let name) = rule.trigger, rule.refusal == .private else { return .refused(nil) }
        let text = strings.text("COMMAND_REFUSED").replacingOccurrences(
            of: "{command}", with: bot.configuration.commandPrefix + name)
        return .refused(
            Decision(rule: rule.name + " (refused)", actions: [.directMessage(.literal(text))], captures: [:]))
    }
}
