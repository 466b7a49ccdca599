import PerchChat
import PerchYAML

/// One action of a rule. Written as a name when it takes nothing (`- pin`, `- delete`) or as a
/// one-key mapping (`- reply: "Hi {sender.name}"`, `- pin: {as: app_system}`). An action that sends
/// a message may add `notify: true` beside its key: the message then notifies (and subscribes to
/// its thread) as a person's does; a bot's messages are quiet otherwise.
public enum Action: Sendable, Equatable {
    /// A new message in the same conversation (top level).
    case reply(Template, notify: Bool = false)
    /// A reply in the thread of the message (its root when the message is itself a reply).
    case replyInThread(Template, notify: Bool = false)
    /// A quote reply to the message; on a quote reply, a plain reply (the 1-depth rule).
    case quoteReply(Template, notify: Bool = false)
    /// A one-on-one message from the bot to the sender.
    case directMessage(Template, notify: Bool = false)
    /// Pin the message; `asSystem` pins as `app_system` (bots with `system: true` only), and
    /// `whenFull` says what happens when the conversation holds its most pins.
    case pin(asSystem: Bool, whenFull: PinOverflow = .refuse)
    case unpin
    /// Save the message for the bot's user.
    case save
    /// React to the message as the bot (`addReaction`), or take the bot's reaction back.
    case react(String)
    case unreact(String)
    /// Subscribe someone to the message's thread (its root when the message is a reply).
    case subscribe(Who)
    case unsubscribe(Who)
    /// Delete the message (the bot needs moderator scope in the group).
    case delete
    /// Kick the sender from the group.
    case kick
    /// Ban the sender from the group.
    case ban
    /// Hand the event to a plugin of the bot.
    case plugin(String)

    public enum Who: Sendable, Equatable {
        case sender
        case `self`
        case user(String)
    }

    /// The actions that send a message (and may say `notify`).
    public static let sending = ["reply", "reply_in_thread", "quote_reply", "direct_message"]

    public static let names = [
        "reply", "reply_in_thread", "quote_reply", "direct_message", "pin", "unpin", "save", "react", "unreact",
        "subscribe", "unsubscribe", "delete", "kick", "ban", "plugin",
    ]

    public var name: String {
        switch self {
        case .reply: return "reply"
        case .replyInThread: return "reply_in_thread"
        case .quoteReply: return "quote_reply"
        case .directMessage: return "direct_message"
        case .pin: return "pin"
        case .unpin: return "unpin"
        case .save: return "save"
        case .react: return "react"
        case .unreact: return "unreact"
        case .subscribe: return "subscribe"
        case .unsubscribe: return "unsubscribe"
        case .delete: return "delete"
        case .kick: return "kick"
        case .ban: return "ban"
        case .plugin: return "plugin"
        }
    }

    /// The action as `perch dry-run` tells it, its options spelled out: `pin as app_system,
    /// unpinning its own oldest pin when the conversation is full`, `subscribe the sender`,
    /// `plugin karma`. (An action that sends a text is told with the text, by the caller.)
    public var summary: String {
        switch self {
        case .pin(let asSystem, let whenFull):
            return "pin" + (asSystem ? " as app_system" : "")
                + (whenFull == .unpinOldest ? ", unpinning its own oldest pin when the conversation is full" : "")
        case .subscribe(let who), .unsubscribe(let who):
            switch who {
            case .sender: return name + " the sender"
            case .self: return name + " the bot"
            case .user(let uid): return name + " " + uid
            }
        case .plugin(let plugin): return "plugin " + plugin
        case .react(let reaction), .unreact(let reaction): return name + " " + reaction
        default: return name
        }
    }

    /// Whether the message the action sends notifies people (`notify: true`).
    public var notifies: Bool {
        switch self {
        case .reply(_, let notify), .replyInThread(_, let notify), .quoteReply(_, let notify),
            .directMessage(_, let notify):
            return notify
        default: return false
        }
    }

    /// The template the action sends, if any.
    public var template: Template? {
        switch self {
        case .reply(let t, _), .replyInThread(let t, _), .quoteReply(let t, _), .directMessage(let t, _): return t
        default: return nil
        }
    }
}

extension Action: Decodable, ConfigPlaceholder {
    public static var placeholder: Action { .unpin }

    public init(from decoder: any Decoder) throws {
        let name: String
        var argument: YAMLNode?
        var notify = false
        switch decoder.configNode?.content {
        case .scalar?:
            name = try decoder.singleValueContainer().decode(String.self)
        case .mapping(let all)?:
            // `notify` goes beside a sending action's key.
            let pairs = all.filter { $0.key.scalar != "notify" }
            guard pairs.count == 1, let key = pairs[0].key.scalar else {
                throw ConfigValueError(
                    "an action is one key (\(Self.names.joined(separator: ", "))), found \(pairs.count) keys")
            }
            name = key
            argument = pairs[0].value
            _ = try decoder.container(keyedBy: PathKey.self).allKeys
            if all.count > pairs.count {
                guard Self.sending.contains(name) else {
                    throw ConfigValueError(
                        "`notify` goes with an action that sends a message (\(Self.sending.joined(separator: ", ")))")
                }
                notify = try decoder.container(keyedBy: PathKey.self).decode(
                    Bool.self, forKey: PathKey(stringValue: "notify"))
            }
        default:
            throw ConfigValueError("expected an action name or a one-key mapping")
        }
        let key = PathKey(stringValue: name)
        func text() throws -> Template {
            guard argument != nil else { throw ConfigValueError("action '\(name)' needs the text to send") }
            return try decoder.container(keyedBy: PathKey.self).decode(Template.self, forKey: key)
        }
        func who() throws -> Who {
            guard argument != nil, argument?.isNull == false else { return .sender }
            return try decoder.container(keyedBy: PathKey.self).decode(WhoOption.self, forKey: key).who
        }
        switch name {
        case "reply": self = .reply(try text(), notify: notify)
        case "reply_in_thread": self = .replyInThread(try text(), notify: notify)
        case "quote_reply": self = .quoteReply(try text(), notify: notify)
        case "direct_message": self = .directMessage(try text(), notify: notify)
        case "pin":
            let options =
                argument == nil
                ? nil : try decoder.container(keyedBy: PathKey.self).decodeIfPresent(PinOptions.self, forKey: key)
            self = .pin(asSystem: options?.asSystem ?? false, whenFull: options?.whenFull ?? .refuse)
        case "unpin": self = .unpin
        case "save": self = .save
        case "react", "unreact":
            guard argument != nil else {
                throw ConfigValueError("action '\(name)' needs the reaction: `\(name): \"👀\"`")
            }
            let reaction = try decoder.container(keyedBy: PathKey.self).decode(WrittenReaction.self, forKey: key).text
            self = name == "react" ? .react(reaction) : .unreact(reaction)
        case "subscribe": self = .subscribe(try who())
        case "unsubscribe": self = .unsubscribe(try who())
        case "delete": self = .delete
        case "kick": self = .kick
        case "ban": self = .ban
        case "plugin":
            guard argument != nil else { throw ConfigValueError("action 'plugin' needs the plugin's name") }
            self = .plugin(try decoder.container(keyedBy: PathKey.self).decode(String.self, forKey: key))
        default:
            var message = "unknown action '\(name)'"
            if let close = suggestion(for: name, among: Self.names) { message += "; did you mean '\(close)'?" }
            throw ConfigValueError(message + " (actions: \(Self.names.joined(separator: ", ")))")
        }
        if argument != nil, ["unpin", "save", "delete", "kick", "ban"].contains(name), argument?.isNull == false {
            throw ConfigValueError("action '\(name)' takes no argument")
        }
    }
}

struct PinOptions: Decodable {
    var asSystem: Bool
    var whenFull: PinOverflow

    enum CodingKeys: String, CodingKey {
        case `as`
        case whenFull = "when_full"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        whenFull = try c.decodeIfPresent(PinOverflow.self, forKey: .whenFull) ?? .refuse
        let identity = try c.decodeIfPresent(String.self, forKey: .as)
        switch identity {
        case nil, "bot": asSystem = false
        case "app_system": asSystem = true
        case let other?:
            var message = "'as' is 'app_system' or 'bot', found '\(other)'"
            if let close = suggestion(for: other, among: ["app_system", "bot"]) {
                message += "; did you mean '\(close)'?"
            }
            throw ConfigValueError(message)
        }
    }
}

/// `sender`, `self` or a uid, written alone or as `{who: ...}`.
struct WhoOption: Decodable {
    var who: Action.Who

    enum CodingKeys: String, CodingKey { case who }

    init(from decoder: any Decoder) throws {
        let text: String
        if case .scalar? = decoder.configNode?.content {
            text = try decoder.singleValueContainer().decode(String.self)
        } else {
            text = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .who)
        }
        switch text {
        case "sender": who = .sender
        case "self": who = .`self`
        default: who = .user(text)
        }
    }
}
