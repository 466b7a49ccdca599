import PerchChat

/// The plugins' storage (docs/plugins.md, "Storage"): JSON values per bot and namespace, with an
/// optional expiry, an atomic increment and compare-and-set. A string is stored as its plain text
/// (so the string API, ``pluginValue(bot:key:)``, reads what the JSON one wrote, and the other way
/// round); other JSON as its text, marked so. An expired value reads as absent and is replaced by
/// the next write of its key.
extension ChatService {
    /// The value of `key` in `store` (a bot's name, or `bot/namespace`); nil when there is none
    /// or it expired.
    public func storedValue(_ key: String, in store: String) async throws(ChatError) -> JSONValue? {
        let now = clock.now()
        return try await reading { tx in try Self.current(tx, store, key, at: now) }
    }

    /// Sets (or with nil removes) the value of `key`, expiring `expiresIn` seconds from now when
    /// given.
    /// - Throws: `ERR_BAD_REQUEST` for a key over 256 bytes, a value over 1 MiB, an expiry not
    ///   above 0.
    public func setStoredValue(_ value: JSONValue?, for key: String, in store: String, expiresIn: Int64? = nil)
        async throws(ChatError)
    {
        let (now, stored) = (clock.now(), try Self.checked(key, value, expiresIn))
        try await writing { tx in
            try Self.write(tx, store, key, stored, expiresAt: expiresIn.map { now + $0 } ?? 0)
        }
    }

    /// Adds `amount` to the integer value of `key` (absent or expired: 0) in one transaction, so two
    /// increments at once both count; returns the new value. Keeps the key's expiry.
    /// - Throws: `ERR_BAD_REQUEST` when the value is not an integer.
    public func incrementStoredValue(_ key: String, in store: String, by amount: Int64 = 1) async throws(ChatError)
        -> Int64
    {
        _ = try Self.checked(key, nil, nil)
        let now = clock.now()
        return try await writing { tx in
            let stored = try tx.pluginEntry(bot: store, key: key)
            let live = stored.flatMap { $0.hasExpired(at: now) ? nil : $0 }
            var number: Int64 = 0
            if let live {
                switch Self.decode(live) {
                case .number(let value) where value == value.rounded() && abs(value) < 9e15: number = Int64(value)
                case .string(let text) where Int64(text) != nil: number = Int64(text)!
                default: throw ChatError.badRequest("key", "the value of '\(key)' is not an integer")
                }
            }
            let (sum, overflow) = number.addingReportingOverflow(amount)
            guard !overflow, abs(sum) < 9_000_000_000_000_000 else {
                throw ChatError.badRequest("amount", "the sum is out of range")
            }
            try tx.setPluginEntry(
                bot: store, key: key, text: String(sum), isJSON: true, expiresAt: live?.expiresAt ?? 0)
            return sum
        }
    }

    /// Sets `key` to `new` (nil: removes it) only when its value is `expected` now (nil: absent or
    /// expired); returns whether it did. Keeps no expiry.
    public func compareAndSetStoredValue(
        _ key: String, in store: String, expected: JSONValue?, new: JSONValue?
    ) async throws(ChatError) -> Bool {
        let (now, stored) = (clock.now(), try Self.checked(key, new, nil))
        return try await writing { tx in
            guard try Self.current(tx, store, key, at: now) == expected else { return false }
            try Self.write(tx, store, key, stored, expiresAt: 0)
            return true
        }
    }

    /// The live values of `store` whose keys start with `prefix`, in key order (at most `limit`).
    public func storedValues(in store: String, prefix: String = "", limit: Int = 1000) async throws(ChatError)
        -> [(key: String, value: JSONValue, expiresAt: Int64)]
    {
        let now = clock.now()
        return try await reading { tx in
            try tx.pluginEntries(bot: store, prefix: prefix, limit: limit).filter { !$0.hasExpired(at: now) }.map {
                ($0.key, Self.decode($0), $0.expiresAt)
            }
        }
    }

    /// Removes the values of `store` whose keys start with `prefix` (all for ""); returns how many.
    public func clearStoredValues(in store: String, prefix: String = "") async throws(ChatError) -> Int {
        try await writing { tx in try tx.clearPluginValues(bot: store, prefix: prefix) }
    }

    /// Every store that holds a value: bots' names, `bot/namespace`, and the backends' own (`~matrix`).
    public func pluginStores() async throws(ChatError) -> [String] {
        try await reading { tx in try tx.pluginStores() }
    }

    static func current(_ tx: any ChatReadTransaction, _ store: String, _ key: String, at now: Int64) throws
        -> JSONValue?
    {
        guard let stored = try tx.pluginEntry(bot: store, key: key), !stored.hasExpired(at: now) else { return nil }
        return decode(stored)
    }

    static func write(
        _ tx: any ChatWriteTransaction, _ store: String, _ key: String, _ stored: (text: String, isJSON: Bool)?,
        expiresAt: Int64
    ) throws {
        if let stored {
            try tx.setPluginEntry(bot: store, key: key, text: stored.text, isJSON: stored.isJSON, expiresAt: expiresAt)
        } else {
            try tx.setPluginValue(bot: store, key: key, value: nil)
        }
    }

    /// A stored value as JSON: JSON as written, plain text as a string.
    static func decode(_ stored: StoredPluginValue) -> JSONValue {
        guard stored.isJSON, let value = try? JSONValue(parsing: stored.text) else {
            return .string(stored.text)
        }
        return value
    }

    /// How `value` is stored (nil for none): a string as its text, other JSON as JSON; after the
    /// limits' checks.
    static func checked(_ key: String, _ value: JSONValue?, _ expiresIn: Int64?) throws(ChatError)
        -> (text: String, isJSON: Bool)?
    {
        guard !key.isEmpty, key.utf8.count <= 256 else { throw .badRequest("key", "1 to 256 bytes") }
        if let expiresIn, expiresIn <= 0 { throw .badRequest("expiresIn", "seconds, above 0") }
        guard let value else { return nil }
        var stored = (text: "", isJSON: true)
        if case .string(let text) = value {
            stored = (text, false)
        } else {
            var writer = JSONWriter()
            writer.value(value)
            stored.text = writer.output
        }
        guard stored.text.utf8.count <= 1 << 20 else { throw .badRequest("value", "at most 1 MiB") }
        return stored
    }
}
