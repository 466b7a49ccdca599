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
    /// The threads whose connection the access handler is closing on purpose (a late body), by
    /// `pthread_self()`: libmicrohttpd then logs that the application reported an internal error,
    /// which it did not.
    private let closingOnPurpose = Lock(Set<UInt>())

    /// libmicrohttpd's line after an access handler answered `MHD_NO`.
    static let closedByHandler = "Application reported internal error, closing connection."

    init(log: @escaping @Sendable (String) -> Void) { self.log = log }

    var hasOpenUpgrades: Bool { upgrades.withLock { $0 > 0 } }

    /// Called by the access handler on the connection's thread right before it answers `MHD_NO`
    /// to close a connection on purpose: libmicrohttpd's line about it is not logged.
    func closingConnectionOnPurpose() {
        _ = closingOnPurpose.withLock { $0.insert(UInt(pthread_self())) }
    }

    /// Whether libmicrohttpd's `message`, logged on this thread, is the one about a connection the
    /// handler closed on purpose (it is then not logged). Called for every message, and when the
    /// request completes (`message` nil), which forgets the thread's mark.
    func isAboutClosingOnPurpose(_ message: String?) -> Bool {
        let thread = UInt(pthread_self())
        return closingOnPurpose.withLock { threads in
            guard threads.contains(thread), message == nil || message == Self.closedByHandler else { return false }
            threads.remove(thread)
            return message != nil
        }
    }

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
    /// When the head was in (uptime nanoseconds), and the body's bytes received since.
    var headAt: UInt64 = 0
    var received = 0
    var body: [UInt8] = []
    var tooLarge = false
    /// The request's executor, with the jobs its work queued for this thread, run once the
    /// response is sent (``HTTPServer/finish(_:)``).
    var executor: ThreadExecutor?
    /// The connection that takes the socket over once the 101 is sent.
    var upgrade: (any UpgradedConnection)?
}
