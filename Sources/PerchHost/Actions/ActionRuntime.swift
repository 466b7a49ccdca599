import Foundation
import PerchChat
import PerchLock
import PerchService

/// Where every outgoing action of one bot goes: rate limits, loop-guard metadata, muids, metrics.
final class ActionRuntime: Sendable {
    let service: ChatService
    let bus: HostEventBus
    let metrics: HostMetrics
    let botName: String
    let botLimiter: TokenBucket
    let conversationLimiters: ConversationBuckets
    let now: @Sendable () -> Double
    let outbound: (@Sendable (String, Message) -> Void)?
    let leaving: (@Sendable (String, MessageDraft) -> Void)?
    /// `perch_actions_total{action="send"}` of this bot (every reply adds to it).
    private let sends: HostMetrics.Counter

    init(
        service: ChatService, bus: HostEventBus, metrics: HostMetrics, botName: String, perMinute: Int, burst: Int,
        perConversationPerMinute: Int, now: @escaping @Sendable () -> Double,
        outbound: (@Sendable (String, Message) -> Void)? = nil,
        leaving: (@Sendable (String, MessageDraft) -> Void)? = nil
    ) {
        self.outbound = outbound
        self.leaving = leaving
        self.service = service
        self.bus = bus
        self.metrics = metrics
        self.botName = botName
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

    func send(_ draft: MessageDraft, context: BotContext) async throws(ChatError) -> Message {
        let sent = try await service.send(try prepare(draft, context: context), as: context.bot.uid)
        delivered(sent)
        return sent
    }

    /// Queues a send for the store's writer now (in call order) and answers a wait for its commit:
    /// a bot's replies to a run of events share commits and keep their order.
    func queue(_ draft: MessageDraft, context: BotContext, callerGoesOn: Bool = false) throws(ChatError)
        -> @Sendable () async throws(ChatError)
        -> Message
    {
        let pending = try service.queueSend(
            try prepare(draft, context: context), as: context.bot.uid, callerGoesOn: callerGoesOn)
        // Counted and tapped at its commit, not when the bot next waits for its queued sends.
        pending.whenSent { self.delivered($0) }
        return { () async throws(ChatError) -> Message in try await pending.message }
    }

    /// The draft as the bot sends it: a deterministic muid, the loop guard's hop count, after the
    /// rate limits admit it. It leaves the bot here: the `leaving` tap sees it.
    private func prepare(_ draft: MessageDraft, context: BotContext) throws(ChatError) -> MessageDraft {
        var draft = draft
        if draft.muid.isEmpty { draft.muid = context.nextMuid() }
        draft.metadata = Self.withHops(draft.metadata, hops: LoopGuard.outgoingHops(for: context))
        try admit(conversation: draft.receiver.conversationId(sender: context.bot.uid))
        leaving?(botName, draft)
        return draft
    }

    private func delivered(_ sent: Message) {
        sends.add()
        outbound?(botName, sent)
    }

    /// Runs an action other than a send, after the rate limits admit it (`limited`). Moderation
    /// (delete, kick, ban) is not limited: each acts once on what a person did, so it cannot loop,
    /// and a raid of spam is when a moderator must keep up (at 30 a minute in a room, the
    /// default, most of a raid stayed).
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

    static func withHops(_ metadata: JSONValue?, hops: Int) -> JSONValue {
        var object: [String: JSONValue] = [:]
        if case .object(let existing)? = metadata { object = existing }
        object["perch"] = .object(["hops": .number(Double(hops))])
        return .object(object)
    }
}

/// Cuts chains of bots answering bots: every bot message carries `metadata.perch.hops`.
enum LoopGuard {
    /// The most hops a message's metadata is taken to record: anyone may write any number there.
    static let recordedCeiling = 1_000_000

    /// How many bot hops led to `message`: its recorded count (a fraction rounded down, held to
    /// 0...``recordedCeiling``), 1 for a bot message without one, 0 for a person's.
    static func hops(of message: Message?, senderIsBot: Bool) -> Int {
        guard let message else { return 0 }
        if case .number(let hops)? = message.metadata?["perch"]?["hops"] {
            guard !hops.isNaN else { return 0 }
            return Int(min(max(hops, 0), Double(recordedCeiling)).rounded(.down))
        }
        return senderIsBot ? 1 : 0
    }

    static func outgoingHops(for context: BotContext) -> Int {
        hops(of: context.message, senderIsBot: context.sender?.isBot ?? false) + 1
    }
}

/// A token bucket: `burst` actions at once, refilled at `perMinute`.
final class TokenBucket: Sendable {
    private let state: Lock<(tokens: Double, at: Double?)>
    let perSecond: Double
    let capacity: Double

    init(perMinute: Int, burst: Int) {
        perSecond = Double(perMinute) / 60
        capacity = Double(max(1, burst))
        state = Lock((Double(max(1, burst)), nil))
    }

    func take(at time: Double) -> Bool {
        state.withLock { state in
            if let last = state.at { state.tokens = min(capacity, state.tokens + (time - last) * perSecond) }
            state.at = time
            guard state.tokens >= 1 else { return false }
            state.tokens -= 1
            return true
        }
    }

    /// Whether the bucket has refilled by `time`: then it is as a new one.
    func isFull(at time: Double) -> Bool {
        state.withLock { state in
            guard let last = state.at else { return true }
            return state.tokens + (time - last) * perSecond >= capacity
        }
    }
}

/// A bot's bucket for each conversation it acts in. A full bucket is the same as a new one, so once
/// `kept` are held the full ones are dropped: a bot answering thousands of one-on-one conversations
/// keeps only those it acted in lately.
final class ConversationBuckets: Sendable {
    static let kept = 4_096
    let perMinute: Int
    let burst: Int
    private let buckets = Lock<[String: TokenBucket]>([:])

    init(perMinute: Int, burst: Int) {
        self.perMinute = perMinute
        self.burst = burst
    }

    func bucket(for conversation: String, at time: Double) -> TokenBucket {
        buckets.withLock { buckets in
            if let bucket = buckets[conversation] { return bucket }
            if buckets.count >= Self.kept { buckets = buckets.filter { !$0.value.isFull(at: time) } }
            let bucket = TokenBucket(perMinute: perMinute, burst: burst)
            buckets[conversation] = bucket
            return bucket
        }
    }

    /// The buckets held (tests).
    var count: Int { buckets.withLock { $0.count } }
}

/// The host's event bus (seed 001's cross-surface event for plugins). Listeners are registered by
/// id; registering a duplicate id replaces the earlier listener.
public final class HostEventBus: Sendable {
    public enum Event: Sendable, Hashable {
        case threadSubscriptionChanged(parentMessageId: Int64, uid: String, isSubscribed: Bool)
    }

    private let listeners = Lock<[String: @Sendable (Event) async -> Void]>([:])

    public init() {}

    public func register(id: String, _ listener: @escaping @Sendable (Event) async -> Void) {
        listeners.withLock { $0[id] = listener }
    }

    public func unregister(id: String) { listeners.withLock { $0[id] = nil } }

    public var listenerIds: [String] { listeners.withLock { Array($0.keys).sorted() } }

    public func publish(_ event: Event) async {
        let all = listeners.withLock { Array($0.values) }
        for listener in all { await listener(event) }
    }
}
