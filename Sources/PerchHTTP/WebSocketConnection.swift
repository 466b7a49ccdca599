import CMicroHTTPD  // MSG_NOSIGNAL: in an optimized build, <sys/socket.h> is the shim's
import Dispatch
import Foundation
import PerchChat
import PerchHost
import PerchLock

#if canImport(Glibc)
    import Glibc
#endif

/// What a WebSocket serves: the caller's requests, answered in the order sent, and the caller's
/// live events.
public protocol WebSocketSession: Sendable {
    /// The first message the client gets (which session the socket is).
    var greeting: [UInt8] { get }
    /// Whether `request` may start while the requests before it wait for their commits (each of
    /// them a request that may too): it queues its one write before it waits for anything, and
    /// reads nothing they write, so it makes the same change as after them. A message send.
    func pipelines(_ request: HTTPRequest) -> Bool
    /// Answers one request sent over the socket, as the socket's caller. `pipelining`: the
    /// request ``pipelines(_:)`` and may be told so.
    func respond(to request: HTTPRequest, pipelining: Pipelining?) async -> HTTPResponse
    /// Starts following the caller's events; their messages go to `deliver`. The task prefers
    /// `executor` (the socket's thread). Returns what stops it.
    func followEvents(on executor: ThreadExecutor, deliver: @escaping @Sendable ([UInt8]) -> Void)
        -> @Sendable () -> Void
}

/// For a request that may start while the requests before it wait for their commits
/// (``WebSocketSession/pipelines(_:)``): whether requests wait behind it (then its commit had
/// better not run on the socket's thread, which has their work to do), and what it calls once its
/// write is queued, so the next may start.
public struct Pipelining: Sendable {
    public var moreWaiting: Bool
    public var queued: @Sendable () -> Void
}

/// One WebSocket, run on its HTTP connection's thread (libmicrohttpd's, after the 101): one loop
/// polls the socket and the executor's eventfd, reads the client's frames, answers its requests in
/// order, and sends the caller's events. A request starts once those before it are answered (as
/// HTTP/1.1 answers a keep-alive connection's), except that message sends sent back to back start
/// while those before them wait for their commits (``Pipelining``), so a burst commits in batches
/// on the store's writer while this thread reads the next; their answers still go out in order.
/// The requests' tasks, the bots a request's commit resumes (``JoiningExecutor``) and the event
/// loop's steps all run on this thread, so a message posted here and the bot reply it brings back
/// cost one wake of the server.
///
/// Requests are text messages: `{"id": any, "method": "POST", "path": "/v3/messages", "body":
/// {...}}`, answered with `{"type":"response","id":...,"status":201,"body":{...}}`; events are
/// `{"type":"event","id":SEQ,"event":NAME,"data":{...}}`.
final class WebSocketConnection: UpgradedConnection, @unchecked Sendable {
    let session: any WebSocketSession
    let maximumMessage: Int
    /// The heartbeat in nanoseconds, at least a millisecond.
    let heartbeatNanoseconds: UInt64
    private let executor = ThreadExecutor(pollable: ())
    /// Bytes to send (answers, events, pongs), what the loop has to look at, and whether the
    /// server is stopping. Events may be delivered from the shared pool after the loop ends.
    private let shared = Lock(Shared())
    struct Shared {
        var outbox: [UInt8] = []
        /// The number of the next request whose answer goes out; answers that came before it.
        var nextAnswer = 0
        var held: [Int: [UInt8]] = [:]
        /// The newest request that has queued its write or been answered (the next may start).
        var settled = -1
        /// An answer or a queued write came since the loop last looked.
        var changed = false
        var stopping = false

        /// Request `index` has queued its write or been answered: the next may start.
        mutating func settle(_ index: Int) {
            settled = max(settled, index)
            changed = true
        }
    }
    /// Past this many bytes waiting to be sent, the loop starts no request and runs no more jobs
    /// until the client reads: a client that does not read holds at most this much of the server's
    /// memory (and one answer in progress). One that stays so, reading nothing, is closed by the
    /// heartbeat (it stops being read from too, so it is not heard).
    static let outboxLimit = 256 << 10
    /// What the outbox keeps of its capacity once it is empty: a socket that once held a lot lets
    /// it go when it has sent it.
    static let keptOutboxCapacity = 64 << 10
    /// Requests waiting for the one being answered: past this many, or past this many bytes of
    /// bodies (at least one request's worth), the socket is not read until they are answered.
    static let queuedLimit = 256
    static let queuedBytesLimit = 4 << 20
    /// Past this many bytes waiting, they are sent before more jobs run.
    static let flushSize = 64 << 10
    /// Requests started and not yet answered, at most (sends waiting for their commits).
    static let inFlightLimit = 128

    init(session: any WebSocketSession, maximumMessage: Int, heartbeat: Duration) {
        self.session = session
        self.maximumMessage = maximumMessage
        let (seconds, attoseconds) = heartbeat.components
        heartbeatNanoseconds = max(
            1_000_000, UInt64(clamping: seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000))
    }

    func finish() {
        shared.withLock { $0.stopping = true }
        executor.signal()
    }

    /// The bytes the socket holds for its client now: waiting to be sent, and answers held for
    /// their turn.
    var bufferedBytes: Int {
        shared.withLock { shared in shared.outbox.count + shared.held.values.reduce(0) { $0 + $1.count } }
    }

    private func send(_ bytes: [UInt8]) {
        shared.withLock { $0.outbox += bytes }
        executor.signal()
    }

    private func sendText(_ payload: [UInt8]) {
        send(Self.textFrame(payload))
    }

    private static func textFrame(_ payload: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = []
        frame.reserveCapacity(payload.count + 10)
        WebSocket.append(.text, payload, to: &frame)
        return frame
    }

    /// Sends the answer of request `index` once those of the requests sent before it are out (a
    /// send refused before its write was queued is answered before the sends ahead of it commit).
    private func answer(_ index: Int, _ payload: [UInt8]) {
        let frame = Self.textFrame(payload)
        shared.withLock { shared in
            shared.held[index] = frame
            while let next = shared.held.removeValue(forKey: shared.nextAnswer) {
                shared.outbox += next
                shared.nextAnswer += 1
            }
            shared.settle(index)
        }
        executor.signal()
    }

    func run(socket: Int32, extra: [UInt8]) {
        let flags = fcntl(socket, F_GETFL)
        _ = fcntl(socket, F_SETFL, flags | O_NONBLOCK)
        // Each answer and event goes out at once: with Nagle's algorithm an event written right
        // after an answer waits for the client's (delayed, 40 ms) acknowledgement of the answer.
        var one: Int32 = 1
        _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var loop = Loop(connection: self, socket: socket, inbound: extra)
        sendText(session.greeting)
        let stopEvents = session.followEvents(on: executor) { [weak self] message in self?.sendText(message) }
        loop.run()
        stopEvents()
        executor.stop()
        // What a socket that held a lot let go goes back to the kernel, not to the heap's reserve.
        shared.withLock { $0.outbox = [] }
        if loop.peakOutbox > Self.keptOutboxCapacity { Allocator.releaseFreeMemory() }
    }

    /// The loop's own state, on the connection's thread only.
    struct Loop {
        let connection: WebSocketConnection
        let socket: Int32
        var inbound: [UInt8]
        var assembler: WebSocket.Assembler
        /// Requests read and not started (a malformed one as its refusal, answered in its turn),
        /// and whether each ``WebSocketSession/pipelines(_:)`` (a refusal does: it does nothing).
        var requests: [(frame: Result<HTTPRequestFrame, HTTPRequestFrame.Failure>, pipelines: Bool)] = []
        var queuedBytes = 0
        /// Requests started and not yet answered, in order, and whether each pipelines.
        var inFlight: [(index: Int, pipelines: Bool)] = []
        /// The number of the next request to start.
        var started = 0
        /// The newest request that has queued its write or been answered.
        var settled = -1
        /// Whether looking for the client's next request before sleeping has paid lately.
        var spinHistory = SpinHistory()
        /// Sent our close frame: nothing more is read or answered.
        var closing = false
        /// The client's end is closed, or the socket failed.
        var gone = false
        /// When the client last sent anything, and when it was pinged since, on the uptime clock.
        var lastHeard = DispatchTime.now().uptimeNanoseconds
        var pingedAt: UInt64?
        var chunk = [UInt8](repeating: 0, count: 65_536)
        /// The most the outbox held (its capacity), for the release of memory at the end.
        var peakOutbox = 0

        init(connection: WebSocketConnection, socket: Int32, inbound: [UInt8]) {
            self.connection = connection
            self.socket = socket
            self.inbound = inbound
            assembler = WebSocket.Assembler(maximumMessage: connection.maximumMessage)
        }

        /// Runs jobs until there are none (or enough to send), then sends what they made in one
        /// write: an answer and the events its request brought back (a bot's reply) reach the
        /// client together, one wake of the client instead of one each (as Redis writes its
        /// replies before it sleeps).
        mutating func run() {
            let executor = connection.executor
            readFrames()
            var rounds = 0
            while !gone {
                let (answered, settled, stopping, backlog) = connection.shared.withLock { shared in
                    shared.changed = false
                    return (shared.nextAnswer, shared.settled, shared.stopping, shared.outbox.count)
                }
                self.settled = settled
                if let first = inFlight.first, first.index < answered {
                    inFlight.removeFirst(min(answered - first.index, inFlight.count))
                    // The bots a request's commit resumed may join this thread again for the next.
                    executor.resetJoined()
                }
                if stopping, !closing { close(WebSocket.CloseCode.goingAway, "the server is stopping") }
                if !closing, backlog < WebSocketConnection.outboxLimit, let next = requests.first,
                    mayStart(pipelining: next.pipelines)
                {
                    requests.removeFirst()
                    start(next.frame, pipelines: next.pipelines)
                }
                // A client that does not read holds its socket's jobs back (the event loop's
                // next page among them) until it has taken most of what waits for it.
                let holding = backlog >= WebSocketConnection.outboxLimit
                let ran = !holding && executor.running { executor.runPending() }
                if ran, rounds < 64, backlog < WebSocketConnection.flushSize {
                    rounds += 1
                    continue
                }
                rounds = 0
                flush()
                if closing, connection.shared.withLock({ $0.outbox.isEmpty }) || gone { break }
                if ran { continue }
                // The client took enough to make room: start the next request and run the jobs.
                let stillHolding = connection.shared.withLock { $0.outbox.count } >= WebSocketConnection.outboxLimit
                if holding, !stillHolding { continue }
                wait(holdingJobs: stillHolding)
            }
        }

        /// Sleeps until the socket has bytes (or room for ours), the executor has work, or the
        /// heartbeat is due; reads what came. Once the server stops, a socket that takes nothing
        /// for 100 ms is given up.
        mutating func wait(holdingJobs: Bool) {
            // Checked at every wait, not only when a wait times out: a socket the server keeps
            // sending events to never sits out a heartbeat, and its client may be long gone.
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= heartbeatDue {
                // Our close frame waits for a client that has taken nothing for a heartbeat: given
                // up, as a ping would be (a closing socket sends no ping).
                if closing {
                    gone = true
                    return
                }
                heartbeat(at: now)
                if gone { return }
            }
            guard connection.executor.prepareToSleep(holdingJobs: holdingJobs) else { return }
            defer { connection.executor.awake() }
            let (pending, changed, stopping) = connection.shared.withLock {
                (!$0.outbox.isEmpty, $0.changed, $0.stopping)
            }
            guard !changed, !(stopping && !closing) else { return }
            let reading =
                !closing && requests.count < WebSocketConnection.queuedLimit
                && queuedBytes < max(WebSocketConnection.queuedBytesLimit, connection.maximumMessage)
            var descriptors = [
                pollfd(
                    fd: socket, events: Int16(reading ? POLLIN : 0) | Int16(pending ? POLLOUT : 0), revents: 0),
                pollfd(fd: connection.executor.wakeDescriptor!, events: Int16(POLLIN), revents: 0),
            ]
            // The heartbeat is ahead of `now` here (checked above).
            let milliseconds = stopping ? 100 : Int32(clamping: (heartbeatDue - now) / 1_000_000 + 1)
            // Looks for a moment before it sleeps (`SpinWait`): the client's next request often
            // comes within it, and a sleeping thread's CPU is slow to wake.
            var ready: Int32 = 0
            if !spinHistory.spin({
                ready = poll(&descriptors, 2, 0)
                return ready != 0
            }) {
                ready = poll(&descriptors, 2, milliseconds)
            }
            if ready == 0 {
                // A heartbeat due now is sent at the next wait.
                if stopping { gone = true }
                return
            }
            if descriptors[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { read() }
        }

        /// When the heartbeat is due: a ping once the client has been quiet for a heartbeat, the
        /// end once it stayed quiet for another after the ping.
        var heartbeatDue: UInt64 { (pingedAt ?? lastHeard) &+ connection.heartbeatNanoseconds }

        /// A quiet socket gets a ping; one that stayed quiet through the ping is closed.
        mutating func heartbeat(at now: UInt64) {
            if pingedAt != nil {
                gone = true
                return
            }
            pingedAt = now
            var frame: [UInt8] = []
            WebSocket.append(.ping, [UInt8](), to: &frame)
            connection.send(frame)
        }

        mutating func read() {
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) {
                gone = true
                return
            }
            guard count > 0 else { return }
            lastHeard = DispatchTime.now().uptimeNanoseconds
            pingedAt = nil
            inbound.append(contentsOf: chunk[0..<count])
            readFrames()
        }

        /// Takes the whole frames received so far.
        mutating func readFrames() {
            var start = 0
            defer { inbound.removeSubrange(0..<start) }
            while !closing {
                do {
                    guard
                        let (frame, next) = try WebSocket.frame(
                            in: inbound, at: start, masked: true, maximumPayload: connection.maximumMessage)
                    else { return }
                    start = next
                    guard let message = try assembler.add(frame) else { continue }
                    handle(message)
                } catch {
                    close(error.code, error.reason)
                    start = inbound.count
                }
            }
            start = inbound.count
        }

        mutating func handle(_ message: WebSocket.Message) {
            switch message {
            case .text(let bytes):
                let parsed = HTTPRequestFrame.parse(bytes)
                switch parsed {
                case .success(let request):
                    requests.append((parsed, connection.session.pipelines(request.http)))
                    queuedBytes += request.http.body.count
                case .failure: requests.append((parsed, true))
                }
            case .ping(let payload):
                var frame: [UInt8] = []
                WebSocket.append(.pong, payload, to: &frame)
                connection.send(frame)
            case .pong: break
            case .close(let code, _): close(code ?? WebSocket.CloseCode.normal, "")
            }
        }

        /// Sends a close frame; the loop ends once it is sent.
        mutating func close(_ code: UInt16, _ reason: String) {
            guard !closing else { return }
            closing = true
            var frame: [UInt8] = []
            WebSocket.append(.close, WebSocket.closePayload(code, reason), to: &frame)
            connection.send(frame)
        }

        /// Whether the next request may start now: when none is being answered, or when it and
        /// every request being answered pipeline and the newest of those has queued its write.
        func mayStart(pipelining: Bool) -> Bool {
            // A request that does not pipeline starts alone, so when it is in flight it is the
            // newest: the newest one's flag speaks for all of them.
            guard let newest = inFlight.last else { return true }
            return pipelining && newest.pipelines && settled >= newest.index
                && inFlight.count < WebSocketConnection.inFlightLimit
        }

        /// Starts answering `frame`: a request's task runs on this thread, a refusal is answered at
        /// once; either answer goes out in order.
        mutating func start(_ frame: Result<HTTPRequestFrame, HTTPRequestFrame.Failure>, pipelines: Bool) {
            let index = started
            started += 1
            inFlight.append((index, pipelines))
            let request: HTTPRequestFrame
            switch frame {
            case .success(let frame): request = frame
            case .failure(let refusal):
                connection.answer(index, refusal.responseMessage)
                return
            }
            queuedBytes -= request.http.body.count
            let connection = connection
            let session = connection.session
            let pipelining =
                pipelines
                ? Pipelining(
                    moreWaiting: !requests.isEmpty,
                    queued: {
                        connection.shared.withLock { $0.settle(index) }
                        connection.executor.signal()
                    }) : nil
            Task(executorPreference: connection.executor) {
                let response = await session.respond(to: request.http, pipelining: pipelining)
                connection.answer(index, request.answer(response))
            }
        }

        /// Writes what waits to be sent, as much as the socket takes now.
        mutating func flush() {
            connection.shared.withLock { shared in
                var sent = 0
                while sent < shared.outbox.count {
                    let count = shared.outbox[sent...].withUnsafeBytes {
                        Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                    }
                    if count > 0 {
                        sent += count
                    } else {
                        if count < 0, errno != EAGAIN, errno != EINTR { gone = true }
                        if count == 0 || errno != EINTR { break }
                    }
                }
                shared.outbox.removeSubrange(0..<sent)
                peakOutbox = max(peakOutbox, shared.outbox.capacity)
                if shared.outbox.isEmpty, shared.outbox.capacity > WebSocketConnection.keptOutboxCapacity {
                    shared.outbox = []
                }
            }
        }
    }
}

/// A request sent over a WebSocket: its id (echoed in the answer, as JSON) and the request.
struct HTTPRequestFrame: Sendable {
    var id: [UInt8]
    var http: HTTPRequest

    struct Failure: Error {
        var id: [UInt8]
        var message: String

        /// The answer that says so: a 400 with `ERR_BAD_REQUEST`.
        var responseMessage: [UInt8] {
            let body = APIJSON.error(.badRequest("request", message))
            return Array(#"{"type":"response","id":"#.utf8) + id + Array(#","status":400,"body":\#(body)}"#.utf8)
        }
    }

    /// Reads `{"id": any, "method": "GET", "path": "/v3/...?query", "body": {...}}`.
    static func parse(_ bytes: [UInt8]) -> Result<HTTPRequestFrame, Failure> {
        let text = String(decoding: bytes, as: UTF8.self)
        var id: Range<Int>?
        var method: String?
        var path: String?
        var body: Range<Int>?
        struct UnknownField: Error, CustomStringConvertible {
            var description: String
        }
        do {
            try JSONReader.read(text) { reader in
                try reader.object { reader, key in
                    switch key {
                    case "id": id = try reader.skipValue()
                    case "method": method = try reader.string()
                    case "path": path = try reader.string()
                    case "body": body = try reader.skipValue()
                    default: throw UnknownField(description: "unknown field \(key)")
                    }
                }
            }
        } catch {
            return .failure(Failure(id: Array("null".utf8), message: "a request is a JSON object: \(error)"))
        }
        let idBytes = id.map { Array(bytes[$0]) } ?? Array("null".utf8)
        guard let method, ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(method) else {
            return .failure(Failure(id: idBytes, message: "method must be GET, POST, PUT, PATCH or DELETE"))
        }
        guard let path, path.hasPrefix("/"), let components = URLComponents(string: path) else {
            return .failure(Failure(id: idBytes, message: "path must be an absolute path"))
        }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
        let request = HTTPRequest(
            method: method, path: components.percentEncodedPath, query: query,
            headers: ["content-type": "application/json"], body: body.map { Array(bytes[$0]) } ?? [])
        return .success(HTTPRequestFrame(id: idBytes, http: request))
    }

    /// The answer's message: a JSON body as it is; any other body as a JSON string.
    func answer(_ response: HTTPResponse) -> [UInt8] {
        var out = Array(#"{"type":"response","id":"#.utf8) + id + Array(#","status":\#(response.status),"body":"#.utf8)
        let isJSON = response.header("Content-Type")?.hasPrefix("application/json") ?? false
        if isJSON, !response.body.isEmpty {
            out += response.body
        } else if response.body.isEmpty {
            out += Array("null".utf8)
        } else {
            out += Array(JSONWriter.quoted(String(decoding: response.body, as: UTF8.self)).utf8)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}
