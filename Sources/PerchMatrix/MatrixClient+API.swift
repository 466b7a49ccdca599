import Foundation
import PerchChat

/// The client-server API calls Perch makes, each named as the spec names it.
extension MatrixClient {
    private static func room(_ id: String) -> String { "/v3/rooms/\(segment(id))" }

    /// `GET /whoami`: the account's user id.
    public func whoami() async throws(MatrixError) -> String {
        let answer = try await call("GET", "/v3/account/whoami")
        guard let user = answer["user_id"]?.stringValue else {
            throw MatrixError(.badAnswer("no user_id"), call: "GET /v3/account/whoami")
        }
        return user
    }

    /// `GET /versions`: the spec versions and unstable features the server advertises.
    public func versions() async throws(MatrixError) -> (versions: [String], unstable: [String: Bool]) {
        let answer = try await call("GET", "/versions", authenticated: false)
        let versions = answer["versions"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let unstable = (answer["unstable_features"]?.objectValue ?? [:]).compactMapValues(\.boolValue)
        return (versions, unstable)
    }

    /// `GET /sync`: what happened since `since` (everything, when nil), waiting up to `timeout`
    /// for something to happen.
    public func sync(since: String?, timeout: Duration, filter: String) async throws(MatrixError) -> JSONValue {
        var query = [("timeout", String(timeout.components.seconds * 1000)), ("filter", filter)]
        if let since { query.append(("since", since)) }
        return try await call("GET", "/v3/sync", query: query, timeout: timeout + .seconds(30), lane: .polls)
    }

    /// `POST /user/{userId}/filter`: stores a sync filter for the account; answers its id, which
    /// each sync then names instead of sending the filter again.
    public func createFilter(_ filter: String, for user: String) async throws(MatrixError) -> String {
        let parsed = (try? JSONValue.parse(Data(filter.utf8))) ?? .object([:])
        let answer = try await call("POST", "/v3/user/\(Self.segment(user))/filter", body: parsed)
        return answer["filter_id"]?.stringValue ?? filter
    }

    /// `PUT /rooms/{roomId}/send/{eventType}/{txnId}`: sends an event; the same `txnId` again
    /// answers the first event's id and sends nothing.
    public func send(_ type: String, _ content: JSONValue, in room: String, transaction: String)
        async throws(MatrixError) -> String
    {
        let answer = try await call(
            "PUT", Self.room(room) + "/send/\(Self.segment(type))/\(Self.segment(transaction))", body: content)
        return answer["event_id"]?.stringValue ?? ""
    }

    /// `PUT /rooms/{roomId}/redact/{eventId}/{txnId}`.
    public func redact(_ event: String, in room: String, reason: String?, transaction: String)
        async throws(MatrixError)
    {
        _ = try await call(
            "PUT", Self.room(room) + "/redact/\(Self.segment(event))/\(Self.segment(transaction))",
            body: .object(["reason": reason.map(JSONValue.string)]))
    }

    /// `GET /rooms/{roomId}/state/{eventType}/{stateKey}`: the state event's content, nil when the
    /// room has none.
    public func state(_ type: String, key: String = "", in room: String) async throws(MatrixError) -> JSONValue? {
        do {
            return try await call("GET", Self.room(room) + "/state/\(Self.segment(type))/\(Self.segment(key))")
        } catch {
            if error.status == 404 { return nil }
            throw error
        }
    }

    /// `PUT /rooms/{roomId}/state/{eventType}/{stateKey}`.
    public func setState(_ type: String, key: String = "", _ content: JSONValue, in room: String)
        async throws(MatrixError) -> String
    {
        let answer = try await call(
            "PUT", Self.room(room) + "/state/\(Self.segment(type))/\(Self.segment(key))", body: content)
        return answer["event_id"]?.stringValue ?? ""
    }

    /// `GET /rooms/{roomId}/state`: every current state event of the room.
    public func roomState(_ room: String) async throws(MatrixError) -> [JSONValue] {
        try await call("GET", Self.room(room) + "/state").arrayValue ?? []
    }

    /// `GET /rooms/{roomId}/event/{eventId}`.
    public func event(_ id: String, in room: String) async throws(MatrixError) -> JSONValue {
        try await call("GET", Self.room(room) + "/event/\(Self.segment(id))")
    }

    /// `GET /rooms/{roomId}/messages`: a page of the timeline from `from`, backwards.
    public func messages(in room: String, from: String, limit: Int) async throws(MatrixError) -> JSONValue {
        try await call(
            "GET", Self.room(room) + "/messages", query: [("from", from), ("dir", "b"), ("limit", String(limit))])
    }

    /// `GET /directory/room/{roomAlias}`: the room an alias names.
    public func resolve(alias: String) async throws(MatrixError) -> String {
        let answer = try await call("GET", "/v3/directory/room/\(Self.segment(alias))")
        guard let room = answer["room_id"]?.stringValue else {
            throw MatrixError(.badAnswer("no room_id"), call: "GET /v3/directory/room/{roomAlias}")
        }
        return room
    }

    /// `GET /joined_rooms`.
    public func joinedRooms() async throws(MatrixError) -> [String] {
        try await call("GET", "/v3/joined_rooms")["joined_rooms"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// `POST /join/{roomIdOrAlias}`: joins (or accepts an invite); answers the room id.
    public func join(_ room: String) async throws(MatrixError) -> String {
        try await call("POST", "/v3/join/\(Self.segment(room))", body: .object([:]))["room_id"]?.stringValue ?? room
    }

    /// `POST /rooms/{roomId}/leave` (also declines an invite).
    public func leave(_ room: String, reason: String? = nil) async throws(MatrixError) {
        _ = try await call("POST", Self.room(room) + "/leave", body: .object(["reason": reason.map(JSONValue.string)]))
    }

    /// `POST /rooms/{roomId}/kick`, `/ban`, `/unban`.
    public func moderate(_ action: String, _ user: String, in room: String, reason: String?) async throws(MatrixError) {
        _ = try await call(
            "POST", Self.room(room) + "/\(action)",
            body: .object(["user_id": .string(user), "reason": reason.map(JSONValue.string)]))
    }

    /// `POST /createRoom` of a direct chat with `user` (invited), private and trusted as clients make
    /// them: answers its id.
    public func createDirectRoom(with user: String) async throws(MatrixError) -> String {
        let answer = try await call(
            "POST", "/v3/createRoom",
            body: .object([
                "is_direct": .bool(true), "invite": .array([.string(user)]), "preset": .string("trusted_private_chat"),
            ]))
        guard let room = answer["room_id"]?.stringValue else {
            throw MatrixError(.badAnswer("no room_id"), call: "POST /v3/createRoom")
        }
        return room
    }

    /// `PUT /user/{userId}/account_data/{type}`.
    public func setAccountData(_ type: String, _ content: JSONValue, for user: String) async throws(MatrixError) {
        _ = try await call("PUT", "/v3/user/\(Self.segment(user))/account_data/\(Self.segment(type))", body: content)
    }

    /// `GET /user/{userId}/account_data/{type}`, nil when there is none.
    public func accountData(_ type: String, for user: String) async throws(MatrixError) -> JSONValue? {
        do {
            return try await call("GET", "/v3/user/\(Self.segment(user))/account_data/\(Self.segment(type))")
        } catch {
            if error.status == 404 { return nil }
            throw error
        }
    }

    /// MSC4306's `PUT` (subscribe) or `DELETE` (unsubscribe) of the account's own subscription to a
    /// thread, on its unstable path.
    public func setThreadSubscription(_ subscribed: Bool, root: String, in room: String) async throws(MatrixError) {
        let path = "/unstable/io.element.msc4306/rooms/\(Self.segment(room))/thread/\(Self.segment(root))/subscription"
        _ = try await call(subscribed ? "PUT" : "DELETE", path, body: subscribed ? .object([:]) : nil)
    }

    /// The unstable feature MSC4306 is advertised under.
    public static let threadSubscriptionsFeature = "org.matrix.msc4306"
}
