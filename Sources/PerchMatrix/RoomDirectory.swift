import PerchLock

/// The rooms the backend follows, shared by every account's sync and every relay: which group or
/// direct chat each room is, each room's state, and each mapped group's room.
final class RoomDirectory: Sendable {
    private struct Rooms {
        var places: [String: RoomPlace] = [:]
        var roomsByGroup: [String: String] = [:]
        var directRooms: [String: String] = [:]
        var states: [String: RoomState] = [:]
    }

    private let rooms = Lock(Rooms())

    /// Maps `room` as group `guid`.
    func map(_ room: String, to guid: String) {
        rooms.withLock {
            $0.places[room] = .group(guid)
            $0.roomsByGroup[guid] = room
        }
    }

    /// Records `room` as the direct chat of `bot` (a uid) with `person` (a Matrix id).
    func mapDirect(_ room: String, bot: String, person: String) {
        rooms.withLock {
            $0.places[room] = .direct(bot: bot, person: person)
            $0.directRooms[Self.directKey(bot, person)] = room
        }
    }

    static func directKey(_ bot: String, _ person: String) -> String { bot + "\u{1F}" + person }

    func place(of room: String) -> RoomPlace? { rooms.withLock { $0.places[room] } }

    func room(ofGroup guid: String) -> String? { rooms.withLock { $0.roomsByGroup[guid] } }

    func directRoom(bot: String, person: String) -> String? {
        rooms.withLock { $0.directRooms[Self.directKey(bot, person)] }
    }

    /// The mapped groups' rooms, by group id.
    var groupRooms: [String: String] { rooms.withLock { $0.roomsByGroup } }

    func state(of room: String) -> RoomState { rooms.withLock { $0.states[room] ?? RoomState() } }

    /// Runs `body` on a room's state, under the lock (it must not wait).
    func withState<T>(of room: String, _ body: (inout RoomState) -> T) -> T {
        rooms.withLock { body(&$0.states[room, default: RoomState()]) }
    }
}
