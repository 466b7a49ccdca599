import PerchChat
import PerchConfig

/// Filling in an action's template (`{sender.name}`, `{parent.text}`, a capture) for one event.
extension BotRuntime {
    /// A template's text, cut to the service's longest text (`limits.messageTextBytes`) with an
    /// ellipsis: a thread watcher quoting a root near the limit sent a text over it, which the
    /// service refused, so the bot said nothing.
    func render(_ template: Template, _ context: BotContext) -> String {
        Self.fitting(fill(template, context), bytes: service.settings.messageTextBytes)
    }

    /// `text`, or its longest prefix of whole characters that fits in `bytes` with "…" after it.
    static func fitting(_ text: String, bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        let ellipsis = bytes > 3 ? "…" : ""
        let room = bytes - ellipsis.utf8.count
        var used = 0
        var end = text.startIndex
        for character in text {
            used += character.utf8.count
            if used > room { break }
            end = text.index(after: end)
        }
        return text[..<end] + ellipsis
    }

    func fill(_ template: Template, _ context: BotContext) -> String {
        template.render { path in
            switch path.first {
            case "sender":
                return path.count == 2 ? (path[1] == "uid" ? context.sender?.uid : context.sender?.name) : nil
            case "actor":
                // An event logged before Perch recorded its actor reads as its sender's doing.
                guard path.count == 2, let uid = context.event.actor ?? context.message?.sender else { return nil }
                let user = context.event.actor == nil ? context.sender : context.actor
                return path[1] == "uid" ? uid : user?.name ?? uid
            case "message", "parent":
                guard let message = path[0] == "message" ? context.message : context.parent, path.count == 2 else {
                    return nil
                }
                switch path[1] {
                case "id": return String(message.id)
                // A quoted text mentions no one: its tokens become plain `@uid`.
                case "text": return message.text.map(Mentions.quoted)
                case "sender": return message.sender
                default: return nil
                }
            case "group":
                return context.message?.receiverType == .group
                    ? context.message?.receiverUid : context.event.member?.guid
            case "strings": return context.strings[path.dropFirst().joined(separator: ".")]
            case "reaction": return context.event.reaction?.reaction
            case "webhook":
                var value = context.webhook
                for key in path.dropFirst() { value = value?[key] }
                if case .string(let text)? = value { return text }
                if case .number(let number)? = value {
                    return Int64(exactly: number).map(String.init) ?? String(number)
                }
                if case .bool(let flag)? = value { return String(flag) }
                return nil
            // A capture, or a typed argument's field (`{when.seconds}`).
            case .some: return context.captures[path.joined(separator: ".")]
            case nil: return nil
            }
        }
    }
}
