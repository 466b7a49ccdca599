/// The copy table: the thread-subscription controls' strings with CometChat's UI kit's default
/// copy (docs/configuration.md, "Strings"), and Perch's own, overridable and extensible in
/// `config.yaml` under `strings`, used by bot templates as `{strings.KEY}`.
public struct StringTable: Decodable, Sendable {
    /// The UI kit's keys with their default copy, and Perch's own.
    public static let defaults: [String: String] = [
        "THREAD_SUBSCRIBE": "Subscribe to thread",
        "THREAD_UNSUBSCRIBE": "Unsubscribe from thread",
        "THREAD_SUBSCRIBED": "Following",
        "THREAD_SUBSCRIBED_TOAST": "Subscribed. You'll be notified about new replies in this thread.",
        "THREAD_UNSUBSCRIBED_TOAST": "Unsubscribed. Notifications are off until you reply or are mentioned.",
        "THREAD_SUBSCRIPTION_FAILED": "Couldn't update. Please try again.",
        "THREAD_UNAVAILABLE": "You no longer have access to this thread.",
        // Perch's own, for the thread-follow bot.
        "THREAD_NOT_FOUND": "That thread does not exist.",
        "THREAD_FOLLOW_USAGE":
            "Send !follow in a thread, as a quote reply to a message, or as !follow <messageId>.",
        // Perch's own, a command refused by its rule's `allow`/`deny`; `{command}` is the command.
        "COMMAND_REFUSED": "You may not use {command} here.",
        // Perch's own, the first line of a bot's built-in `help` answer; `{name}` is the bot's name.
        "HELP_HEADING": "{name}'s commands:",
        // Perch's own, a command whose arguments do not fit its `usage`: what is wrong, and the
        // usage (`!remind <when:duration> <text:rest>`).
        "COMMAND_USAGE": "{problem}. Usage: {usage}",
        // Perch's own, the web chat's fixed labels; `{name}` is a person's name.
        "MESSAGE_COPY": "Copy",
        "MESSAGE_COPIED": "Copied",
        "MESSAGE_QUOTE_REPLY": "Reply",
        "MESSAGE_REPLY_IN_THREAD": "Reply in thread",
        "MESSAGE_EDIT": "Edit",
        "MESSAGE_DELETE": "Delete",
        "MESSAGE_DELETED": "This message was deleted",
        "MESSAGE_PIN": "Pin",
        "MESSAGE_UNPIN": "Unpin",
        "MESSAGE_SAVE": "Save",
        "MESSAGE_UNSAVE": "Unsave",
        "COMPOSER_REPLYING_TO": "Replying to {name}",
        "COMPOSER_EDITING": "Editing your message",
        "COMPOSER_SEND": "Send",
        "QUOTE_REPLIED_TO": "replied to {name}",
    ]

    public private(set) var entries: [String: String]
    /// Where each overridden or added key was written, for findings.
    public private(set) var written: [String] = []

    public init(overrides: [String: String] = [:]) {
        entries = Self.defaults.merging(overrides) { _, new in new }
        written = Array(overrides.keys)
    }

    public init(from decoder: any Decoder) throws {
        let overrides = try decoder.singleValueContainer().decode([String: String].self)
        self.init(overrides: overrides)
    }

    public subscript(key: String) -> String? { entries[key] }

    /// The text of `key`, or the key itself when the table lacks it (validation prevents that).
    public func text(_ key: String) -> String { entries[key] ?? key }
}
