import PerchChat

/// What Perch keeps of a room's state: who created it, its power levels, its members and their
/// names, its pinned events, whether it is encrypted. Built from `GET /rooms/{roomId}/state` at
/// start and kept up to date from the state events each sync brings.
struct RoomState: Sendable {
    var creators: [String] = []
    var name = ""
    var joinRule = "invite"
    var powerLevels: JSONValue = .object([:])
    /// Joined members and their display names.
    var members: [String: String] = [:]
    var banned: Set<String> = []
    var pinned: [String] = []
    var encrypted = false

    /// Applies one state event (from the room's state, or a sync).
    mutating func apply(_ event: MatrixEvent) {
        guard let key = event.stateKey else { return }
        switch event.type {
        case "m.room.create":
            creators =
                [event.sender] + (event.content["additional_creators"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        case "m.room.name": name = event.content["name"]?.stringValue ?? ""
        case "m.room.join_rules": joinRule = event.content["join_rule"]?.stringValue ?? "invite"
        case "m.room.power_levels": powerLevels = event.content
        case "m.room.pinned_events": pinned = event.content["pinned"]?.arrayValue?.compactMap(\.stringValue) ?? []
        case "m.room.encryption": encrypted = true
        case "m.room.member":
            switch event.content["membership"]?.stringValue {
            case "join":
                members[key] = event.content["displayname"]?.stringValue ?? members[key] ?? ""
                banned.remove(key)
            case "ban":
                members[key] = nil
                banned.insert(key)
            default:
                members[key] = nil
                banned.remove(key)
            }
        default: break
        }
    }

    /// A user's power level: theirs, or the room's default.
    func level(of user: String) -> Int64 {
        powerLevels.at("users", user)?.intValue ?? powerLevels["users_default"]?.intValue ?? 0
    }

    /// The level an action needs: `kick`, `ban`, `redact` (others' events), or sending state event
    /// `type` (`m.room.pinned_events`).
    func levelNeeded(for action: String) -> Int64 {
        switch action {
        case "kick", "ban", "redact": return powerLevels[action]?.intValue ?? 50
        default: return powerLevels.at("events", action)?.intValue ?? powerLevels["state_default"]?.intValue ?? 50
        }
    }

    /// Whether `user` may do `action` (``levelNeeded(for:)``): a creator may do anything.
    func allows(_ user: String, _ action: String) -> Bool {
        creators.contains(user) || level(of: user) >= levelNeeded(for: action)
    }

    /// A user's scope, as Perch's rules read it: a creator owns the room; 100 and more is an
    /// admin, 50 and more a moderator, below a participant.
    func scope(of user: String) -> GroupMemberScope {
        if creators.contains(user) { return .owner }
        let level = level(of: user)
        if level >= 100 { return .admin }
        if level >= 50 { return .moderator }
        return .participant
    }

    /// The room as a group's type: public when anyone may join.
    var groupType: GroupType { joinRule == "public" ? .public : .private }
}

/// A Matrix event as the translation reads it.
struct MatrixEvent: Sendable {
    var id: String
    var type: String
    var sender: String
    var stateKey: String?
    var content: JSONValue
    /// `unsigned.transaction_id`: set on the sender's own events sent with this access token.
    var transaction: String?
    /// `unsigned.prev_content`, a state event's content before it.
    var previous: JSONValue?
    var redacts: String?
    /// `origin_server_ts`, epoch milliseconds.
    var timestamp: Int64

    init?(_ json: JSONValue) {
        guard let id = json["event_id"]?.stringValue, let type = json["type"]?.stringValue,
            let sender = json["sender"]?.stringValue
        else { return nil }
        self.id = id
        self.type = type
        self.sender = sender
        stateKey = json["state_key"]?.stringValue
        content = json["content"] ?? .object([:])
        transaction = json.at("unsigned", "transaction_id")?.stringValue
        previous = json.at("unsigned", "prev_content")
        redacts = json["redacts"]?.stringValue ?? content["redacts"]?.stringValue
        timestamp = json["origin_server_ts"]?.intValue ?? 0
    }
}
