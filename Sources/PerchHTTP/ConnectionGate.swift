import CMicroHTTPD
import CSched
import Dispatch
import Foundation
import PerchChat
import PerchLock

/// The server's listening socket and its first reader: a connection reaches libmicrohttpd (and a
/// thread of its own) only once its first request's head is in and acceptable
/// (docs/security.md, "Connections").
///
/// Why: libmicrohttpd gives each connection a thread from the moment it is accepted, so a client
/// that opens a thousand connections and sends each a few bytes a minute (slowloris) held every
/// thread the server had, and `/healthz` with them. Here a connection waiting for its head costs a
/// descriptor and an entry on one thread's epoll set, and:
///
/// - its head must be in within ``Limits/headTimeout`` (then 408), and be at most
///   ``RequestHead/maximumHeadBytes`` (431), a request line of HTTP/1.0 or 1.1 (505, 414, 400);
/// - one client address may hold ``Limits/pendingPerClient`` connections waiting for their heads,
///   and all together ``Limits/pendingTotal``: past either, the longest-waiting is closed (a slow
///   client loses its oldest, a real one's new connection goes on);
/// - one client address may hold ``Limits/connectionsPerClient`` of libmicrohttpd's connections
///   (429 past it), and `/readyz` and `/metrics` are let through whatever it holds;
/// - `GET /healthz` is answered here, whatever libmicrohttpd holds;
/// - every refusal is a JSON error with `Connection: close`, as the API's are.
///
/// Later requests on a kept-alive connection are libmicrohttpd's to read (``RequestScreen`` checks
/// each of them); one that breaks HTTP itself gets libmicrohttpd's own answer.
final class ConnectionGate: @unchecked Sendable {
    struct Limits: Sendable {
        var headTimeout: Duration = .seconds(10)
        var pendingPerClient = 256
        var pendingTotal = 8_192
        var connectionsPerClient = 512
        /// libmicrohttpd's own limit: past it the gate answers 503 (libmicrohttpd would close the
        /// connection without a word).
        var connections = 1_064
    }

    /// A connection waiting for its head.
    private struct Waiting {
        var address: String
        var since: UInt64
    }

    let port: UInt16
    let limits: Limits
    private let listening: Int32
    private let epoll: Int32
    /// Written to end the gate's loop.
    private let wake: Int32
    private let handOff: @Sendable (Int32) -> Bool
    /// libmicrohttpd's connections, in all and by client address (kept by ``ServerContext``).
    private let connections: ConnectionCounts
    /// `/metrics`'s text, answered here when libmicrohttpd has no connection left for it.
    private let metricsText: (@Sendable () -> String)?
    /// Counts each refusal by its reason.
    private let refused: @Sendable (String) -> Void
    private let done = DispatchSemaphore(value: 0)
    private let stopping = Lock(false)
    // On the gate's thread only.
    private var waiting: [Int32: Waiting] = [:]
    private var waitingByAddress: [String: Int] = [:]
    private var peek = [UInt8](repeating: 0, count: RequestHead.maximumHeadBytes + 1)

    /// Listens on `host:port` (port 0 picks one) and starts the gate's thread.
    /// - Throws: ``HTTPServerError`` when the address cannot be bound.
    init(
        host: String, port: UInt16, limits: Limits, connections: ConnectionCounts,
        metricsText: (@Sendable () -> String)?, refused: @escaping @Sendable (String) -> Void,
        handOff: @escaping @Sendable (Int32) -> Bool
    ) throws {
        let listening = perch_listen(host, port, 1_024)
        guard listening >= 0 else {
            throw HTTPServerError(description: "cannot listen on \(host):\(port): \(String(cString: strerror(errno)))")
        }
        self.listening = listening
        self.port = perch_bound_port(listening)
        self.limits = limits
        self.connections = connections
        self.metricsText = metricsText
        self.refused = refused
        self.handOff = handOff
        epoll = perch_epoll_create()
        wake = perch_eventfd()
        _ = perch_epoll_add(epoll, listening, 0)
        _ = perch_epoll_add(epoll, wake, 0)
        Thread.detachNewThread { [self] in
            nameCurrentThread("perch-http-gate")
            loop()
            done.signal()
        }
    }

    /// Stops accepting; closes the connections still waiting for their heads. Returns once the
    /// gate's thread has ended.
    func stop() {
        let first = stopping.withLock { stopping -> Bool in
            defer { stopping = true }
            return !stopping
        }
        guard first else { return }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
        done.wait()
        for fd in waiting.keys { close(fd) }
        waiting.removeAll()
        close(listening)
        close(epoll)
        close(wake)
    }

    private func loop() {
        var fds = [Int32](repeating: 0, count: 256)
        var what = [Int32](repeating: 0, count: 256)
        while true {
            let count = perch_epoll_wait(epoll, &fds, &what, 256, 250)
            for index in 0..<max(0, Int(count)) {
                let fd = fds[index]
                if fd == wake { return }
                if fd == listening {
                    acceptAll()
                } else if waiting[fd] != nil {
                    examine(fd, hungUp: what[index] & Int32(PERCH_HUNG_UP) != 0)
                }
            }
            expire()
        }
    }

    private func acceptAll() {
        var buffer = [CChar](repeating: 0, count: 64)
        while true {
            let fd = perch_accept(listening, &buffer, 64)
            guard fd >= 0 else { return }
            let address = String(cString: buffer)
            if waiting.count >= limits.pendingTotal { evictOldest(of: nil) }
            if waitingByAddress[address, default: 0] >= limits.pendingPerClient { evictOldest(of: address) }
            waiting[fd] = Waiting(address: address, since: DispatchTime.now().uptimeNanoseconds)
            waitingByAddress[address, default: 0] += 1
            _ = perch_epoll_add(epoll, fd, 1)
            // Its head may be in already (edge-triggered: its arrival was before the watch).
            examine(fd, hungUp: false)
        }
    }

    /// Looks at what `fd` sent so far (without taking it: libmicrohttpd reads it again).
    private func examine(_ fd: Int32, hungUp: Bool) {
        let count = peek.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) {
            // Gone before a whole head.
            return drop(fd)
        }
        guard count > 0 else {
            if hungUp { drop(fd) }
            return
        }
        let bytes = peek[0..<count]
        guard let end = RequestHead.end(in: bytes) else {
            if let refusal = RequestHead.refusalSoFar(bytes) {
                return refuse(fd, refusal.status, refusal.error, "head")
            }
            if count > RequestHead.maximumHeadBytes {
                let limit = RequestHead.maximumHeadBytes
                return refuse(
                    fd, 431, .badRequest("headers", "the request's head is longer than \(limit) bytes"), "head")
            }
            if hungUp { drop(fd) }
            return
        }
        switch RequestHead.parse(bytes[0..<(end - 4)]) {
        case .failure(let refusal): refuse(fd, refusal.status, refusal.error, "head")
        case .success(let head): admit(fd, head)
        }
    }

    /// A whole, acceptable head: answered here, refused, or handed to libmicrohttpd.
    private func admit(_ fd: Int32, _ head: RequestHead) {
        let address = waiting[fd]?.address ?? ""
        let path = head.path
        if path == "/healthz", head.method == "GET" || head.method == "HEAD" {
            return answer(fd, 200, ["Content-Type": "text/plain"], head.method == "HEAD" ? [] : Array("ok\n".utf8))
        }
        let (total, fromAddress) = connections.counts(of: address)
        let exempt = path == "/readyz" || path == "/metrics"
        if !exempt, fromAddress >= limits.connectionsPerClient {
            let error = ChatError(
                .tooManyRequests,
                [
                    "reason": "too many connections from your address",
                    "limit": .int(Int64(limits.connectionsPerClient)),
                    "retryAfter": 5,
                ])
            return refuse(fd, 429, error, "per_client")
        }
        if total >= limits.connections {
            if path == "/metrics", head.method == "GET", let metricsText {
                return answer(
                    fd, 200, ["Content-Type": "text/plain; version=0.0.4"], Array((metricsText() + "\n").utf8))
            }
            let error = ChatError(.serviceUnavailable, ["reason": "busy", "retryAfter": 5])
            return refuse(fd, 503, error, "busy")
        }
        forget(fd)
        _ = perch_epoll_remove(epoll, fd)
        // libmicrohttpd owns the socket from here, whatever it answers.
        _ = handOff(fd)
    }

    /// The connections waiting for their heads past the timeout: 408.
    private func expire() {
        let now = DispatchTime.now().uptimeNanoseconds
        let (seconds, attoseconds) = limits.headTimeout.components
        let timeout = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds / 1_000_000_000))
        for (fd, entry) in waiting where now &- entry.since >= timeout {
            refuse(fd, 408, .badRequest("request", "the request's head did not come in time"), "slow")
        }
    }

    /// Closes the longest-waiting connection (of `address`, or of anyone).
    private func evictOldest(of address: String?) {
        let oldest = waiting.filter { address == nil || $0.value.address == address }.min {
            $0.value.since < $1.value.since
        }
        if let fd = oldest?.key {
            refuse(fd, 408, .badRequest("request", "the request's head did not come in time"), "evicted")
        }
    }

    private func refuse(_ fd: Int32, _ status: Int, _ error: ChatError, _ reason: String) {
        refused(reason)
        var headers = ["Content-Type": "application/json"]
        if case .int(let seconds)? = error.params["retryAfter"] { headers["Retry-After"] = String(seconds) }
        answer(fd, status, headers, Array(APIJSON.error(error).utf8))
    }

    /// Writes a whole answer (as much as the socket takes at once: they are small) and closes.
    private func answer(_ fd: Int32, _ status: Int, _ headers: [String: String], _ body: [UInt8]) {
        var text = "HTTP/1.1 \(status) \(Self.reason(status))\r\nContent-Length: \(body.count)\r\n"
        text += "Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        let bytes = Array((text + "\r\n").utf8) + body
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        // What the client sent is read first: closing with unread bytes would reset the connection,
        // and the client might lose the answer.
        while peek.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
        shutdown(fd, Int32(SHUT_WR))
        drop(fd)
    }

    private func drop(_ fd: Int32) {
        forget(fd)
        _ = perch_epoll_remove(epoll, fd)
        close(fd)
    }

    private func forget(_ fd: Int32) {
        guard let entry = waiting.removeValue(forKey: fd) else { return }
        let left = waitingByAddress[entry.address, default: 1] - 1
        waitingByAddress[entry.address] = left > 0 ? left : nil
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 400: return "Bad Request"
        case 408: return "Request Timeout"
        case 411: return "Length Required"
        case 414: return "URI Too Long"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Error"
        }
    }
}

/// libmicrohttpd's connections, in all and by client address, as its notifications tell them.
final class ConnectionCounts: Sendable {
    private let state = Lock<(total: Int, byAddress: [String: Int])>((0, [:]))

    func opened(_ address: String) {
        state.withLock { state in
            state.total += 1
            state.byAddress[address, default: 0] += 1
        }
    }

    func closed(_ address: String) {
        state.withLock { state in
            state.total -= 1
            let left = state.byAddress[address, default: 1] - 1
            state.byAddress[address] = left > 0 ? left : nil
        }
    }

    func counts(of address: String) -> (total: Int, fromAddress: Int) {
        state.withLock { ($0.total, $0.byAddress[address] ?? 0) }
    }
}
