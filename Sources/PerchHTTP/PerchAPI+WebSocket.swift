import Foundation
import PerchChat
import PerchLock
import PerchService

extension PerchAPI {
    /// `GET /v3/ws`: a WebSocket (RFC 6455) for the caller, authenticated at the handshake like
    /// any request. It carries the caller's live events (as `GET /v3/events` does, resumed with
    /// `lastEventId`) and the caller's requests to any other endpoint, answered in order, so one
    /// connection does what a client otherwise does with a stream and keep-alive posts.
    /// - Throws: `ERR_BAD_REQUEST` (400) without a valid `Sec-WebSocket-Key`, `Connection:
    ///   Upgrade` or a `Sec-WebSocket-Version`; answers 426 with `Sec-WebSocket-Version: 13` to a
    ///   request that is not a WebSocket handshake, or is one of another version.
    func webSocket(_ request: Request) async throws(ChatError) -> HTTPResponse {
        let http = request.http
        let upgrade = http.header("upgrade")?.lowercased() ?? ""
        let version = http.header("sec-websocket-version") ?? ""
        let asksForWebSocket = upgrade.split(separator: ",").contains {
            $0.trimmingCharacters(in: .whitespaces) == "websocket"
        }
        // RFC 6455 4.2.1: a handshake without its version is malformed (400); one of another
        // version is answered with the version the server speaks (426, 4.4).
        if asksForWebSocket, version.isEmpty {
            throw .badRequest("Sec-WebSocket-Version", "a WebSocket handshake says Sec-WebSocket-Version: 13")
        }
        guard asksForWebSocket, version == "13" else {
            let error = ChatError.badRequest(
                upgrade.isEmpty ? "Upgrade" : "Sec-WebSocket-Version",
                "GET /v3/ws is a WebSocket handshake: Upgrade: websocket, Sec-WebSocket-Version: 13")
            var response = HTTPResponse.json(426, APIJSON.error(error))
            response.headers += [("Upgrade", "websocket"), ("Sec-WebSocket-Version", "13")]
            return response
        }
        let connection = http.header("connection")?.lowercased() ?? ""
        guard connection.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == "upgrade" })
        else {
            throw .badRequest("Connection", "a WebSocket handshake says Connection: Upgrade")
        }
        guard let key = http.header("sec-websocket-key"), WebSocket.isValidKey(key) else {
            throw .badRequest("Sec-WebSocket-Key", "expected the base64 of 16 bytes")
        }
        let after = try await eventsStart(request)
        let name =
            try Self.sessionName(request.query("session"), field: "session") ?? request.caller.sessionName
            ?? UUID().uuidString.lowercased()
        let caller = Caller(uid: request.caller.uid, isApp: request.caller.isApp, sessionName: name)
        let notified = try await service.newestNotification(of: caller.uid)
        let socket = WebSocketConnection(
            session: APIWebSocketSession(api: self, caller: caller, after: after, notificationsAfter: notified),
            maximumMessage: maximumBodyBytes + 1024, heartbeat: heartbeat)
        return HTTPResponse(
            status: 101,
            // libmicrohttpd adds `Connection: Upgrade` itself (a second would read "Upgrade, Upgrade").
            headers: [("Upgrade", "websocket"), ("Sec-WebSocket-Accept", WebSocket.acceptValue(for: key))],
            upgrade: socket)
    }

    /// What a stream resumed from before the event log's start missed: `perch.gap`'s data, `from`
    /// and `through` the sequences pruned before the caller read them. The caller fetches what it
    /// shows again (the messages are all kept), as after a first connection.
    static func gapJSON(_ missed: ClosedRange<Int64>) -> String {
        #"{"from":\#(missed.lowerBound),"through":\#(missed.upperBound)}"#
    }

    /// Where a caller's event stream starts: after `Last-Event-ID` (or `lastEventId`), else after
    /// the newest event.
    /// - Throws: `ERR_BAD_REQUEST` when the id is not a sequence.
    func eventsStart(_ request: Request) async throws(ChatError) -> Int64 {
        guard let resume = request.http.header("last-event-id") ?? request.query("lastEventId") else {
            return (try? await service.store.latestEventSequence()) ?? 0
        }
        guard let value = Int64(resume), value >= 0 else { throw .badRequest("Last-Event-ID", "expected a sequence") }
        return value
    }
}

/// A WebSocket's caller: its requests go through the API as that caller, its events are the
/// caller's events after the handshake's point, as the socket's session.
struct APIWebSocketSession: WebSocketSession {
    let api: PerchAPI
    let caller: PerchAPI.Caller
    let after: Int64
    /// The caller's newest notification at the handshake: the socket carries those routed after it.
    let notificationsAfter: Int64

    var greeting: [UInt8] {
        Array(#"{"type":"session","session":\#(JSONWriter.quoted(caller.sessionName ?? ""))}"#.utf8)
    }

    func pipelines(_ request: HTTPRequest) -> Bool { api.pipelines(request) }

    func respond(to request: HTTPRequest, pipelining: Pipelining?) async -> HTTPResponse {
        await api.respond(to: request, socketCaller: caller, pipelining: pipelining)
    }

    func followEvents(on executor: ThreadExecutor, deliver: @escaping @Sendable ([UInt8]) -> Void)
        -> @Sendable () -> Void
    {
        let service = api.service
        let metrics = api.metrics
        let caller = caller
        let after = after
        let notificationsAfter = notificationsAfter
        metrics.increment("perch_ws_connections", by: 1)
        let task = Task(executorPreference: executor) {
            try? await service.followEvents(
                for: caller.uid, session: caller.session, after: after, notifications: true,
                notificationsAfter: notificationsAfter
            ) { page in
                if let missed = page.missed {
                    deliver(Array(#"{"type":"gap","data":\#(PerchAPI.gapJSON(missed))}"#.utf8))
                }
                for event in page.events {
                    var message = Array(
                        #"{"type":"event","id":\#(event.seq),"event":"\#(event.name.rawValue)","data":"#.utf8)
                    message += event.jsonBytes
                    message.append(UInt8(ascii: "}"))
                    deliver(message)
                }
                for record in page.notifications {
                    deliver(Array(#"{"type":"notification","data":\#(PerchAPI.notificationJSON(record))}"#.utf8))
                }
                return true
            }
        }
        return {
            task.cancel()
            metrics.increment("perch_ws_connections", by: -1)
        }
    }
}
