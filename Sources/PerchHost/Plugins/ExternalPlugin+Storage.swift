import PerchChat
import PerchService

extension ExternalPlugin {
    /// A plugin's `host.storage.<method>` call on its bot's storage (in `params.namespace`'s when
    /// given): `get {key}` → `{value}` (null when absent); `set {key, value, expiresIn}` (a null value
    /// removes the key; `expiresIn` in seconds); `increment {key, by}` → `{value}`; `compareAndSet
    /// {key, expected, new}` → `{set}` (a null `expected` means absent); `delete {key}`; `list
    /// {prefix}` → `{values: [{key, value}]}`.
    /// - Throws: ``PluginFailure`` for a missing key or an unknown method; what the storage throws.
    static func storageCall(_ method: String, _ params: JSONValue, _ bot: PluginStorage) async throws -> JSONValue {
        let storage = params["namespace"]?.stringValue.map(bot.namespace) ?? bot
        func key() throws -> String {
            guard let key = params["key"]?.stringValue else { throw PluginFailure(description: "key is required") }
            return key
        }
        func given(_ name: String) -> JSONValue? {
            guard let value = params[name], value != .null else { return nil }
            return value
        }
        switch method {
        case "get":
            return .object(["value": try await storage.json(for: try key()) ?? .null])
        case "set":
            var expiry: Int64?
            if case .number(let seconds)? = params["expiresIn"] { expiry = Int64(seconds) }
            try await storage.set(json: given("value"), for: try key(), expiresIn: expiry)
            return .object([:])
        case "increment":
            var amount: Int64 = 1
            if case .number(let by)? = params["by"] { amount = Int64(by) }
            return .object(["value": .number(Double(try await storage.increment(try key(), by: amount)))])
        case "compareAndSet":
            let set = try await storage.compareAndSet(try key(), expected: given("expected"), new: given("new"))
            return .object(["set": .bool(set)])
        case "delete":
            try await storage.set(json: nil, for: try key())
            return .object([:])
        case "list":
            let values = try await storage.values(prefix: params["prefix"]?.stringValue ?? "")
            return .object([
                "values": .array(values.map { .object(["key": .string($0.key), "value": $0.value]) })
            ])
        default:
            throw PluginFailure(description: "unknown method host.storage.\(method)")
        }
    }
}
