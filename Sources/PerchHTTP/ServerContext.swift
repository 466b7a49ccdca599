import Foundation
import PerchLock

/// What the C callbacks reach through their context pointer.
final class ServerContext: Sendable {
    let server = Lock<WeakServer?>(nil)
    /// libmicrohttpd's connections, in all and by client address (``connectionNotifier``).
    let counts = ConnectionCounts()
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
