import CMicroHTTPD
import Dispatch
import Foundation
import PerchLock

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

/// An HTTP server on libmicrohttpd: one thread per connection, keep-alive, bodies up to a limit.
/// Handlers are async; the connection's thread waits for them.
///
/// A stream (an event stream, a WebSocket) keeps its connection and thread for as long as it is
/// open, so at most `maximumStreams` are open at once: the next is answered 503
/// `ERR_TOO_MANY_STREAMS {limit, retryAfter}` with `Retry-After`. Another ``requestReserve``
/// connections stay for everything else, so health checks and the API keep answering while the
/// streams are full.
public final class HTTPServer: Sendable {
    public typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse

    let handler: Handler
    let maximumBodyBytes: Int
    let heartbeat: Duration
    public let maximumStreams: Int
    private let daemon: Lock<DaemonBox?> = Lock(nil)
    let context: ServerContext
    public let port: UInt16

    struct DaemonBox: @unchecked Sendable {
        // Owned by the server; MHD is thread-safe for stop.
        let pointer: OpaquePointer
    }

    /// Connections beyond the streams' for requests that are not streams.
    public static let requestReserve = 64

    /// Starts listening on `host:port` (port 0 picks a free one). A connection that sends nothing
    /// for `idleTimeout` (a keep-alive connection between requests, or a client stalled in the
    /// middle of one) is closed, so idle clients do not hold the connections and their threads;
    /// a stream is never idle (it sends at least a heartbeat), and a WebSocket is the socket's own.
    /// libmicrohttpd's own messages (a write to a connection that failed, a connection refused at
    /// the limit) go to `log`, one line each, so that they reach the host's log in its format.
    /// - Throws: ``HTTPServerError`` when the address cannot be bound.
    public init(
        host: String, port: UInt16, maximumBodyBytes: Int, heartbeat: Duration = .seconds(15),
        maximumStreams: Int = 1_000, idleTimeout: Duration = .seconds(60),
        log: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) },
        handler: @escaping Handler
    ) throws {
        self.handler = handler
        self.maximumBodyBytes = maximumBodyBytes
        self.heartbeat = heartbeat
        self.maximumStreams = max(1, maximumStreams)
        let box = ServerContext(log: log)
        // The daemon holds an unretained pointer; `context` keeps the box alive as long as the server.
        guard
            let started = perch_mhd_start(
                host, port, accessHandler, Unmanaged.passUnretained(box).toOpaque(), completedHandler,
                UInt32(clamping: self.maximumStreams + Self.requestReserve),
                UInt32(clamping: max(1, idleTimeout.components.seconds)), serverLog, uriLogger)
        else {
            throw HTTPServerError(description: "cannot listen on \(host):\(port)")
        }
        context = box
        self.port = perch_mhd_port(started)
        daemon.withLock { $0 = DaemonBox(pointer: started) }
        box.server.withLock { $0 = WeakServer(self) }
    }

    /// Stops accepting and closes every connection. Open event streams end first: libmicrohttpd
    /// waits for each connection's thread, and a stream's thread may be waiting for its next event
    /// (up to a heartbeat).
    public func stop() {
        guard
            let box = daemon.withLock({ state -> DaemonBox? in
                defer { state = nil }
                return state
            })
        else { return }
        for stream in context.stopStreams() { stream.finish() }
        // libmicrohttpd wants upgraded sockets handed back before it stops: their loops end within
        // a poll once finished (a second at most here, for a socket that cannot be written).
        let deadline = DispatchTime.now() + .seconds(1)
        while context.hasOpenUpgrades, DispatchTime.now() < deadline { usleep(1000) }
        MHD_stop_daemon(box.pointer)
        context.server.withLock { $0 = nil }
    }

    deinit { stop() }

    /// Runs the async handler for a complete request on the connection's thread: its task prefers
    /// an executor that runs its jobs right here, so a request crosses no thread unless it awaits
    /// another's work (an actor, a queued commit), and then comes back in one wake. Returns the
    /// executor too, with the jobs the request's work queued for this thread meanwhile (the bots
    /// its commit resumed, on a ``JoiningExecutor``): ``finish(_:)`` runs them once the response is
    /// sent.
    func respond(to request: HTTPRequest) -> (HTTPResponse, ThreadExecutor) {
        let result = Lock<HTTPResponse?>(nil)
        let executor = ThreadExecutor()
        let handler = self.handler
        Task(executorPreference: executor, priority: .high) {
            let response = await handler(request)
            result.withLock { $0 = response }
            executor.signal()
        }
        // The connection's thread is blocked for the request either way: it runs the jobs.
        executor.running {
            while result.withLock({ $0 }) == nil {
                if !executor.runPending() { executor.waitForWork() }
            }
        }
        let response =
            result.withLock { $0 } ?? .json(500, #"{"error":{"code":"ERR_INTERNAL","message":"no response"}}"#)
        return (response, executor)
    }

    /// After a request's response went out: runs what its work queued for this thread (and what
    /// those jobs queue in turn, up to 64 rounds), then hands anything left to the shared pool.
    static func finish(_ executor: ThreadExecutor) {
        executor.running {
            for _ in 0..<64 where executor.runPending() {}
        }
        executor.stop()
    }
}

public struct HTTPServerError: Error, CustomStringConvertible {
    public var description: String
}

/// What the C callbacks reach through their context pointer.
final class ServerContext: Sendable {
    let server = Lock<WeakServer?>(nil)
    /// Where libmicrohttpd's messages go.
    let log: @Sendable (String) -> Void
    /// The streams being sent and the upgraded connections; nil once the server stops (a stream
    /// that starts then ends at once).
    private let streams = Lock<[ObjectIdentifier: any FinishableConnection]?>([:])
    /// Upgraded connections whose loops still run, even after ``stopStreams()``.
    private let upgrades = Lock(0)

    init(log: @escaping @Sendable (String) -> Void) { self.log = log }

    var hasOpenUpgrades: Bool { upgrades.withLock { $0 > 0 } }

    /// Counts an upgraded connection's loop in (true) or out.
    func upgrade(running: Bool) {
        upgrades.withLock { $0 += running ? 1 : -1 }
    }

    enum Opening {
        case opened
        /// `limit` streams are open.
        case full
        case stopping
    }

    /// Records a stream or an upgrade that is answered, unless `limit` are open already or the
    /// server is stopping.
    func open(_ stream: any FinishableConnection, limit: Int) -> Opening {
        streams.withLock { streams in
            guard let open = streams?.count else { return .stopping }
            guard open < limit else { return .full }
            streams?[ObjectIdentifier(stream)] = stream
            return .opened
        }
    }

    /// Whether `stream` is recorded (false once the server stops).
    func isOpen(_ stream: any FinishableConnection) -> Bool {
        streams.withLock { $0?[ObjectIdentifier(stream)] != nil }
    }

    func closed(_ stream: any FinishableConnection) {
        _ = streams.withLock { $0?.removeValue(forKey: ObjectIdentifier(stream)) }
    }

    /// The open streams; no stream opens after this.
    func stopStreams() -> [any FinishableConnection] {
        streams.withLock { streams in
            defer { streams = nil }
            return Array((streams ?? [:]).values)
        }
    }
}

/// The server as its C callbacks see it, without keeping it alive.
struct WeakServer: @unchecked Sendable {
    weak var value: HTTPServer?
    init(_ value: HTTPServer) { self.value = value }
}

/// One request's state between libmicrohttpd's calls: the body as it arrives.
final class RequestState {
    /// The request line's URI before decoding (``uriLogger``).
    var rawURI = ""
    /// Whether its head passed ``RequestScreen`` (the access handler's first call).
    var screened = false
    var body: [UInt8] = []
    var tooLarge = false
    /// The request's executor, with the jobs its work queued for this thread, run once the
    /// response is sent (``HTTPServer/finish(_:)``).
    var executor: ThreadExecutor?
    /// The connection that takes the socket over once the 101 is sent.
    var upgrade: (any UpgradedConnection)?
}

private func collect(_ connection: OpaquePointer?, _ kind: MHD_ValueKind, lowercase: Bool) -> [String: String] {
    // Counted first (no iterator), so the dictionary is made at its size once.
    var values: [String: String] = [:]
    let count = MHD_get_connection_values(connection, kind, nil, nil)
    guard count > 0 else { return values }
    values.reserveCapacity(Int(count))
    withUnsafeMutablePointer(to: &values) { pointer in
        _ = MHD_get_connection_values(
            connection, kind, lowercase ? collectLowercased : collectAsSent, UnsafeMutableRawPointer(pointer))
    }
    return values
}

private let collectAsSent: MHD_KeyValueIterator = { context, _, key, value in
    guard let context, let key else { return .YES }
    context.assumingMemoryBound(to: [String: String].self).pointee[String(cString: key)] =
        value.map { String(cString: $0) } ?? ""
    return .YES
}

/// Header names: case does not matter in them (RFC 9110 §5.1).
private let collectLowercased: MHD_KeyValueIterator = { context, _, key, value in
    guard let context, let key else { return .YES }
    context.assumingMemoryBound(to: [String: String].self).pointee[String(cString: key).lowercased()] =
        value.map { String(cString: $0) } ?? ""
    return .YES
}

/// libmicrohttpd's messages (a format and its arguments), as one line each to the server's `log`.
let serverLog: MHD_LogCallback = { context, format, arguments in
    guard let context, let format, let arguments else { return }
    var buffer = [CChar](repeating: 0, count: 512)
    _ = vsnprintf(&buffer, buffer.count, format, arguments)
    let message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    guard !message.isEmpty else { return }
    Unmanaged<ServerContext>.fromOpaque(context).takeUnretainedValue().log(message)
}

let accessHandler: MHD_AccessHandlerCallback = {
    context, connection, url, method, _, uploadData, uploadSize, requestContext in
    guard let context, let requestContext, let uploadSize else { return .NO }
    if requestContext.pointee == nil {
        requestContext.pointee = Unmanaged.passRetained(RequestState()).toOpaque()
    }
    let state = Unmanaged<RequestState>.fromOpaque(requestContext.pointee!).takeUnretainedValue()
    guard let server = Unmanaged<ServerContext>.fromOpaque(context).takeUnretainedValue().server.withLock({ $0?.value })
    else { return .NO }
    if !state.screened {
        // The head is in and no byte of the body is read yet.
        state.screened = true
        if let refusal = RequestScreen.refusal(
            connection, rawURI: state.rawURI, maximumBodyBytes: server.maximumBodyBytes)
        {
            return queue(refusal, on: connection, server: server)
        }
        return .YES
    }
    if uploadSize.pointee > 0 {
        if !state.tooLarge, let uploadData {
            if state.body.count + uploadSize.pointee > server.maximumBodyBytes {
                state.tooLarge = true
                state.body = []
            } else {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: uploadSize.pointee) { bytes in
                    state.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: uploadSize.pointee))
                }
            }
        }
        uploadSize.pointee = 0
        return .YES
    }
    let response: HTTPResponse
    if state.tooLarge {
        response = .json(
            413,
            #"{"error":{"code":"ERR_BAD_REQUEST","message":"The body is larger than \#(server.maximumBodyBytes) bytes.","details":{"field":"body","limit":\#(server.maximumBodyBytes)}}}"#
        )
    } else {
        let path = url.map { String(cString: $0) } ?? "/"
        let request = HTTPRequest(
            method: method.map { String(cString: $0) } ?? "GET", path: path,
            query: collect(connection, .GET_ARGUMENT_KIND, lowercase: false),
            headers: collect(connection, .HEADER_KIND, lowercase: true), body: state.body)
        let executor: ThreadExecutor
        (response, executor) = server.respond(to: request)
        if response.stream == nil, response.upgrade == nil {
            state.executor = executor
        } else {
            // A stream's request completes when the stream ends: nothing waits that long.
            executor.stop()
        }
    }
    return queue(admit(response, into: state, server: server), on: connection, server: server)
}

/// Runs an upgraded connection on the connection's thread (libmicrohttpd calls this once the 101
/// is sent; a thread-per-connection daemon lets it block), then hands the socket back to be closed.
let upgradeHandler: MHD_UpgradeHandler = { context, _, requestContext, extra, extraSize, socket, handle in
    guard let context, let requestContext else {
        _ = perch_mhd_upgrade_close(handle)
        return
    }
    let serverContext = Unmanaged<ServerContext>.fromOpaque(context).takeUnretainedValue()
    let state = Unmanaged<RequestState>.fromOpaque(requestContext).takeUnretainedValue()
    if let upgraded = state.upgrade {
        state.upgrade = nil
        serverContext.upgrade(running: true)
        if serverContext.isOpen(upgraded) {
            let bytes = extra.map { Array(UnsafeRawBufferPointer(start: $0, count: extraSize)) } ?? []
            upgraded.run(socket: socket, extra: bytes)
            serverContext.closed(upgraded)
        }
        serverContext.upgrade(running: false)
    }
    _ = perch_mhd_upgrade_close(handle)
}

let completedHandler: MHD_RequestCompletedCallback = { context, _, requestContext, _ in
    guard let requestContext, let pointer = requestContext.pointee else { return }
    let state = Unmanaged<RequestState>.fromOpaque(pointer).takeRetainedValue()
    requestContext.pointee = nil
    if let executor = state.executor { HTTPServer.finish(executor) }
    // An upgrade whose loop never started (the client left before the 101 went out).
    if let upgrade = state.upgrade, let context {
        Unmanaged<ServerContext>.fromOpaque(context).takeUnretainedValue().closed(upgrade)
    }
}

/// A streamed body's reader state, owned by libmicrohttpd until its free callback.
final class StreamBox {
    let source: any EventStreamSource
    let heartbeat: Duration
    let context: ServerContext
    /// The connection's socket (-1 when unknown), watched for the client hanging up.
    let socket: Int32
    var pending: [UInt8] = []
    var finished = false

    init(source: any EventStreamSource, heartbeat: Duration, context: ServerContext, socket: Int32) {
        self.source = source
        self.heartbeat = heartbeat
        self.context = context
        self.socket = socket
    }
}

/// The socket of an MHD connection, or -1.
func connectionSocket(_ connection: OpaquePointer?) -> Int32 { perch_mhd_socket(connection) }

/// Has the kernel give up on `connection` once what was sent on it went unacknowledged for
/// `timeout` (`TCP_USER_TIMEOUT`): the connection then fails and closes at its next write. An event
/// stream writes at least a heartbeat, but only the client's TCP acknowledges it: a client that
/// vanished without closing (a laptop asleep, a phone off the network) would otherwise hold its
/// connection, its thread and a stream slot until the kernel's retransmissions run out, about 15
/// minutes.
func giveUpUnacknowledged(_ connection: OpaquePointer?, after timeout: Duration) {
    let (seconds, attoseconds) = timeout.components
    let milliseconds = UInt32(clamping: max(1, seconds * 1_000 + attoseconds / 1_000_000_000_000_000))
    _ = perch_mhd_give_up_unacknowledged(connection, milliseconds)
}

/// The answer to a stream beyond the server's `maximumStreams`.
func tooManyStreams(_ limit: Int) -> HTTPResponse {
    var response = HTTPResponse.json(
        503,
        #"{"error":{"code":"ERR_TOO_MANY_STREAMS","message":"The server has \#(limit) streams open, its limit; try again shortly.","details":{"limit":\#(limit),"retryAfter":5}}}"#
    )
    // The connection closes after the answer: a refused client does not keep a connection that
    // the requests which are not streams need.
    response.headers += [("Retry-After", "5"), ("Connection", "close")]
    return response
}

/// Records a stream or an upgrade among the server's open ones (it leaves them when it ends), or
/// answers 503 in its place when `maximumStreams` are open. Other answers pass as they are.
func admit(_ response: HTTPResponse, into state: RequestState, server: HTTPServer) -> HTTPResponse {
    guard let opened = response.stream.map({ $0 as any FinishableConnection }) ?? response.upgrade else {
        return response
    }
    switch server.context.open(opened, limit: server.maximumStreams) {
    case .opened: break
    case .stopping:
        // A stream ends at once; an upgrade is not run (``upgradeHandler``).
        response.stream?.finish()
    case .full:
        response.stream?.finish()
        response.stream?.close()
        return tooManyStreams(server.maximumStreams)
    }
    state.upgrade = response.upgrade
    return response
}

func queue(_ response: HTTPResponse, on connection: OpaquePointer?, server: HTTPServer) -> MHD_Result {
    let mhdResponse: OpaquePointer?
    if response.upgrade != nil {
        mhdResponse = MHD_create_response_for_upgrade(
            upgradeHandler, Unmanaged.passUnretained(server.context).toOpaque())
    } else if let stream = response.stream {
        giveUpUnacknowledged(connection, after: server.heartbeat * 2)
        let box = StreamBox(
            source: stream, heartbeat: server.heartbeat, context: server.context, socket: connectionSocket(connection))
        mhdResponse = MHD_create_response_from_callback(
            perch_mhd_size_unknown(), 4096,
            { context, _, buffer, maximum in
                guard let context, let buffer else { return perch_mhd_end_of_stream() }
                let box = Unmanaged<StreamBox>.fromOpaque(context).takeUnretainedValue()
                if box.pending.isEmpty {
                    if box.finished { return perch_mhd_end_of_stream() }
                    switch box.source.next(timeout: box.heartbeat, socket: box.socket) {
                    case nil:
                        box.finished = true
                        return perch_mhd_end_of_stream()
                    case let chunk? where chunk.isEmpty:
                        box.pending = Array(": heartbeat\n\n".utf8)
                    case let chunk?:
                        box.pending = chunk
                    }
                }
                let count = min(maximum, box.pending.count)
                box.pending.withUnsafeBytes { bytes in
                    UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress!, byteCount: count)
                }
                box.pending.removeFirst(count)
                return count
            }, Unmanaged.passRetained(box).toOpaque(),
            { context in
                guard let context else { return }
                let box = Unmanaged<StreamBox>.fromOpaque(context).takeRetainedValue()
                box.context.closed(box.source)
                box.source.close()
            })
    } else {
        mhdResponse = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
    }
    guard let mhdResponse else {
        if let stream = response.stream { server.context.closed(stream) }
        return .NO
    }
    addHeaders(response.headers, to: mhdResponse)
    let result = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    MHD_destroy_response(mhdResponse)
    return result
}

/// Adds `headers` to a libmicrohttpd response (which copies each name and value): their C strings
/// are laid out in one buffer, instead of one C string made for each short name and value.
func addHeaders(_ headers: [(String, String)], to response: OpaquePointer) {
    var bytes = 0
    for (name, value) in headers { bytes += name.utf8.count + value.utf8.count + 2 }
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: max(bytes, 1)) { buffer in
        guard let base = buffer.baseAddress else { return }
        var used = 0
        func put(_ text: String) -> UnsafePointer<CChar> {
            let start = base + used
            for byte in text.utf8 {
                buffer[used] = CChar(bitPattern: byte)
                used += 1
            }
            buffer[used] = 0
            used += 1
            return UnsafePointer(start)
        }
        for (name, value) in headers {
            let name = put(name)
            MHD_add_response_header(response, name, put(value))
        }
    }
}
