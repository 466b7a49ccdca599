import CMicroHTTPD
import Dispatch
import Foundation
import PerchLock

/// An HTTP server on libmicrohttpd: one thread per connection, keep-alive, bodies up to a limit.
/// Handlers are async; the connection's thread waits for them. A connection reaches libmicrohttpd
/// through the ``ConnectionGate`` once its first request's head is in.
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
    /// A body's time, from its head (nanoseconds); each ``minimumBodyRate`` bytes received add a
    /// second.
    let bodyTimeoutNanoseconds: UInt64
    /// Counts a refusal by its reason (`perch_http_connections_refused_total`).
    let refused: @Sendable (_ reason: String) -> Void
    let heartbeat: Duration
    public let maximumStreams: Int
    private let daemon: Lock<DaemonBox?> = Lock(nil)
    let context: ServerContext
    private let gate: ConnectionGate
    public let port: UInt16

    struct DaemonBox: @unchecked Sendable {
        // Owned by the server; MHD is thread-safe for stop.
        let pointer: OpaquePointer
    }

    /// Connections beyond the streams' for requests that are not streams.
    public static let requestReserve = 64

    /// The slowest a body may come, in bytes a second, past its first `bodyTimeout`.
    public static let minimumBodyRate = 1_024

    /// Starts listening on `host:port` (port 0 picks a free one). A connection that sends nothing
    /// for `idleTimeout` (a keep-alive connection between requests, or a client stalled in the
    /// middle of one) is closed, so idle clients do not hold the connections and their threads;
    /// a stream is never idle (it sends at least a heartbeat), and a WebSocket is the socket's own.
    /// A new connection's first request must send its head within `headTimeout`, and one client
    /// address may hold `connectionsPerClient` connections (``ConnectionGate``). A request's body
    /// must be in within `bodyTimeout` of its head, plus a second for each ``minimumBodyRate``
    /// bytes received (Apache's `RequestReadTimeout body=…,MinRate=…`): a body sent a byte at a
    /// time, each just inside the idle timeout, is cut off (the connection closed). `metricsText`
    /// answers `/metrics` when every connection is taken, and `refused` counts the gate's refusals
    /// by reason. libmicrohttpd's own messages (a write to a connection that failed) go to `log`,
    /// one line each, so that they reach the host's log in its format.
    /// - Throws: ``HTTPServerError`` when the address cannot be bound.
    public init(
        host: String, port: UInt16, maximumBodyBytes: Int, heartbeat: Duration = .seconds(15),
        maximumStreams: Int = 1_000, idleTimeout: Duration = .seconds(60), headTimeout: Duration = .seconds(10),
        bodyTimeout: Duration = .seconds(30), connectionsPerClient: Int = 512,
        metricsText: (@Sendable () -> String)? = nil,
        refused: @escaping @Sendable (_ reason: String) -> Void = { _ in },
        log: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) },
        handler: @escaping Handler
    ) throws {
        self.handler = handler
        self.maximumBodyBytes = maximumBodyBytes
        let (seconds, attoseconds) = bodyTimeout.components
        bodyTimeoutNanoseconds = UInt64(clamping: seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
        self.refused = refused
        self.heartbeat = heartbeat
        self.maximumStreams = max(1, maximumStreams)
        let box = ServerContext(log: log)
        let connectionLimit = self.maximumStreams + Self.requestReserve
        // The daemon holds an unretained pointer; `context` keeps the box alive as long as the server.
        guard
            let started = perch_mhd_start(
                accessHandler, Unmanaged.passUnretained(box).toOpaque(), completedHandler,
                UInt32(clamping: connectionLimit), UInt32(clamping: max(1, idleTimeout.components.seconds)),
                serverLog, uriLogger, connectionNotifier)
        else {
            throw HTTPServerError(description: "cannot start libmicrohttpd")
        }
        let handle = DaemonBox(pointer: started)
        do {
            gate = try ConnectionGate(
                host: host, port: port,
                limits: ConnectionGate.Limits(
                    headTimeout: headTimeout, connectionsPerClient: max(1, connectionsPerClient),
                    connections: connectionLimit),
                connections: box.counts, metricsText: metricsText, refused: refused,
                handOff: { fd in
                    // A client already gone: the socket is still the gate's to close.
                    let taken = perch_mhd_add_connection(handle.pointer, fd)
                    if taken < 0 { close(fd) }
                    return taken == 1
                })
        } catch {
            MHD_stop_daemon(started)
            throw error
        }
        context = box
        self.port = gate.port
        daemon.withLock { $0 = handle }
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
        gate.stop()
        for stream in context.stopStreams() { stream.finish() }
        // libmicrohttpd wants upgraded sockets handed back before it stops: their loops end within
        // a poll once finished (a second at most here, for a socket that cannot be written).
        let deadline = DispatchTime.now() + .seconds(1)
        while context.hasOpenUpgrades, DispatchTime.now() < deadline { usleep(1000) }
        MHD_stop_daemon(box.pointer)
        context.server.withLock { $0 = nil }
    }

    deinit { stop() }

    /// Whether a body whose head came at `startedAt` (uptime nanoseconds) and of which `received`
    /// bytes are in has had its time.
    func bodyIsLate(startedAt: UInt64, received: Int) -> Bool {
        let allowed = bodyTimeoutNanoseconds &+ UInt64(received / Self.minimumBodyRate) &* 1_000_000_000
        return DispatchTime.now().uptimeNanoseconds &- startedAt > allowed
    }

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
