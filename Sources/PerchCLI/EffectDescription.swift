import PerchChat

/// What `perch send --wait` prints of each event that followed a message: every kind of effect a
/// bot may have had (a message, an edit, a deletion, a pin, a reaction, a member change, a thread
/// subscription), one line each.
enum EffectDescription {
    /// The line for `event`, or nil for one that says nothing of what happened (a read marker).
    static func line(_ event: ChatEvent) -> String? {
        let actor = event.actor ?? event.message?.sender ?? "?"
        switch event.name {
        case .textMessageReceived, .mediaMessageReceived, .customMessageReceived:
            return event.message.map { "#\($0.id) \(message($0))" }
        case .messageEdited:
            return event.message.map { "#\($0.id) edited by \(actor): \($0.text ?? "(\($0.type))")" }
        case .messageDeleted: return event.message.map { "#\($0.id) deleted by \(actor)" }
        case .messagePinned: return event.message.map { "#\($0.id) pinned by \(actor)" }
        case .messageUnpinned: return event.message.map { "#\($0.id) unpinned by \(actor)" }
        case .messageSaved: return event.message.map { "#\($0.id) saved by \(actor)" }
        case .messageUnsaved: return event.message.map { "#\($0.id) unsaved by \(actor)" }
        case .messageReactionAdded, .messageReactionRemoved:
            guard let reaction = event.reaction else { return nil }
            let verb = event.name == .messageReactionAdded ? "reacted" : "took back"
            return "#\(reaction.messageId) \(reaction.uid) \(verb) \(reaction.reaction)"
        case .threadSubscribed, .threadUnsubscribed:
            guard let root = event.message?.id, let uid = event.actor else { return nil }
            return "#\(root) " + (event.name == .threadSubscribed ? "\(uid) follows the thread" : "\(uid) unfollowed")
        case .groupMemberJoined, .groupMemberLeft, .groupMemberKicked, .groupMemberBanned, .groupMemberUnbanned,
            .groupMemberScopeChanged, .memberAddedToGroup:
            guard let member = event.member else { return nil }
            let by = member.actor == member.uid ? "" : " by \(member.actor)"
            switch event.name {
            case .groupMemberJoined: return "\(member.uid) joined \(member.guid)"
            case .groupMemberLeft: return "\(member.uid) left \(member.guid)"
            case .groupMemberKicked: return "\(member.uid) kicked from \(member.guid)\(by)"
            case .groupMemberBanned: return "\(member.uid) banned from \(member.guid)\(by)"
            case .groupMemberUnbanned: return "\(member.uid) unbanned in \(member.guid)\(by)"
            case .memberAddedToGroup: return "\(member.uid) added to \(member.guid)\(by)"
            default:
                return "\(member.uid) is \(member.scope?.rawValue ?? "?") in \(member.guid)\(by)"
            }
        case .notificationsRead: return nil
        }
    }

    /// A message as `perch send` prints it: its sender, its thread and quote, its text.
    static func message(_ message: Message) -> String {
        var parts = ["\(message.sender):"]
        if message.parentMessageId != 0 { parts.append("[thread #\(message.parentMessageId)]") }
        if message.quotedMessageId != 0 { parts.append("[quoting #\(message.quotedMessageId)]") }
        parts.append(message.text ?? "(\(message.type))")
        return parts.joined(separator: " ")
    }
}
