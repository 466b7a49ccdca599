/// One plugin value as stored: its key, its text, whether the text is JSON, and when it expires
/// (epoch seconds; 0: never).
public struct StoredPluginValue: Sendable, Hashable {
    public var key: String
    public var text: String
    public var isJSON: Bool
    public var expiresAt: Int64

    public init(key: String, text: String, isJSON: Bool, expiresAt: Int64) {
        self.key = key
        self.text = text
        self.isJSON = isJSON
        self.expiresAt = expiresAt
    }

    public func hasExpired(at now: Int64) -> Bool { expiresAt != 0 && expiresAt <= now }
}
