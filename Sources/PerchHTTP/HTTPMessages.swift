import Foundation

/// An HTTP request as the handlers see it.
public struct HTTPRequest: Sendable {
    public var method: String
    public var path: String
    /// Query arguments, percent-decoded by libmicrohttpd.
    public var query: [String: String]
    /// Header values by lowercased name.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(
        method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
        body: [UInt8] = []
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A response: a body, a stream of Server-Sent Events, or a switch to another protocol (101, a
/// WebSocket) that takes the connection's socket over.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    public var stream: EventStreamSource?
    public var upgrade: (any UpgradedConnection)?

    public init(
        status: Int, headers: [(String, String)] = [], body: [UInt8] = [], stream: EventStreamSource? = nil,
        upgrade: (any UpgradedConnection)? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.stream = stream
        self.upgrade = upgrade
    }

    public static func json(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: Array(text.utf8))
    }

    public static func text(_ status: Int, _ text: String, type: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", type)], body: Array(text.utf8))
    }

    /// The value of the first header named `name`, in any case (header names are ASCII tokens: no
    /// locale, no copy; every answer asks).
    func header(_ name: String) -> String? {
        headers.first { Self.sameName($0.0, name) }?.1
    }

    private static func sameName(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { lower($0) == lower($1) }
    }

    private static func lower(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
}

/// What the server ends when it stops: an event stream, an upgraded connection.
public protocol FinishableConnection: AnyObject, Sendable {
    /// Ends the connection soon: the server is stopping, and waits for the connection's thread.
    func finish()
}

/// A connection that left HTTP (a WebSocket): it runs on the connection's thread until it ends.
public protocol UpgradedConnection: FinishableConnection {
    /// Runs the connection on the calling thread until it is over, on `socket` (whose bytes after
    /// the request, already read, are `extra`). The socket is the server's: it closes it after.
    func run(socket: Int32, extra: [UInt8])
}

/// Produces the chunks of a streamed response; `next(timeout:)` returns nil at the end.
public protocol EventStreamSource: FinishableConnection {
    /// The next bytes to send, an empty array when `timeout` passed with nothing (a heartbeat is
    /// then sent), or nil when the stream is over. `socket` is the connection's: a client that hangs
    /// up ends the stream at once (nil), so its slot is free for its reconnection, instead of at the
    /// next write that fails.
    func next(timeout: Duration, socket: Int32) -> [UInt8]?
    /// Ends the stream now (the server is stopping): `next` hands over what is buffered, if
    /// anything, then answers nil without waiting.
    func finish()
    /// The client went away.
    func close()
}
