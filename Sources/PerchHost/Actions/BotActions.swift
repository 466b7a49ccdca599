import PerchChat
import PerchService

/// The gate every action of one bot passes on its way to the chat service: the rate limits, the
/// loop guard's hop count, deterministic muids, the action metrics and the host's send observers.
///
/// A message leaves the bot in ``prepare(_:context:)`` (``BotHost/Options/willSend`` sees it) and
/// is sent once committed (``delivered(_:)``: ``BotHost/Options/didSend``). ``send(_:context:)``
/// does both around an awaited send; ``QueuedSends`` does both around a queued one.
final class BotActions: Sendable {
    let service: ChatService
    let bus: HostEventBus
    let metrics: HostMetrics
    let botName: String
    /// The bot file's `allow_subscribing_others`.
    let allowsSubscribingOthers: Bool
    let botLimiter: TokenBucket
    let conversationLimiters: ConversationBuckets
    let now: @Sendable () -> Double
    let willSend: (@Sendable (String, MessageDraft) -> Void)?
    let didSend: (@Sendable (String, Message) -> Void)?
    /// `perch_actions_total{action="send"}` of this bot (every reply adds to it).
    private let sends: HostMetrics.Counter

    init(
        service: ChatService, bus: HostEventBus, metrics: HostMetrics, botName: String, perMinute: Int, burst: Int,
        perConversationPerMinute: Int, now: @escaping @Sendable () -> Double, allowsSubscribingOthers: Bool = false,
        willSend: (@Sendable (String, MessageDraft) -> Void)? = nil,
        didSend: (@Sendable (String, Message) -> Void)? = nil
    ) {
        self.allowsSubscribingOthers = allowsSubscribingOthers
        self.service = service
        self.bus = bus
        self.metrics = metrics
        self.botName = botName
        self.willSend = willSend
        self.didSend = didSend
        sends = metrics.counter("perch_actions_total", ["bot": botName, "action": "send"])
        self.botLimiter = TokenBucket(perMinute: perMinute, burst: burst)
        self.conversationLimiters = ConversationBuckets(
            perMinute: perConversationPerMinute, burst: min(burst, max(1, perConversationPerMinute)))
        self.now = now
    }

    /// Takes a token from the bot's and the conversation's buckets.
    /// - Throws: `ERR_TOO_MANY_REQUESTS {retryAfter}` when either is empty.
    func admit(conversation: String?) throws(ChatError) {
        let time = now()
        let conversationBucket = conversation.map { conversationLimiters.bucket(for: $0, at: time) }
        guard botLimiter.take(at: time), conversationBucket?.take(at: time) ?? true else {
            metrics.increment("perch_rate_limited_actions_total", ["bot": botName])
            throw ChatError(.tooManyRequests, ["retryAfter": 1])
        }
    }

    /// Sends `draft` as the bot and waits for its commit.
    /// - Throws: `ERR_TOO_MANY_REQUESTS` from the rate limits, else what ``ChatService/send(_:as:session:)``
    ///   throws.
    func send(_ draft: MessageDraft, context: BotContext) async throws(ChatError) -> Message {
        let sent = try await service.send(try prepare(draft, context: context), as: context.bot.uid)
        delivered(sent)
        return sent
    }

    /// The draft as the bot sends it: a deterministic muid, the loop guard's hop count, after the
    /// rate limits admit it. The message leaves the bot here: ``willSend`` sees it, before the
    /// service checks and commits it.
    /// - Throws: `ERR_TOO_MANY_REQUESTS {retryAfter}` when a rate limit refuses it.
    func prepare(_ draft: MessageDraft, context: BotContext) throws(ChatError) -> MessageDraft {
        var draft = draft
        if draft.muid.isEmpty { draft.muid = context.nextMuid() }
        draft.metadata = Self.withHops(draft.metadata, hops: LoopGuard.outgoingHops(for: context))
        try admit(conversation: draft.receiver.conversationId(sender: context.bot.uid))
        willSend?(botName, draft)
        return draft
    }

    /// A message of the bot's committed: counted, and seen by ``didSend``. Called on the thread that
    /// committed it, so it must stay quick.
    func delivered(_ sent: Message) {
        sends.add()
        didSend?(botName, sent)
    }

    /// Runs an action other than a send, after the rate limits admit it (`limited`). Moderation
    /// (delete, kick, ban) is not limited: each acts once on what a person did, so it cannot loop,
    /// and a raid of spam is when a moderator must keep up (at the default 30 a minute in a room,
    /// most of a raid would stay).
    /// - Throws: `ERR_TOO_MANY_REQUESTS` from the rate limits, the body's ``ChatError``, or any other
    ///   error as `ERR_INTERNAL_ERROR`.
    func act<T: Sendable>(
        context: BotContext, limited: Bool = true, _ body: @Sendable (ChatService) async throws -> T
    ) async throws(ChatError) -> T {
        if limited { try admit(conversation: context.message?.conversationId) }
        do {
            let result = try await body(service)
            metrics.increment("perch_actions_total", ["bot": botName, "action": "other"])
            return result
        } catch let error as ChatError {
            throw error
        } catch {
            throw ChatError(.internalError, ["reason": .string("\(error)")])
        }
    }

    /// `metadata` with `perch.hops` set to `hops` (the loop guard's count), its other keys kept.
    static func withHops(_ metadata: JSONValue?, hops: Int) -> JSONValue {
        var object: [String: JSONValue] = [:]
        if case .object(let existing)? = metadata { object = existing }
        object["perch"] = .object(["hops": .number(Double(hops))])
        return .object(object)
    }
}
