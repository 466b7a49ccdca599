import PerchLock

/// The host's event bus: events that no chat listener carries, for plugins. Today one: a thread
/// subscription changed through the host, so a plugin's own follow control stays in step with the
/// `!follow` command and the web chat's bell (docs/chat-model.md, "Thread subscriptions").
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
