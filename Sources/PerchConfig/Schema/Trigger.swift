import PerchChat
import PerchYAML

/// What starts a rule. Written as a name (`on: thread_reply`) or, for triggers with arguments, a
/// mapping (`on: {command: follow}`, `on: {schedule: "0 9 * * 1", group: general}`).
public enum Trigger: Sendable, Equatable {
    /// Any new message the bot hears (text, media or custom), threaded or not.
    case message
    /// A new message with `parentMessageId != 0`.
    case threadReply
    /// A new message mentioning the bot, or any of `uids` when given.
    case mention(uids: [String])
    /// A new text message `<prefix><name> [arguments]`.
    case command(name: String)
    case pinned
    case unpinned
    case edited
    case deleted
    case memberJoined
    /// Someone subscribed to (or unsubscribed from) a thread of a conversation the bot is in, by any
    /// means; the message is the thread's root and the sender who (un)subscribed.
    case threadSubscribed
    case threadUnsubscribed
    /// The bot's own user saved (or unsaved) a message, from another session (the web chat, the
    /// API): saves are their saver's alone.
    case saved
    case unsaved
    /// Someone's reaction to a message (`onMessageReactionAdded`), any reaction or one of `reactions`.
    case reactionAdded(reactions: [String])
    /// Someone taking their reaction back (`onMessageReactionRemoved`), any or one of `reactions`.
    case reactionRemoved(reactions: [String])
    /// A cron schedule (five fields) posting into one conversation, read on the wall clock of
    /// `timezone` (an IANA name, `Europe/Berlin`; UTC when nil).
    case schedule(cron: String, target: ScheduleTarget, timezone: String? = nil)
    /// A named inbound HTTP hook, `POST /v3/hooks/{name}`, whose JSON body templates can read;
    /// replies go to the target conversation when one is given. With a `secret`, a request
    /// signed with it (GitHub's `X-Hub-Signature-256`) or carrying it as a token fires the rule
    /// without the app's API key.
    case webhook(name: String, target: ScheduleTarget?, secret: String? = nil)

    public enum ScheduleTarget: Sendable, Equatable {
        case group(String)
        case user(String)
    }

    public static let names = [
        "message", "thread_reply", "mention", "command", "pinned", "unpinned", "edited", "deleted", "member_joined",
        "thread_subscribed", "thread_unsubscribed", "saved", "unsaved", "reaction_added", "reaction_removed",
        "schedule", "webhook",
    ]

    /// The trigger's name in a bot file (`on: NAME`, or the key of its mapping).
    public var name: String {
        switch self {
        case .message: return "message"
        case .threadReply: return "thread_reply"
        case .mention: return "mention"
        case .command: return "command"
        case .pinned: return "pinned"
        case .unpinned: return "unpinned"
        case .edited: return "edited"
        case .deleted: return "deleted"
        case .memberJoined: return "member_joined"
        case .threadSubscribed: return "thread_subscribed"
        case .threadUnsubscribed: return "thread_unsubscribed"
        case .saved: return "saved"
        case .unsaved: return "unsaved"
        case .reactionAdded: return "reaction_added"
        case .reactionRemoved: return "reaction_removed"
        case .schedule: return "schedule"
        case .webhook: return "webhook"
        }
    }

    /// What an event of the trigger carries for its actions and templates.
    public enum Subject: Sendable, Equatable {
        /// A message and its sender (message, edit, delete, pin triggers); for a reaction, the
        /// message reacted to and whoever reacted.
        case message
        /// A member and their group, no message (`member_joined`).
        case member
        /// Nothing but the conversation the rule posts into (`schedule`, `webhook`).
        case nothing
    }

    public var subject: Subject {
        switch self {
        case .memberJoined: return .member
        case .schedule, .webhook: return .nothing
        default: return .message
        }
    }

    /// Whether the trigger fires on new messages (and so reads text, mentions, threads).
    public var isMessageTrigger: Bool {
        switch self {
        case .message, .threadReply, .mention, .command: return true
        default: return false
        }
    }
}

extension Trigger: Decodable, ConfigPlaceholder {
    public static var placeholder: Trigger { .message }

    enum CodingKeys: String, CodingKey {
        case mention, command, schedule, webhook, group, user, timezone, secret
        case reactionAdded = "reaction_added"
        case reactionRemoved = "reaction_removed"
    }

    public init(from decoder: any Decoder) throws {
        if case .scalar? = decoder.configNode?.content {
            let name = try decoder.singleValueContainer().decode(String.self)
            switch name {
            case "message": self = .message
            case "thread_reply": self = .threadReply
            case "mention": self = .mention(uids: [])
            case "pinned": self = .pinned
            case "unpinned": self = .unpinned
            case "edited": self = .edited
            case "deleted": self = .deleted
            case "member_joined": self = .memberJoined
            case "thread_subscribed": self = .threadSubscribed
            case "thread_unsubscribed": self = .threadUnsubscribed
            case "saved": self = .saved
            case "unsaved": self = .unsaved
            case "reaction_added": self = .reactionAdded(reactions: [])
            case "reaction_removed": self = .reactionRemoved(reactions: [])
            case "command", "schedule", "webhook":
                throw ConfigValueError("trigger '\(name)' needs an argument: write `on: {\(name): ...}`")
            default:
                var message = "unknown trigger '\(name)'"
                if let close = suggestion(for: name, among: Self.names) { message += "; did you mean '\(close)'?" }
                throw ConfigValueError(message + " (triggers: \(Self.names.joined(separator: ", ")))")
            }
            return
        }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        // Asked key by key (`allKeys` would count every key as read, so one the trigger's kind does
        // not take, `group` beside `command`, was silently ignored instead of reported).
        let kinds: [CodingKeys] = [.mention, .command, .reactionAdded, .reactionRemoved, .schedule, .webhook]
        let present = kinds.filter(c.contains).map(\.stringValue)
        guard present.count == 1 else {
            throw ConfigValueError(
                present.isEmpty
                    ? "a trigger mapping names one of \(kinds.map(\.stringValue).joined(separator: ", "))"
                    : "a trigger names one kind, found \(present.joined(separator: " and "))")
        }
        switch present[0] {
        case "mention":
            self = .mention(uids: try c.decode(StringList.self, forKey: .mention).values)
        case "command":
            let name = try c.decode(String.self, forKey: .command)
            guard !name.isEmpty, !name.contains(where: \.isWhitespace) else {
                throw ConfigValueError("a command name is one word, found '\(name)'")
            }
            // Commands match in any case: the name is kept as the parser gives it, in lower case.
            self = .command(name: name.lowercased())
        case "reaction_added", "reaction_removed":
            let key = CodingKeys(rawValue: present[0])!
            let reactions = try c.decode(OneOrMany<WrittenReaction>.self, forKey: key).values.map(\.text)
            self = key == .reactionAdded ? .reactionAdded(reactions: reactions) : .reactionRemoved(reactions: reactions)
        case "webhook":
            let name = try c.decode(String.self, forKey: .webhook)
            let group = try c.decodeIfPresent(String.self, forKey: .group)
            let user = try c.decodeIfPresent(String.self, forKey: .user)
            let secret = try c.decodeIfPresent(String.self, forKey: .secret)
            switch (group, user) {
            case (let guid?, nil): self = .webhook(name: name, target: .group(guid), secret: secret)
            case (nil, let uid?): self = .webhook(name: name, target: .user(uid), secret: secret)
            case (nil, nil): self = .webhook(name: name, target: nil, secret: secret)
            default: throw ConfigValueError("a webhook posts into one conversation: give `group` or `user`, not both")
            }
        default:
            let cron = try c.decode(String.self, forKey: .schedule)
            let group = try c.decodeIfPresent(String.self, forKey: .group)
            let user = try c.decodeIfPresent(String.self, forKey: .user)
            let zone = try c.decodeIfPresent(String.self, forKey: .timezone)
            switch (group, user) {
            case (let guid?, nil): self = .schedule(cron: cron, target: .group(guid), timezone: zone)
            case (nil, let uid?): self = .schedule(cron: cron, target: .user(uid), timezone: zone)
            default: throw ConfigValueError("a schedule posts into one conversation: give `group` or `user`")
            }
        }
    }
}

extension Trigger {
    /// Checks a reaction written in a bot file as the chat service checks one (1–64 bytes, no
    /// spaces or control characters), so a reaction no one can make is a located error at load.
    static func checkReaction(_ reaction: String) throws {
        do {
            try ReactionRules.checkText(reaction)
        } catch {
            let reason = error.params["reason"]?.description ?? error.message
            throw ConfigValueError("'\(reaction)' is no reaction: it \(reason)")
        }
    }
}

/// A reaction written in a bot file, checked where it is written: a bad one in a list is located
/// at its item.
struct WrittenReaction: Decodable {
    var text: String

    init(from decoder: any Decoder) throws {
        text = try decoder.singleValueContainer().decode(String.self)
        try Trigger.checkReaction(text)
    }
}

/// A list that may also be written as its one item.
struct OneOrMany<Element: Decodable>: Decodable {
    var values: [Element]

    init(from decoder: any Decoder) throws {
        if case .scalar? = decoder.configNode?.content {
            values = [try decoder.singleValueContainer().decode(Element.self)]
        } else {
            values = try decoder.singleValueContainer().decode([Element].self)
        }
    }
}

/// A list of strings that may also be written as one string.
typealias StringList = OneOrMany<String>
