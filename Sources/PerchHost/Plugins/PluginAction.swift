import PerchChat
import PerchService

extension ExternalPlugin {
    /// Runs the `actions` of a plugin's `result`, if it has any.
    static func run(_ result: JSONValue, _ context: BotContext) async throws {
        guard case .array(let answer)? = result["actions"] else { return }
        // Read whole before any runs: an answer with a malformed action runs none of them (its
        // first actions ran and the rest were dropped, and the log did not say which one was wrong).
        var actions: [PluginAction] = []
        for (index, action) in answer.enumerated() {
            do {
                actions.append(try PluginAction(action))
            } catch {
                throw PluginFailure(description: "actions[\(index)]: \(error); none of the answer's actions ran")
            }
        }
        // As a rule's actions: one the chat service refuses does not keep the next from running.
        var refused: [String] = []
        for (index, action) in actions.enumerated() {
            do {
                try await action.run(context)
            } catch {
                refused.append("actions[\(index)] (\(action.name)): \(error)")
            }
        }
        if !refused.isEmpty { throw PluginFailure(description: refused.joined(separator: "; ")) }
    }

    /// One action of a plugin's answer, in the bot-file vocabulary.
    enum PluginAction {
        case reply(String, notify: Bool), replyInThread(String, notify: Bool), quoteReply(String, notify: Bool)
        case directMessage(String, notify: Bool)
        case pin(asSystem: Bool, whenFull: PinOverflow), unpin, save, delete, kick, ban
        /// Someone's subscription (`who`, default the sender) to a thread (`parentMessageId`, default
        /// the event's message's thread).
        case subscribe(String?, thread: Int64?), unsubscribe(String?, thread: Int64?)
        case react(String), unreact(String)

        init(_ action: JSONValue) throws(PluginFailure) {
            let name: String
            var argument: JSONValue = .null
            switch action {
            case .string(let text): name = text
            case .object(let object) where object.count == 1:
                name = object.keys.first!
                argument = object.values.first!
            default: throw PluginFailure(description: "an action is a name or a one-key object")
            }
            func text() throws(PluginFailure) -> String {
                guard let text = argument.stringValue ?? argument["text"]?.stringValue else {
                    throw PluginFailure(description: "action '\(name)' needs text")
                }
                return text
            }
            let who = argument.stringValue ?? argument["who"]?.stringValue
            var thread: Int64?
            if case .number(let id)? = argument["parentMessageId"] {
                guard let exact = Int64(exactly: id), exact > 0 else {
                    throw PluginFailure(description: "action '\(name)': parentMessageId is a message id")
                }
                thread = exact
            }
            // `{"reply": {"text": "…", "notify": true}}`: the message notifies people.
            let notify = argument["notify"] == .bool(true)
            switch name {
            case "reply": self = .reply(try text(), notify: notify)
            case "reply_in_thread": self = .replyInThread(try text(), notify: notify)
            case "quote_reply": self = .quoteReply(try text(), notify: notify)
            case "direct_message": self = .directMessage(try text(), notify: notify)
            case "pin":
                let identity = argument["as"]?.stringValue ?? "bot"
                guard identity == "bot" || identity == User.system else {
                    throw PluginFailure(description: "pin 'as' is 'app_system' or 'bot', found '\(identity)'")
                }
                let full = argument["when_full"]?.stringValue ?? PinOverflow.refuse.rawValue
                guard let whenFull = PinOverflow(rawValue: full) else {
                    let names = PinOverflow.allCases.map(\.rawValue).joined(separator: " or ")
                    throw PluginFailure(description: "pin 'when_full' is \(names), found '\(full)'")
                }
                self = .pin(asSystem: identity == User.system, whenFull: whenFull)
            case "unpin": self = .unpin
            case "save": self = .save
            case "subscribe": self = .subscribe(who, thread: thread)
            case "unsubscribe": self = .unsubscribe(who, thread: thread)
            case "react", "unreact":
                guard let reaction = argument.stringValue ?? argument["reaction"]?.stringValue else {
                    throw PluginFailure(description: "action '\(name)' needs a reaction")
                }
                self = name == "react" ? .react(reaction) : .unreact(reaction)
            case "delete": self = .delete
            case "kick": self = .kick
            case "ban": self = .ban
            default: throw PluginFailure(description: "unknown action '\(name)'")
            }
        }

        var name: String {
            switch self {
            case .reply: "reply"
            case .replyInThread: "reply_in_thread"
            case .quoteReply: "quote_reply"
            case .directMessage: "direct_message"
            case .pin: "pin"
            case .unpin: "unpin"
            case .save: "save"
            case .delete: "delete"
            case .kick: "kick"
            case .ban: "ban"
            case .subscribe: "subscribe"
            case .unsubscribe: "unsubscribe"
            case .react: "react"
            case .unreact: "unreact"
            }
        }

        func run(_ context: BotContext) async throws {
            switch self {
            case .reply(let text, let notify): try await context.reply(text, notify: notify)
            case .replyInThread(let text, let notify): try await context.replyInThread(text, notify: notify)
            case .quoteReply(let text, let notify): try await context.quoteReply(text, notify: notify)
            case .directMessage(let text, let notify): try await context.directMessage(text, notify: notify)
            case .pin(let asSystem, let whenFull): try await context.pin(asSystem: asSystem, whenFull: whenFull)
            case .unpin: try await context.unpin()
            case .save: try await context.save()
            case .subscribe(let who, let thread): try await context.subscribe(who, toThread: thread)
            case .unsubscribe(let who, let thread): try await context.unsubscribe(who, fromThread: thread)
            case .react(let reaction): try await context.react(reaction)
            case .unreact(let reaction): try await context.unreact(reaction)
            case .delete: try await context.delete()
            case .kick: try await context.kick()
            case .ban: try await context.ban()
            }
        }
    }
}
