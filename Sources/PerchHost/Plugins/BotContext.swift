import PerchChat
import PerchConfig
import PerchService
import Synchronization

/// What a rule's actions and a plugin's hooks act through: the event, the bot, and every action
/// of the rule vocabulary, made as the bot's user.
///
/// Every send gets a deterministic `muid` (bot, event sequence, action index), so after a crash the
/// host can handle the same event again with no duplicate message; pins, saves and subscriptions
/// are idempotent anyway.
public final class BotContext: Sendable {
    public let bot: BotIdentity
    public let event: ChatEvent
    /// The event's message (new, edited, deleted, pinned, ...), nil for group member events.
    public let message: Message?
    /// The thread's root when the message is a thread reply.
    public let parent: Message?
    /// The sender's user, when known: on a reaction, whoever reacted; on a member event, the member.
    public let sender: User?
    /// Who edited, deleted, pinned or unpinned the message, when known (``ChatEvent/actor``'s user;
    /// the bot behind a pin as `app_system`).
    public let actor: User?
    /// Named captures of `text_matches`, and `args` for commands.
    public let captures: [String: String]
    public let strings: StringTable
    public let logger: HostLogger
    public let storage: PluginStorage
    /// The command of a command message (`!follow 42` → `("follow", "42")`).
    public let command: (name: String, args: String)?
    /// Whether thread-subscription commands and controls are on for this bot (the gate
    /// `ui.threadSubscription.enabled` ANDed with the bot's `thread_subscription`). Closed, a plugin
    /// must not offer them.
    public let threadSubscriptionEnabled: Bool
    /// The JSON body of a webhook trigger.
    public let webhook: JSONValue?
    /// The bot's gate to the chat service: rate limits, muids, the loop guard, send observers.
    let actions: BotActions
    /// Shared by every context of one event, so each send of the event gets its own index.
    private let numbering: SendCounter
    private let muidPrefix: String

    init(
        bot: BotIdentity, event: ChatEvent, message: Message?, parent: Message?, sender: User?, actor: User? = nil,
        captures: [String: String], strings: StringTable, logger: HostLogger, actions: BotActions,
        command: (name: String, args: String)? = nil, threadSubscriptionEnabled: Bool = true, webhook: JSONValue? = nil,
        muidPrefix: String? = nil, numbering: SendCounter = SendCounter()
    ) {
        self.numbering = numbering
        self.command = command
        self.threadSubscriptionEnabled = threadSubscriptionEnabled
        self.webhook = webhook
        self.muidPrefix = muidPrefix ?? "perch:\(bot.name):\(event.seq)"
        self.bot = bot
        self.event = event
        self.message = message
        self.parent = parent
        self.sender = sender
        self.actor = actor
        self.captures = captures
        self.strings = strings
        self.logger = logger
        self.actions = actions
        self.storage = PluginStorage(service: actions.service, bot: bot.name)
    }

    /// The chat service, for what the actions below do not cover (as the bot's user).
    public var service: ChatService { actions.service }

    func nextMuid() -> String {
        let index = numbering.next()
        return "\(muidPrefix):\(index)"
    }

    /// The receiver that answers the message: its group, or the other side of a one-on-one; for a
    /// group member event, the group.
    var replyReceiver: Receiver? {
        guard let message else { return event.member.map { .group($0.guid) } }
        switch message.receiver {
        case .group: return message.receiver
        case .user(let uid): return .user(message.sender == bot.uid ? uid : message.sender)
        }
    }

    /// Sends `text` in the message's conversation, at the top level.
    @discardableResult
    public func reply(_ text: String, notify: Bool = false) async throws(ChatError) -> Message {
        try await actions.send(try draft(.reply, text, notify: notify), context: self)
    }

    /// Sends `text` in the message's thread (the root's, when the message is itself a reply).
    @discardableResult
    public func replyInThread(_ text: String, notify: Bool = false) async throws(ChatError) -> Message {
        try await actions.send(try draft(.replyInThread, text, notify: notify), context: self)
    }

    /// Quote-replies to the message (in its thread when it is a thread reply). A quote reply cannot
    /// be quoted (1-depth): then this sends a plain reply and logs why.
    @discardableResult
    public func quoteReply(_ text: String, notify: Bool = false) async throws(ChatError) -> Message {
        try await actions.send(try draft(.quoteReply, text, notify: notify), context: self)
    }

    /// Sends `text` one-on-one to the sender (on a reaction, whoever reacted).
    @discardableResult
    public func directMessage(_ text: String, notify: Bool = false) async throws(ChatError) -> Message {
        try await actions.send(try draft(.directMessage, text, notify: notify), context: self)
    }

    /// The kinds of message a bot sends in answer to an event.
    enum Answer { case reply, replyInThread, quoteReply, directMessage }

    /// The draft of an answer to this event; `notify`: it notifies people as a person's message
    /// does (a bot's answers are quiet otherwise).
    func draft(_ answer: Answer, _ text: String, notify: Bool = false) throws(ChatError) -> MessageDraft {
        var draft = try quietDraft(answer, text)
        draft.notify = notify
        return draft
    }

    private func quietDraft(_ answer: Answer, _ text: String) throws(ChatError) -> MessageDraft {
        switch answer {
        case .directMessage:
            guard let sender = event.senderUid else {
                throw .badRequest("message", "this event has no sender")
            }
            return MessageDraft(to: .user(sender), text: text)
        case .reply:
            guard let receiver = replyReceiver else {
                throw .badRequest("message", "this event has no message to reply to")
            }
            return MessageDraft(to: receiver, text: text)
        case .replyInThread, .quoteReply:
            guard let receiver = replyReceiver, let message else {
                throw .badRequest("message", "this event has no message to reply to")
            }
            if answer == .replyInThread {
                return MessageDraft(to: receiver, text: text, parentMessageId: ThreadRules.threadRoot(of: message))
            }
            if message.isQuoteReply {
                logger.info(
                    "quote reply fell back to a plain reply: message \(message.id) is itself a quote reply (1-depth)")
                return MessageDraft(to: receiver, text: text, parentMessageId: message.parentMessageId)
            }
            return MessageDraft(
                to: receiver, text: text, parentMessageId: message.parentMessageId, quotedMessageId: message.id)
        }
    }

    /// Sends any message as the bot.
    @discardableResult
    public func send(_ draft: MessageDraft) async throws(ChatError) -> Message {
        try await actions.send(draft, context: self)
    }

    /// Pins the message, as the bot or, for bots with `system: true`, as `app_system`. With
    /// `whenFull: .unpinOldest` a conversation at its pin limit makes room by unpinning the oldest
    /// pins made the same way (``ChatService/pin(_:as:whenFull:)``).
    @discardableResult
    public func pin(asSystem: Bool = false, whenFull: PinOverflow = .refuse) async throws(ChatError) -> Message {
        guard let message else { throw .badRequest("message", "this event has no message") }
        guard !asSystem || bot.system else {
            throw ChatError(.permissionDenied, ["reason": "only bots with system: true pin as app_system"])
        }
        return try await actions.act(context: self) { service in
            try await service.pin(
                message.id, as: asSystem ? User.system : self.bot.uid, by: self.bot.uid, whenFull: whenFull)
        }
    }

    @discardableResult
    public func unpin() async throws(ChatError) -> Message {
        guard let message else { throw .badRequest("message", "this event has no message") }
        return try await actions.act(context: self) { service in try await service.unpin(message.id, as: self.bot.uid) }
    }

    /// Saves the message for the bot's user.
    @discardableResult
    public func save() async throws(ChatError) -> Message {
        guard let message else { throw .badRequest("message", "this event has no message") }
        return try await actions.act(context: self) { service in
            try await service.save(message.id, as: self.bot.uid, session: self.bot.session)
        }
    }

    /// Reacts to the message as the bot (`addReaction`); reacting again so changes nothing.
    @discardableResult
    public func react(_ reaction: String) async throws(ChatError) -> Message {
        guard let message else { throw .badRequest("message", "this event has no message") }
        return try await actions.act(context: self) { service in
            try await service.addReaction(reaction, to: message.id, as: self.bot.uid)
        }
    }

    /// Takes back the bot's reaction to the message (`removeReaction`).
    @discardableResult
    public func unreact(_ reaction: String) async throws(ChatError) -> Message {
        guard let message else { throw .badRequest("message", "this event has no message") }
        return try await actions.act(context: self) { service in
            try await service.removeReaction(reaction, from: message.id, as: self.bot.uid)
        }
    }

    /// Subscribes `uid` (default: the sender) to the thread of `parentMessageId` (default: the
    /// message's thread). On success the host's event bus hears `threadSubscriptionChanged`.
    /// - Throws: `ERR_PERMISSION_DENIED` for someone other than the sender or the bot, unless the
    ///   bot file says `allow_subscribing_others: true`; else what the service throws.
    @discardableResult
    public func subscribe(_ uid: String? = nil, toThread parentMessageId: Int64? = nil) async throws(ChatError)
        -> Message
    {
        try await changeSubscription(uid, parentMessageId, subscribe: true)
    }

    /// Unsubscribes `uid` (default: the sender) from the thread.
    @discardableResult
    public func unsubscribe(_ uid: String? = nil, fromThread parentMessageId: Int64? = nil) async throws(ChatError)
        -> Message
    {
        try await changeSubscription(uid, parentMessageId, subscribe: false)
    }

    private func changeSubscription(_ uid: String?, _ parentMessageId: Int64?, subscribe: Bool) async throws(ChatError)
        -> Message
    {
        guard let who = uid ?? event.senderUid else { throw .badRequest("uid", "nobody to subscribe") }
        if subscribe, who != event.senderUid, who != bot.uid, !actions.allowsSubscribingOthers {
            throw ChatError(
                .permissionDenied,
                [
                    "uid": .string(who),
                    "reason": "subscribing someone other than the sender needs allow_subscribing_others: true",
                ])
        }
        guard let root = parentMessageId ?? message.map(ThreadRules.threadRoot) else {
            throw .badRequest("parentMessageId", "no thread")
        }
        // A thread named by id must be one the bot can see: a bot acts in its own conversations
        // only, whoever it subscribes.
        if let parentMessageId, parentMessageId != message.map(ThreadRules.threadRoot) {
            _ = try await actions.service.message(parentMessageId, as: bot.uid)
        }
        let result = try await actions.act(context: self) { service in
            subscribe
                ? try await service.subscribeToThread(root, as: who)
                : try await service.unsubscribeFromThread(root, as: who)
        }
        await actions.bus.publish(.threadSubscriptionChanged(parentMessageId: root, uid: who, isSubscribed: subscribe))
        return result
    }

    /// Deletes the message (the bot needs moderator scope in a group). Deleting a message that is
    /// already gone counts as done.
    public func delete() async throws(ChatError) {
        guard let message else { throw .badRequest("message", "this event has no message") }
        do {
            _ = try await actions.act(context: self, limited: false) { service in
                try await service.delete(message.id, as: self.bot.uid)
            }
        } catch {
            guard error.code == .messageIdNotFound else { throw error }
        }
    }

    /// Kicks the sender (on a reaction, whoever reacted; on `member_joined`, the member) from the group.
    public func kick() async throws(ChatError) {
        let (uid, guid) = try memberAtStake()
        do {
            try await actions.act(context: self, limited: false) { service in
                try await service.kick(uid, from: guid, by: self.bot.uid)
            }
        } catch {
            guard error.code == .notAMember else { throw error }
        }
    }

    /// Bans the sender (on a reaction, whoever reacted; on `member_joined`, the member) from the group.
    public func ban() async throws(ChatError) {
        let (uid, guid) = try memberAtStake()
        try await actions.act(context: self, limited: false) { service in
            try await service.ban(uid, from: guid, by: self.bot.uid)
        }
    }

    /// Whom a kick or a ban removes, from which group: a group message's sender (whoever reacted,
    /// on a reaction), or the member of a group member event (`member_joined`).
    func memberAtStake() throws(ChatError) -> (uid: String, guid: String) {
        if let message {
            guard message.receiverType == .group else { throw .badRequest("message", "not a group message") }
            return (event.senderUid ?? message.sender, message.receiverUid)
        }
        guard let member = event.member else { throw .badRequest("message", "this event has no message or member") }
        return (member.uid, member.guid)
    }
}

/// Who a bot is.
public struct BotIdentity: Sendable, Hashable {
    public var name: String
    public var uid: String
    public var system: Bool

    /// The session the bot reads its events as, and the name its cursor is saved under: the
    /// bot's own saves leave it out, as a client's leave out the session that made them, while the
    /// bot user's saves from elsewhere (the web chat, as the bot) reach it.
    public var session: String { Self.session(of: name) }

    public static func session(of name: String) -> String { "bot:\(name)" }
}

/// Numbers the sends made while handling one event (for their deterministic muids). An atomic
/// held in the object itself: a lock was a second allocation for every event a bot handled.
final class SendCounter: Sendable {
    private let count = Atomic<Int>(0)

    func next() -> Int { count.wrappingAdd(1, ordering: .relaxed).newValue }
}
