import PerchLock

/// The host's event bus: what the host did, for the parts of the host beside the bots. Today one:
/// a thread subscription changed through the host (the Matrix backend subscribes a bot's own
/// account there, MSC4306). Plugins hear every subscription change, by any means, as an event of
/// the chat (`onThreadSubscribed`, ``BotPlugin/onThreadSubscriptionChanged(parentMessageId:uid:isSubscribed:)``).
/// Listeners are registered by id; registering a duplicate id replaces the earlier listener.
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
