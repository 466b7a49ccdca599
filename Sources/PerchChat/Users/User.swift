/// A user of the chat service. Bots are users with role `bot`.
public struct User: Sendable, Hashable, Codable {
    public var uid: String
    public var name: String
    public var role: String
    public var metadata: JSONValue?
    public var createdAt: Int64
    public var updatedAt: Int64

    public init(
        uid: String, name: String, role: String = User.defaultRole, metadata: JSONValue? = nil,
        createdAt: Int64 = 0, updatedAt: Int64 = 0
    ) {
        self.uid = uid
        self.name = name
        self.role = role
        self.metadata = metadata
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    public static let defaultRole = "default"
    public static let botRole = "bot"
    /// The identity of system actions: nobody can register it; bots granted `system: true` act as it.
    public static let system = "app_system"

    public var isBot: Bool { role == Self.botRole }
}

extension User {
    /// Whether `uid` is well formed: 1–100 characters of `[A-Za-z0-9_-]`.
    public static func isValidUID(_ uid: String) -> Bool {
        let bytes = uid.utf8
        guard (1...100).contains(bytes.count) else { return false }
        return bytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "-")
        }
    }

    /// Checks a uid a caller wants to register.
    /// - Throws: `ERR_BAD_REQUEST` for a malformed uid or the reserved `app_system`.
    public static func validateNewUID(_ uid: String, field: String = "uid") throws(ChatError) {
        guard isValidUID(uid) else { throw .badRequest(field, "must be 1–100 characters of A–Z, a–z, 0–9, _ and -") }
        guard uid != system else { throw .badRequest(field, "'app_system' is reserved") }
    }
}
