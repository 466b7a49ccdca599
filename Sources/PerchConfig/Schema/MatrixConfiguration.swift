/// `matrix`: the Matrix homeserver the bots live on when `backend: matrix` (docs/matrix.md).
///
/// Bot files stay as they are: a bot's `user.uid` names its account here, a group id names a room
/// here, and people are named by their Matrix ids (`@alice:example.org`).
public struct MatrixConfiguration: Decodable, Sendable {
    /// `homeserver` (required): the client-server API's base URL, `http://127.0.0.1:8008`.
    public var homeserver: String = ""
    /// `accounts`: each bot's `user.uid` → its account's access token. Write `${MATRIX_HELPER_TOKEN}`:
    /// a token is a password, and comes from the environment.
    public var accounts: [String: String] = [:]
    /// `rooms`: each group id the bot files use → the room's id (`!AbC:example.org`) or alias
    /// (`#general:example.org`).
    public var rooms: [String: String] = [:]
    /// `followDigestSeconds` (default 60, 1–86400): the replies to a followed thread that come within
    /// this many seconds of the first one reach the follower in one direct message.
    public var followDigestSeconds = 60
    /// `syncTimeoutSeconds` (default 30, 1–300): how long a `/sync` long-poll waits for events.
    public var syncTimeoutSeconds = 30

    public init() {}

    enum CodingKeys: String, CodingKey {
        case homeserver, accounts, rooms, followDigestSeconds, syncTimeoutSeconds
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        homeserver = try c.decodeIfPresent(String.self, forKey: .homeserver) ?? ""
        accounts = try c.decodeIfPresent([String: String].self, forKey: .accounts) ?? [:]
        rooms = try c.decodeIfPresent([String: String].self, forKey: .rooms) ?? [:]
        followDigestSeconds = try c.decodeIfPresent(Int.self, forKey: .followDigestSeconds) ?? 60
        syncTimeoutSeconds = try c.decodeIfPresent(Int.self, forKey: .syncTimeoutSeconds) ?? 30
    }

    /// Whether `text` is a Matrix user id: `@localpart:server`, 255 bytes at most, the localpart of
    /// the characters the spec allows (its historical ones too: a server may still have such users).
    public static func isUserID(_ text: String) -> Bool {
        guard text.utf8.count <= 255, text.hasPrefix("@"), let colon = text.firstIndex(of: ":") else { return false }
        let localpart = text[text.index(after: text.startIndex)..<colon]
        let server = text[text.index(after: colon)...]
        return !localpart.isEmpty && !server.isEmpty
            && localpart.unicodeScalars.allSatisfy { (0x21...0x7E).contains($0.value) && $0 != ":" }
            && !server.contains(where: \.isWhitespace)
    }

    /// Whether `text` names a room: an id (`!opaque:server`, or `!opaque` from room version 12
    /// on) or an alias (`#name:server`).
    public static func isRoomReference(_ text: String) -> Bool {
        guard text.count > 1, !text.contains(where: \.isWhitespace), let first = text.first else { return false }
        if first == "!" { return true }
        guard first == "#", let colon = text.firstIndex(of: ":") else { return false }
        return colon > text.index(after: text.startIndex) && text.index(after: colon) < text.endIndex
    }
}
