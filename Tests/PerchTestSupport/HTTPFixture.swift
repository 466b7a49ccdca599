import Foundation
import PerchChat
import PerchHTTP
import PerchHost
import PerchService
import PerchTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

public let apiKey = "test-key-0123456789abcdef"

/// A host with the HTTP API on a free loopback port.
public struct HTTPChat: Sendable {
    public let chat: TestChat
    public let server: HTTPServer
    public let session: URLSession

    public var base: String { "http://127.0.0.1:\(server.port)" }

    public struct Answer: Sendable {
        public var status: Int
        public var body: Data
        /// The response's headers, by lowercased name.
        public var headers: [String: String] = [:]
        public var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        public var data: [String: Any] { json["data"] as? [String: Any] ?? [:] }
        public var list: [[String: Any]] { json["data"] as? [[String: Any]] ?? [] }
        public var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        public var errorField: String? {
            ((json["error"] as? [String: Any])?["details"] as? [String: Any])?["field"] as? String
        }
    }

    public enum As: Sendable {
        case app
        case user(String)
        case token(String)
        case nobody
        case key(String)
    }

    public func call(
        _ method: String, _ path: String, as who: As = .app, json: String? = nil, body: Data? = nil,
        headers: [String: String] = [:]
    ) async throws -> Answer {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = method
        switch who {
        case .app: request.setValue(apiKey, forHTTPHeaderField: "apikey")
        case .user(let uid):
            request.setValue(apiKey, forHTTPHeaderField: "apikey")
            request.setValue(uid, forHTTPHeaderField: "onBehalfOf")
        case .token(let token): request.setValue(token, forHTTPHeaderField: "authtoken")
        case .key(let key): request.setValue(key, forHTTPHeaderField: "apikey")
        case .nobody: break
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let json { request.httpBody = Data(json.utf8) }
        if let body { request.httpBody = body }
        // A JSON client's: a test of another type says so in `headers`.
        if request.httpBody != nil, !headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await session.data(for: request)
        var headers: [String: String] = [:]
        for case (let name as String, let value as String) in (response as? HTTPURLResponse)?.allHeaderFields ?? [:] {
            headers[name.lowercased()] = value
        }
        return Answer(status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: data, headers: headers)
    }

    /// Sends an image message to the group `guid` carrying `attachment` (an upload's answer).
    public func sendImage(_ attachment: [String: Any], to guid: String, as uid: String) async throws -> Answer {
        let json = try String(decoding: JSONSerialization.data(withJSONObject: attachment), as: UTF8.self)
        return try await call(
            "POST", "/v3/messages", as: .user(uid),
            json: """
                {"receiver": "\(guid)", "receiverType": "group", "type": "image", "data": {"attachments": [\(json)]}}
                """)
    }
}

public func withHTTPChat(
    config: String = hostConfig, bots: [String: String] = [:], maximumBody: Int = 64 * 1024, messagesPerMinute: Int = 0,
    web: WebSettings? = nil,
    maximumStreams: Int = 1_000, heartbeat: Duration = .seconds(1), socketHeartbeat: Duration = .seconds(15),
    idleTimeout: Duration = .seconds(60), headTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(30),
    connectionsPerClient: Int = 512, hostNames: [String] = [],
    registry: PluginRegistry = .standard, executor: (any TaskExecutor)? = nil,
    _ body: (HTTPChat) async throws -> Void
)
    async throws
{
    try await withTestHost(config: config, bots: bots, registry: registry, executor: executor) { chat in
        let media = MediaSettings(
            directory: chat.directory + "/media", maximumBytes: 32 * 1024, allowedTypes: ["image/png", "text/plain"])
        let api = PerchAPI(
            service: chat.service, host: chat.host, apiKey: apiKey, metrics: chat.host.metrics, media: media, web: web,
            maximumBodyBytes: maximumBody, messagesPerMinute: messagesPerMinute, heartbeat: socketHeartbeat,
            hostNames: hostNames)
        let server = try HTTPServer(
            host: "127.0.0.1", port: 0, maximumBodyBytes: max(maximumBody, 32 * 1024), heartbeat: heartbeat,
            maximumStreams: maximumStreams, idleTimeout: idleTimeout, headTimeout: headTimeout,
            bodyTimeout: bodyTimeout, connectionsPerClient: connectionsPerClient,
            metricsText: { chat.host.metrics.prometheusText },
            refused: { reason in
                chat.host.metrics.increment("perch_http_connections_refused_total", ["reason": reason])
            }
        ) {
            await api.respond(to: $0)
        }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 50
        let session = URLSession(configuration: configuration)
        // Stopping joins the server's connection threads: off the cooperative pool, which has only
        // two threads here and must stay free for the other tests' hosts.
        let stop = { @Sendable in
            session.invalidateAndCancel()
            server.stop()
        }
        do {
            try await body(HTTPChat(chat: chat, server: server, session: session))
        } catch {
            await onThread(stop)
            throw error
        }
        await onThread(stop)
    }
}

/// A minimal Server-Sent Events reader over a plain socket.
public final class SSEClient: @unchecked Sendable {
    // Used from one test at a time.
    public let handle: FileHandle
    public var buffer = ""
    /// Whether the server closed the connection (seen by ``readToEnd(timeout:)``).
    public var closed = false

    /// Connects; with a `path`, asks for that event stream (HTTP/1.0: the body is the stream).
    public init(port: UInt16, path: String?, headers: [String: String]) throws {
        handle = FileHandle(fileDescriptor: try connectLoopback(port: port), closeOnDealloc: true)
        guard let path else { return }
        var request = "GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        handle.write(Data(request.utf8))
    }

    /// Waits for the stream to open (its `perch.session` event).
    public func waitUntilOpen(timeout: TimeInterval = 5) {
        let deadline = Date().addingTimeInterval(timeout)
        var fds = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
        while Date() < deadline, !buffer.contains("perch.session") {
            if poll(&fds, 1, 100) > 0 {
                let data = handle.availableData
                if data.isEmpty { return }
                buffer += String(decoding: data, as: UTF8.self)
            }
        }
    }

    /// Reads until `count` events (lines starting with `event: ` other than perch.session) arrived
    /// or `timeout` passed; returns `(id, event)` pairs.
    public func events(_ count: Int, timeout: TimeInterval = 5) -> [(id: Int64, name: String)] {
        let deadline = Date().addingTimeInterval(timeout)
        var fds = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
        while Date() < deadline, parsed().count < count {
            if poll(&fds, 1, 100) > 0 {
                let data = handle.availableData
                if data.isEmpty { break }
                buffer += String(decoding: data, as: UTF8.self)
            }
        }
        return parsed()
    }

    /// Reads `count` HTTP/1.1 answers with a `Content-Length` (or what came in 5 s), in order.
    public func responses(_ count: Int, timeout: TimeInterval = 5) -> [(status: Int, body: String)] {
        let deadline = Date().addingTimeInterval(timeout)
        var bytes: [UInt8] = []
        var answers: [(Int, String)] = []
        var fds = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
        let separator: [UInt8] = [13, 10, 13, 10]
        while answers.count < count, Date() < deadline {
            // Take every complete answer the bytes hold.
            while let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) {
                let head = String(decoding: bytes[..<end], as: UTF8.self)
                let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
                let length =
                    head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                guard bytes.count >= end + 4 + length else { break }
                answers.append((status, String(decoding: bytes[(end + 4)..<(end + 4 + length)], as: UTF8.self)))
                bytes.removeFirst(end + 4 + length)
            }
            if answers.count < count, poll(&fds, 1, 100) > 0 {
                let data = handle.availableData
                if data.isEmpty { break }
                bytes += data
            }
        }
        return answers
    }

    /// Reads until the server closes the connection (or `timeout` passes): the whole answer.
    public func readToEnd(timeout: TimeInterval = 5) -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var fds = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
        while Date() < deadline {
            guard poll(&fds, 1, 100) > 0 else { continue }
            let data = handle.availableData
            if data.isEmpty {
                closed = true
                break
            }
            buffer += String(decoding: data, as: UTF8.self)
        }
        return buffer
    }

    public func parsed() -> [(id: Int64, name: String)] {
        var result: [(Int64, String)] = []
        var id: Int64?
        for line in buffer.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("id: ") { id = Int64(line.dropFirst(4)) }
            if line.hasPrefix("event: "), let current = id {
                result.append((current, String(line.dropFirst(7))))
                id = nil
            }
        }
        return result
    }
}

/// A test's connection to its server failed or timed out.
public struct HTTPServerErrorForTests: Error {
    public init() {}
}

/// A TCP socket connected to 127.0.0.1:`port`.
public func connectLoopback(port: UInt16) throws -> Int32 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
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
        throw HTTPServerErrorForTests()
    }
    return descriptor
}

/// Runs blocking work (socket reads) on a thread of its own, never on the concurrency pool, whose
/// two threads on this machine every other test's host needs.
/// What `body` throws is thrown here.
public func onThread<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    try await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: Result { () throws(E) -> T in try body() }) }
        thread.start()
    }.get()
}

/// Sends `request` as it is, byte for byte, on a new connection to 127.0.0.1:`port`, and reads
/// the answer until it is whole (its head and its `Content-Length`), the server closes the
/// connection, or `timeout` passes; the answer's text (status line, headers and body).
public func rawExchange(port: UInt16, _ request: [UInt8], timeout: TimeInterval = 5) throws -> String {
    try rawExchange(port: port, pieces: [request], pause: 0, timeout: timeout)
}

/// ``rawExchange(port:_:timeout:)`` of a request sent in `pieces`, `pause` microseconds apart (a slow
/// client); a piece the server no longer takes (it closed the connection) ends the sending.
public func rawExchange(port: UInt16, pieces: [[UInt8]], pause: UInt32, timeout: TimeInterval = 5) throws -> String {
    let descriptor = try connectLoopback(port: port)
    defer { close(descriptor) }
    sending: for (index, piece) in pieces.enumerated() {
        if index > 0 { usleep(pause) }
        var written = 0
        while written < piece.count {
            let count = piece[written...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { break sending }
            written += count
        }
    }
    var answer: [UInt8] = []
    let deadline = Date().addingTimeInterval(timeout)
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while Date() < deadline {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 100) >= 0 else { break }
        guard poller.revents != 0 else { continue }
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { break }
        answer += buffer[0..<count]
        if isWhole(answer) { break }
    }
    return String(decoding: answer, as: UTF8.self)
}

/// Whether `answer` holds a whole HTTP response with a `Content-Length`.
private func isWhole(_ answer: [UInt8]) -> Bool {
    let text = String(decoding: answer, as: UTF8.self)
    guard let end = text.range(of: "\r\n\r\n") else { return false }
    let head = text[..<end.lowerBound].lowercased()
    guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
        let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
    else { return false }
    return text[end.upperBound...].utf8.count >= length
}

/// ``rawExchange(port:_:timeout:)`` of a text request (its line ends written as given).
public func rawExchange(port: UInt16, _ request: String, timeout: TimeInterval = 5) throws -> String {
    try rawExchange(port: port, Array(request.utf8), timeout: timeout)
}
