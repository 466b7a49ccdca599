import PerchChat

/// `!follow` / `!unfollow`: subscribe or unsubscribe the sender to a thread and answer with the
/// follow controls' copy (`strings` in config.yaml).
///
/// The thread is, in order: the message id given as argument (`!follow 42`; a reply's id, the thread
/// it is in); the message quoted by the command (a quote reply to a top-level message follows that
/// message's thread, replies or not); the thread the command was sent in. Success answers
/// `THREAD_SUBSCRIBED_TOAST` or `THREAD_UNSUBSCRIBED_TOAST` (which says notifications come back on
/// reply or mention); `ERR_MESSAGE_ID_NOT_FOUND` (the message is gone or never was) answers
/// `THREAD_NOT_FOUND`, `ERR_MESSAGE_NO_ACCESS` `THREAD_UNAVAILABLE`; any other failure
/// `THREAD_SUBSCRIPTION_FAILED`. The answer is the asker's alone: a direct message from the bot,
/// never a reply in the thread, which would tell everyone and (were it not quiet) notify and
/// subscribe the thread's author over someone else's choice. With `ui.threadSubscription.enabled:
/// false` or the bot's `thread_subscription: false` it answers nothing and makes no call.
///
/// Rules hand commands to it: `on: {command: follow}` → `- plugin: thread-follow`.
public struct ThreadFollowPlugin: BotPlugin {
    public static let name = "thread-follow"

    public var offersThreadSubscriptions: Bool { true }

    public static var configurationSchema: JSONValue? {
        .object([
            "type": .string("object"), "additionalProperties": .bool(false),
            "properties": .object([
                "follow": .object(["type": .string("string"), "description": .string("the command that subscribes")]),
                "unfollow": .object([
                    "type": .string("string"), "description": .string("the command that unsubscribes"),
                ]),
            ]),
        ])
    }

    public struct Configuration: Decodable, Sendable {
        /// `follow` (default `follow`): the command that subscribes.
        public var follow: String
        /// `unfollow` (default `unfollow`): the command that unsubscribes.
        public var unfollow: String

        enum CodingKeys: String, CodingKey { case follow, unfollow }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            follow = try c.decodeIfPresent(String.self, forKey: .follow) ?? "follow"
            unfollow = try c.decodeIfPresent(String.self, forKey: .unfollow) ?? "unfollow"
        }
    }

    let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    public func handle(_ context: BotContext) async throws {
        guard context.threadSubscriptionEnabled, let command = context.command, let message = context.message else {
            return
        }
        let subscribe: Bool
        switch command.name {
        case configuration.follow.lowercased(): subscribe = true
        case configuration.unfollow.lowercased(): subscribe = false
        default: return
        }
        let target = try await Self.target(of: message, arguments: command.args, context: context)
        guard let target else {
            try await context.directMessage(context.strings.text("THREAD_FOLLOW_USAGE"))
            return
        }
        let answer: String
        do {
            if subscribe {
                try await context.subscribe(message.sender, toThread: target)
            } else {
                try await context.unsubscribe(message.sender, fromThread: target)
            }
            answer = context.strings.text(subscribe ? "THREAD_SUBSCRIBED_TOAST" : "THREAD_UNSUBSCRIBED_TOAST")
        } catch  where error.code == .messageIdNotFound {
            answer = context.strings.text("THREAD_NOT_FOUND")
        } catch  where error.code == .messageNoAccess {
            answer = context.strings.text("THREAD_UNAVAILABLE")
        } catch {
            context.logger.warning("thread subscription failed: \(error)")
            answer = context.strings.text("THREAD_SUBSCRIPTION_FAILED")
        }
        try await context.directMessage(answer)
    }

    /// The thread a command points at, or nil when it points at none.
    static func target(of message: Message, arguments: String, context: BotContext) async throws -> Int64? {
        if let id = Int64(arguments.split(separator: " ").first ?? ""), id > 0 {
            // A reply's id means the thread it is in, as a quoted reply does: a reply has no thread
            // of its own. Read as the sender, whose subscription it is (a message they cannot see
            // is left to the subscription's own refusal).
            if let named = try? await context.service.message(id, as: message.sender), named.isReply {
                return named.parentMessageId
            }
            return id
        }
        if message.isQuoteReply {
            if let quoted = message.quotedMessage {
                return quoted.parentMessageId != 0 ? quoted.parentMessageId : quoted.id
            }
            return message.quotedMessageId
        }
        if message.isReply { return message.parentMessageId }
        return nil
    }
}
