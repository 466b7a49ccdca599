import Foundation
import PerchLock
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One blocking HTTP/1.1 keep-alive connection to 127.0.0.1 (the loopback bench's client side).
final class HTTPConnection: @unchecked Sendable {
    let descriptor: Int32
    /// Received bytes; those before `start` are consumed.
    private var buffer: [UInt8] = []
    private var start = 0
    private var chunk = [UInt8](repeating: 0, count: 65_536)

    init(port: UInt16) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            throw BenchError("cannot connect to 127.0.0.1:\(port)")
        }
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(descriptor) }

    func write(_ text: String) throws {
        try write(bytes: Array(text.utf8))
    }

    func write(bytes frame: [UInt8]) throws {
        var bytes = frame[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { throw BenchError("write failed: errno \(errno)") }
            bytes = bytes.dropFirst(written)
        }
    }

    /// Reads more bytes into the buffer (dropping what was consumed first); false at the end of
    /// the stream.
    func fill() -> Bool {
        if start > 0 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    /// The next line's bytes (without CRLF or LF), valid until the next call; nil at the end of
    /// the stream.
    func lineBytes() -> ArraySlice<UInt8>? {
        while true {
            if let end = buffer[start...].firstIndex(of: 10) {
                var line = buffer[start..<end]
                if line.last == 13 { line = line.dropLast() }
                start = end + 1
                return line
            }
            guard fill() else { return nil }
        }
    }

    /// Whether received bytes wait to be consumed.
    var hasBufferedBytes: Bool { start < buffer.count }

    /// The received bytes not consumed yet, which are no longer this connection's to read.
    func takeBuffered() -> [UInt8] {
        defer {
            buffer = []
            start = 0
        }
        return Array(buffer[start...])
    }

    /// Waits until the socket has bytes to read (or is closed), at most `milliseconds`; false when
    /// the time passed.
    func waitReadable(milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) > 0
    }

    /// The next chunk of a chunked body (its headers already read), appended to `decoded`; false at
    /// the body's or the stream's end. A chunk's end says nothing about lines: a line may span chunks.
    func readChunk(into decoded: inout [UInt8]) -> Bool {
        guard let sizeLine = lineBytes() else { return false }
        let digits = sizeLine.prefix { $0 != UInt8(ascii: ";") }
        guard let size = Int(String(decoding: digits, as: UTF8.self), radix: 16), size > 0 else { return false }
        while buffer.count - start < size + 2 { guard fill() else { return false } }
        decoded.append(contentsOf: buffer[start..<start + size])
        start += size + 2  // the chunk and its CRLF
        return true
    }

    /// The next line (without CRLF or LF), or nil at the end of the stream.
    func line() -> String? { lineBytes().map { String(decoding: $0, as: UTF8.self) } }

    /// Sends one request and reads its response: the status and the body.
    func request(_ method: String, _ path: String, headers: [String: String], body: String = "") throws -> (
        status: Int, body: String
    ) {
        try write(Self.requestText(method, path, headers: headers, body: body))
        return try response()
    }

    static func requestText(_ method: String, _ path: String, headers: [String: String], body: String) -> String {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body.utf8.count)\r\n\r\n"
        return head + body
    }

    /// Reads the next response: the status and the body.
    func response() throws -> (status: Int, body: String) {
        guard let statusLine = line() else { throw BenchError("connection closed") }
        let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") ?? 0
        var length = 0
        while let header = line(), !header.isEmpty {
            let parts = header.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length" {
                length = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        while buffer.count - start < length { guard fill() else { throw BenchError("connection closed") } }
        let text = String(decoding: buffer[start..<start + length], as: UTF8.self)
        start += length
        return (status, text)
    }
}

/// The person's side over the HTTP API: `POST /v3/messages` on keep-alive connections.
final class LoopbackInjector: Injector, @unchecked Sendable {
    let port: UInt16
    let key: String
    /// The person's event stream's session: posts name it, so the stream is not sent the person's
    /// own messages (as a CometChat sender is not, and as the peers' websocket servers do not echo).
    let session: String
    /// The person's stream, read right after each post of the closed loop.
    let events: EventStreamReader
    let lanes: Int
    /// Requests each lane writes before it reads their responses (HTTP/1.1 pipelining).
    let depth: Int
    private let connections = Mutex<[HTTPConnection]>([])

    init(port: UInt16, key: String, session: String, events: EventStreamReader, lanes: Int, depth: Int) {
        self.port = port
        self.key = key
        self.session = session
        self.events = events
        self.lanes = lanes
        self.depth = depth
    }

    func postText(_ text: String) -> String {
        let body =
            #"{"receiver":"room","receiverType":"group","category":"message","type":"text","data":{"text":"\#(text)"}}"#
        return HTTPConnection.requestText(
            "POST", "/v3/messages",
            headers: [
                "apikey": key, "onBehalfOf": "human", "X-Perch-Session": session, "Content-Type": "application/json",
            ], body: body)
    }

    func post(_ text: String, on connection: HTTPConnection) throws {
        try connection.write(postText(text))
        try check(connection.response())
    }

    func check(_ response: (status: Int, body: String)) throws {
        guard response.status == 200 else { throw BenchError("POST /v3/messages: \(response.status) \(response.body)") }
    }

    func readReplies(until done: () -> Bool, idle: Double) {
        events.read(until: done, idle: idle)
    }

    private func borrow() throws -> HTTPConnection {
        if let connection = connections.withLock({ $0.popLast() }) { return connection }
        return try HTTPConnection(port: port)
    }

    func send(_ text: String) async throws {
        let connection = try borrow()
        try post(text, on: connection)
        connections.withLock { $0.append(connection) }
    }

    /// `lanes` connections, each on its own thread, message i on lane i mod lanes: each lane posts
    /// in index order, up to `depth` requests ahead of their answers (HTTP/1.1 pipelining: the
    /// client does not wait for a POST's answer to send the next, as the peers' websocket client
    /// does not wait; the server still answers each after its commit, in order). A lane's posts
    /// reach the server in index order; the server commits what arrives together in one batch.
    func burst(_ texts: [String], injected: @Sendable (Int) -> Void) async throws {
        let failures = Failures()
        let lanes = lanes
        let depth = depth
        let connections = try (0..<lanes).map { _ in try borrow() }
        withoutActuallyEscaping(injected) { injected in
            laneThreads(lanes) { lane in
                var index = lane
                var outstanding = 0
                do {
                    while index < texts.count {
                        if outstanding == depth {
                            try check(connections[lane].response())
                            outstanding -= 1
                        }
                        injected(index)
                        try connections[lane].write(postText(texts[index]))
                        outstanding += 1
                        index += lanes
                    }
                    while outstanding > 0 {
                        try check(connections[lane].response())
                        outstanding -= 1
                    }
                } catch {
                    failures.add("lane \(lane): \(error)")
                    return
                }
            }
        }
        self.connections.withLock { $0.append(contentsOf: connections) }
        if let first = failures.first { throw BenchError("a burst post failed: \(first)") }
    }

}

/// Runs `body(lane)` for every lane at once, each on a thread of its own, and returns when every
/// thread has ended. (`DispatchQueue.concurrentPerform` runs no more iterations at once than there
/// are CPUs, while a lane spends most of its time blocked on its socket: with 4 lanes on 2 CPUs
/// two lanes waited for the others to finish.) Joined, not signalled, so that no thread still holds
/// `body` when this returns.
func laneThreads(_ lanes: Int, _ body: (Int) -> Void) {
    withoutActuallyEscaping(body) { body in
        let threads = (0..<lanes).map { lane -> pthread_t in
            let context = Unmanaged.passRetained(LaneContext { body(lane) }).toOpaque()
            var thread = pthread_t()
            let status = pthread_create(
                &thread, nil,
                { raw in
                    let context = Unmanaged<LaneContext>.fromOpaque(raw!).takeRetainedValue()
                    context.run()
                    return nil
                }, context)
            precondition(status == 0, "pthread_create: \(status)")
            return thread
        }
        for thread in threads { pthread_join(thread, nil) }
    }
}

/// One lane's work, handed to its thread.
private final class LaneContext: @unchecked Sendable {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

/// The person's event stream (`GET /v3/events`): every bot message's text goes to the router. A
/// thread of its own reads it until the closed loop takes it over (``read(until:idle:)``); from then
/// on the closed loop's task reads it right after each post, as the peers' asyncio client reads its
/// websocket on the loop that sends, so a reply wakes one thread of the client, not two.
final class EventStreamReader: @unchecked Sendable {
    private let connection: HTTPConnection
    private let router: ReplyRouter
    private let connected: @Sendable (_ session: String) -> Void
    private let reading = HandedOverReading()
    // Used by the reader of the moment only.
    private var decoded: [UInt8] = []
    private var announced = false
    private var signalled = false

    /// Opens the stream and starts its thread; `connected` gets the stream's session once it is
    /// announced.
    init(
        port: UInt16, key: String, router: ReplyRouter, connected: @escaping @Sendable (_ session: String) -> Void
    ) throws {
        connection = try HTTPConnection(port: port)
        self.router = router
        self.connected = connected
        try connection.write(
            "GET /v3/events HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: \(key)\r\nonBehalfOf: human\r\n"
                + "Accept: text/event-stream\r\n\r\n")
        reading.start(
            first: { [self] in
                // The status line and headers; the stream's body is chunked (its length is unknown).
                while let header = connection.lineBytes(), !header.isEmpty {}
            }, step: step)
    }

    /// Reads the stream on the caller's thread until `done`, or until nothing came for `idle`
    /// seconds, or the stream ends (the first call takes it over from the thread).
    func read(until done: () -> Bool, idle: Double) {
        reading.takeOver(until: done, idle: idle, step: step)
    }

    /// Reads one chunk once bytes are there, within `milliseconds`: whether it did (nil: none came).
    private func step(_ milliseconds: Int32) -> Bool? {
        guard connection.hasBufferedBytes || connection.waitReadable(milliseconds: milliseconds) else { return nil }
        return readChunk()
    }

    /// Reads one chunk and handles the lines it completes; false at the end of the stream.
    private func readChunk() -> Bool {
        guard connection.readChunk(into: &decoded) else { return false }
        var lineStart = 0
        while let end = decoded[lineStart...].firstIndex(of: 10) {
            var line = decoded[lineStart..<end]
            if line.last == 13 { line = line.dropLast() }
            handle(line)
            lineStart = end + 1
        }
        decoded.removeSubrange(0..<lineStart)
        return true
    }

    private func handle(_ line: ArraySlice<UInt8>) {
        if !signalled {
            // `event: perch.session`, then `data: {"session":"ID"}`: the stream's session, which
            // the person's posts name so the stream is not sent their own messages.
            if line.starts(with: "event: perch.session".utf8) { announced = true }
            if announced, line.starts(with: "data: ".utf8), let session = field(sessionKey, in: line) {
                signalled = true
                connected(String(decoding: session, as: UTF8.self))
            }
            return
        }
        guard line.starts(with: #"data: {"seq""#.utf8), let message = find(messageKey, in: line),
            let sender = field(senderKey, in: line[message...]), !sender.elementsEqual("human".utf8),
            let text = field(textKey, in: line[message...])
        else { return }
        router.deliver(String(decoding: text, as: UTF8.self))
    }
}

/// A stream read by a thread of its own until a caller takes it over (``takeOver(until:idle:step:)``)
/// and from then on reads it on its own thread, as the peers' asyncio client reads its socket on the
/// loop that sends: a reply then wakes one thread of the client, not two.
final class HandedOverReading: Sendable {
    /// Held by whoever reads the stream: the thread, then the caller.
    private let reading = NSLock()
    private let handedOver = Mutex(false)

    /// Starts the thread: `first`, then `step` (which handles what is buffered, or waits at most
    /// the milliseconds it is given for bytes and reads them: nil when none came, false at the
    /// stream's end) until the stream is taken over. The thread waits 2 ms at a time, so it is
    /// never blocked in a read when the caller takes over (a reply read just before would leave
    /// the caller waiting for bytes that only a heartbeat sends), and stops within 2 ms.
    func start(first: @escaping @Sendable () -> Void = {}, step: @escaping @Sendable (Int32) -> Bool?) {
        Thread.detachNewThread { [self] in
            reading.lock()
            defer { reading.unlock() }
            first()
            while !handedOver.withLock({ $0 }) {
                if step(2) == false { return }
            }
        }
    }

    /// Reads with `step` on the caller's thread until `done`, or until nothing came for `idle`
    /// seconds, or the stream ends; the first call takes the stream over from the thread.
    func takeOver(until done: () -> Bool, idle: Double, step: (Int32) -> Bool?) {
        handedOver.withLock { $0 = true }
        reading.lock()
        defer { reading.unlock() }
        while !done() {
            guard step(Int32(idle * 1000)) == true else { return }
        }
    }
}

let sessionKey = Array(#""session":""#.utf8)
let messageKey = Array(#""message":{"#.utf8)
let senderKey = Array(#""sender":""#.utf8)
let textKey = Array(#""text":""#.utf8)

/// Where the bytes after the first `needle` in `haystack` start.
func find(_ needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
    guard let first = needle.first, haystack.count >= needle.count else { return nil }
    var index = haystack.startIndex
    let last = haystack.endIndex - needle.count
    while index <= last {
        if haystack[index] == first, haystack[index..<index + needle.count].elementsEqual(needle) {
            return index + needle.count
        }
        index += 1
    }
    return nil
}

/// A string field's bytes in `json`, found by its key with the opening quote (the texts of
/// peers-v1 need no unescaping).
func field(_ key: [UInt8], in json: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
    guard let start = find(key, in: json), let end = json[start...].firstIndex(of: UInt8(ascii: "\""))
    else { return nil }
    return json[start..<end]
}

/// A free TCP port on 127.0.0.1.
func freePort() throws -> UInt16 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
        }
    }
    guard bound else { throw BenchError("no free port") }
    return UInt16(bigEndian: address.sin_port)
}

/// How the loopback bench's person talks to `perch run`.
enum LoopbackTransport: String {
    /// `POST /v3/messages` on keep-alive connections; replies from the SSE stream.
    case http
    /// One WebSocket (`GET /v3/ws`) for the posts, their answers and the replies.
    case websocket
}

/// peers-v1 over the HTTP API: `perch run` on the bench configuration in a child process; the
/// person posts with `POST /v3/messages` and the replies are read from the person's SSE stream,
/// or both go over one WebSocket. Startup counts from spawning `perch`; peak RSS is the server's,
/// from `wait4`.
func runLoopback(_ options: Options, perch: String, configPath: String, transport: LoopbackTransport) async throws
    -> [String: Any]
{
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-peers-\(UUID().uuidString)")
        .path
    defer {
        if ProcessInfo.processInfo.environment["PERCH_BENCH_KEEP"] == nil {
            try? FileManager.default.removeItem(atPath: directory)
        } else {
            FileHandle.standardError.write(Data("kept \(directory)\n".utf8))
        }
    }
    let port = try freePort()
    let key = (0..<4).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 16) }.joined()
    var environment = ProcessInfo.processInfo.environment
    environment["PERCH_API_KEY"] = key
    environment["PERCH_BENCH_DATA"] = directory
    environment["PERCH_BENCH_LISTEN"] = "127.0.0.1:\(port)"
    let argv = [perch, "run", "--config", configPath]
    let spawnedAt = monotonicNanoseconds()
    var pid: pid_t = 0
    let status = withCStrings(argv) { arguments in
        withCStrings(environment.map { "\($0.key)=\($0.value)" }) { variables in
            posix_spawn(&pid, perch, nil, nil, arguments, variables)
        }
    }
    guard status == 0 else { throw BenchError("cannot start \(perch): \(String(cString: strerror(status)))") }
    ChildGuard.watch(pid)
    defer {
        // Not stopped and reaped (a phase threw): kill it.
        let running = ChildGuard.release()
        if running > 0 { kill(running, SIGKILL) }
    }
    // Ready when /readyz answers; then the person's stream, then the probe.
    var ready = false
    let deadline = Date().addingTimeInterval(30)
    while !ready, Date() < deadline {
        if let connection = try? HTTPConnection(port: port),
            let response = try? connection.request("GET", "/readyz", headers: [:]), response.status == 200
        {
            ready = true
        } else {
            usleep(2_000)
        }
    }
    guard ready else { throw BenchError("perch did not become ready") }
    let router = ReplyRouter()
    if transport == .websocket {
        let injector = try WebSocketInjector(port: port, key: key, router: router)
        var result = try await runPhases(options, injector: injector, router: router, spawnedAt: spawnedAt)
        result.merge(stop(pid)) { $1 }
        result["client_transport"] = "websocket"
        return result
    }
    let subscribed = Mutex<CheckedContinuation<String, Never>?>(nil)
    let isConnected = Mutex(false)
    let reader = Mutex<EventStreamReader?>(nil)
    let session = await withCheckedContinuation { continuation in
        subscribed.withLock { $0 = continuation }
        let opened = try? EventStreamReader(port: port, key: key, router: router) { session in
            guard
                !isConnected.withLock({ flag in
                    defer { flag = true }; return flag
                })
            else { return }
            subscribed.withLock { $0 }?.resume(returning: session)
        }
        reader.withLock { $0 = opened }
        // Not opened: nothing will announce a session, so the wait ends here (and the run fails).
        if opened == nil,
            !isConnected.withLock({ flag in
                defer { flag = true }; return flag
            })
        {
            continuation.resume(returning: "")
        }
    }
    guard let events = reader.withLock({ $0 }) else { throw BenchError("cannot open the event stream") }
    let injector = LoopbackInjector(
        port: port, key: key, session: session, events: events,
        // 16 connections, as a client's connection pool would hold (libmicrohttpd answers one
        // request at a time per connection; PERCH_BENCH_LANES tries others).
        lanes: max(1, Int(environment["PERCH_BENCH_LANES"] ?? "") ?? 16),
        depth: max(1, Int(environment["PERCH_BENCH_DEPTH"] ?? "") ?? 16))
    var result = try await runPhases(options, injector: injector, router: router, spawnedAt: spawnedAt)
    result.merge(stop(pid)) { $1 }
    result["client_lanes"] = injector.lanes
    result["client_pipeline_depth"] = injector.depth
    return result
}

/// Stops `perch` and answers its peak RSS and CPU time.
func stop(_ pid: pid_t) -> [String: Any] {
    kill(pid, SIGTERM)
    var usage = rusage()
    var exitStatus: Int32 = 0
    _ = wait4(pid, &exitStatus, 0, &usage)
    ChildGuard.release()
    return [
        "server_maxrss_kb": usage.ru_maxrss,
        "server_cpu_s": Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6,
    ]
}
