import PerchChat
import PerchService

/// A bot's own key-value store, persisted in the chat database (docs/plugins.md, "Storage"): JSON
/// values with an optional expiry, an atomic increment, compare-and-set, listing by prefix, and
/// namespaces (``namespace(_:)``), so two plugins of one bot keep their keys apart.
public struct PluginStorage: Sendable {
    let service: ChatService
    /// The store's name: the bot's, or `bot/namespace`.
    public let store: String

    init(service: ChatService, bot: String) {
        self.service = service
        store = bot
    }

    /// The same bot's storage under `name` (`karma`, a plugin's name): its keys are apart from the
    /// bot's own and from every other namespace's.
    public func namespace(_ name: String) -> PluginStorage {
        PluginStorage(service: service, bot: store.split(separator: "/").first.map(String.init)! + "/" + name)
    }

    /// The value as text: a string's own text, any other JSON as its text; nil when absent or
    /// expired.
    public func value(for key: String) async throws(ChatError) -> String? {
        switch try await service.storedValue(key, in: store) {
        case nil: return nil
        case .string(let text)?: return text
        case let value?:
            var writer = JSONWriter()
            writer.value(value)
            return writer.output
        }
    }

    /// Sets (or with nil removes) a text value.
    public func set(_ value: String?, for key: String) async throws(ChatError) {
        try await service.setPluginValue(bot: store, key: key, value: value)
    }

    /// The JSON value; nil when absent or expired.
    public func json(for key: String) async throws(ChatError) -> JSONValue? {
        try await service.storedValue(key, in: store)
    }

    /// Sets (or with nil removes) a JSON value, expiring after `expiresIn` seconds when given.
    public func set(json value: JSONValue?, for key: String, expiresIn: Int64? = nil) async throws(ChatError) {
        try await service.setStoredValue(value, for: key, in: store, expiresIn: expiresIn)
    }

    /// Adds `amount` to the integer at `key` (0 when absent) atomically; returns the new value.
    @discardableResult
    public func increment(_ key: String, by amount: Int64 = 1) async throws(ChatError) -> Int64 {
        try await service.incrementStoredValue(key, in: store, by: amount)
    }

    /// Sets `key` to `new` only when it holds `expected` (nil: absent); returns whether it did.
    public func compareAndSet(_ key: String, expected: JSONValue?, new: JSONValue?) async throws(ChatError) -> Bool {
        try await service.compareAndSetStoredValue(key, in: store, expected: expected, new: new)
    }

    /// The live keys and values whose keys start with `prefix`, in key order.
    public func values(prefix: String = "") async throws(ChatError) -> [(key: String, value: JSONValue)] {
        try await service.storedValues(in: store, prefix: prefix).map { ($0.key, $0.value) }
    }
}
