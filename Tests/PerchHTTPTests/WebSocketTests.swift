import Foundation
import PerchLock
import PerchTestSupport
import Testing

@testable import PerchHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// RFC 6455's framing, without a socket.
@Suite struct WebSocketFramingTests {
    /// RFC 6455 section 1.3's example.
    @Test func theAcceptValueIsTheRFCsExample() {
        #expect(WebSocket.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(WebSocket.isValidKey("dGhlIHNhbXBsZSBub25jZQ=="))
        #expect(!WebSocket.isValidKey("short"))
        #expect(!WebSocket.isValidKey("not base64 at all!!!!!!="))
    }

    /// RFC 6455 section 5.7's examples: a masked "Hello" and the three lengths' encodings.
    @Test func framesReadAndWriteAsTheRFCsExamples() throws {
        let masked: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        let read = try #require(try WebSocket.frame(in: masked, at: 0, masked: true, maximumPayload: 100))
        #expect(read.frame == WebSocket.Frame(opcode: .text, payload: Array("Hello".utf8)))
        #expect(read.next == masked.count)
        var written: [UInt8] = []
        WebSocket.append(.text, Array("Hello".utf8), mask: [0x37, 0xFA, 0x21, 0x3D], to: &written)
        #expect(written == masked)
        var unmasked: [UInt8] = []
        WebSocket.append(.text, Array("Hello".utf8), to: &unmasked)
        #expect(unmasked == [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        for count in [125, 126, 65_535, 65_536, 70_000] {
            var frame: [UInt8] = []
            let payload = [UInt8](repeating: 0x61, count: count)
            WebSocket.append(.binary, payload, to: &frame)
            #expect(frame.count == count + (count < 126 ? 2 : count <= 65_535 ? 4 : 10))
            let back = try #require(try WebSocket.frame(in: frame, at: 0, masked: false, maximumPayload: 1 << 20))
            #expect(back.frame.payload == payload)
            // Cut short anywhere, it is not there yet.
            #expect(
                try WebSocket.frame(in: Array(frame.dropLast()), at: 0, masked: false, maximumPayload: 1 << 20) == nil)
            #expect(
                try WebSocket.frame(in: Array(frame.prefix(3)), at: 0, masked: false, maximumPayload: 1 << 20) == nil)
        }
    }

    @Test func framesThatBreakTheProtocolAreRefusedWithTheirCloseCode() {
        func code(_ bytes: [UInt8], masked: Bool = true, maximum: Int = 100) -> UInt16? {
            do {
                _ = try WebSocket.frame(in: bytes, at: 0, masked: masked, maximumPayload: maximum)
                return nil
            } catch { return error.code }
        }
        let mask: [UInt8] = [1, 2, 3, 4]
        #expect(code([0x81, 0x00]) == 1002)  // a client's frame unmasked
        #expect(code([0x81, 0x80] + mask, masked: false) == 1002)  // a server's frame masked
        #expect(code([0xC1, 0x80] + mask) == 1002)  // a reserved bit
        #expect(code([0x83, 0x80] + mask) == 1002)  // opcode 3 is reserved
        #expect(code([0x09, 0x80] + mask) == 1002)  // a fragmented ping
        #expect(code([0x89, 0xFE, 0x00, 0x7E] + mask) == 1002)  // a ping of 126 bytes
        #expect(code([0x81, 0xFE, 0x01, 0x00] + mask) == 1009)  // 256 bytes against 100
    }

    @Test func theAssemblerJoinsFragmentsAndAnswersControlFramesBetweenThem() throws {
        var assembler = WebSocket.Assembler(maximumMessage: 10)
        #expect(try assembler.add(.init(fin: false, opcode: .text, payload: Array("Hel".utf8))) == nil)
        #expect(try assembler.add(.init(opcode: .ping, payload: [7])) == .ping([7]))
        #expect(try assembler.add(.init(fin: false, opcode: .continuation, payload: Array("lo ".utf8))) == nil)
        #expect(
            try assembler.add(.init(opcode: .continuation, payload: Array("you".utf8)))
                == .text(Array("Hello you".utf8)))
        #expect(try assembler.add(.init(opcode: .pong, payload: [])) == .pong)
        #expect(
            try assembler.add(.init(opcode: .close, payload: [0x03, 0xE8] + Array("bye".utf8))) == .close(1000, "bye"))
        #expect(try assembler.add(.init(opcode: .close, payload: [])) == .close(nil, ""))

        func refusal(_ frames: [WebSocket.Frame]) -> UInt16? {
            var assembler = WebSocket.Assembler(maximumMessage: 10)
            do {
                for frame in frames { _ = try assembler.add(frame) }
                return nil
            } catch { return error.code }
        }
        #expect(refusal([.init(opcode: .binary, payload: [1])]) == 1003)
        #expect(refusal([.init(opcode: .text, payload: [0xFF, 0xFE])]) == 1007)
        #expect(refusal([.init(opcode: .continuation, payload: [0x61])]) == 1002)
        #expect(
            refusal([.init(fin: false, opcode: .text, payload: [0x61]), .init(opcode: .text, payload: [0x61])]) == 1002)
        #expect(
            refusal([
                .init(fin: false, opcode: .text, payload: Array("123456".utf8)),
                .init(opcode: .continuation, payload: Array("789012".utf8)),
            ]) == 1009)
        #expect(refusal([.init(opcode: .close, payload: [0x03])]) == 1002)
        #expect(refusal([.init(opcode: .close, payload: [0x03, 0xED])]) == 1002)  // 1005 may not be sent
        #expect(refusal([.init(opcode: .close, payload: [0x03, 0xE8, 0xFF])]) == 1007)
    }
}

/// A WebSocket client over a plain socket, for the tests: the handshake, masked frames out, the
/// server's frames in.
final class WebSocketTestClient: @unchecked Sendable {
    // Used from one test thread at a time.
    let descriptor: Int32
    var buffer: [UInt8] = []
    /// The server closed the connection.
    var ended = false
    /// The handshake's answer: the status line's code and the headers, lowercased names.
    var status = 0
    var headers: [String: String] = [:]

    init(
        port: UInt16, path: String = "/v3/ws", headers extra: [String: String], key: String = "dGhlIHNhbXBsZSBub25jZQ=="
    )
        throws
    {
        descriptor = try connectLoopback(port: port)
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        var handshake = [
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13",
        ]
        for (name, value) in extra { handshake[name] = value }
        for (name, value) in handshake where !value.isEmpty { request += "\(name): \(value)\r\n" }
        write(Array((request + "\r\n").utf8))
        // The answer's head.
        let separator: [UInt8] = [13, 10, 13, 10]
        while true {
            if let end = buffer.indices.first(where: { buffer[$0...].starts(with: separator) }) {
                let head = String(decoding: buffer[..<end], as: UTF8.self).split(separator: "\r\n")
                status = Int(head.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
                for line in head.dropFirst() {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    if parts.count == 2 {
                        headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
                    }
                }
                buffer.removeFirst(end + 4)
                return
            }
            guard fill(timeout: 5) else { throw HTTPServerErrorForTests() }
        }
    }

    /// A client on a socket connected already (one end of a `socketpair`, the server's loop on the
    /// other), past any handshake.
    init(connected descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    func write(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { return }
            sent += count
        }
    }

    /// Sends one masked frame.
    func send(_ opcode: WebSocket.Opcode, _ payload: [UInt8], fin: Bool = true) {
        var frame: [UInt8] = []
        WebSocket.append(opcode, payload, fin: fin, mask: (0..<4).map { _ in UInt8.random(in: 0...255) }, to: &frame)
        write(frame)
    }

    func sendText(_ text: String) { send(.text, Array(text.utf8)) }

    /// Reads more bytes, waiting at most `timeout` seconds; false at the end or on time.
    func fill(timeout: Double) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, Int32(timeout * 1000)) > 0 else { return false }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            ended = true
            return false
        }
        buffer += chunk[0..<count]
        return true
    }

    /// The server's next frame, or nil when none came in `timeout` seconds or the socket closed.
    func frame(timeout: Double = 5) -> WebSocket.Frame? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let (frame, next) = try? WebSocket.frame(in: buffer, at: 0, masked: false, maximumPayload: 1 << 24) {
                buffer.removeFirst(next)
                return frame
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0, fill(timeout: left) else { return nil }
        }
    }

    /// The next text message as JSON (control frames skipped), or nil.
    func message(timeout: Double = 5) -> [String: Any]? {
        while let frame = frame(timeout: timeout) {
            guard frame.opcode == .text else {
                if frame.opcode == .close { return nil }
                continue
            }
            return (try? JSONSerialization.jsonObject(with: Data(frame.payload))) as? [String: Any]
        }
        return nil
    }

    /// Messages until `predicate` holds for one (returned with those before it), or nil on time.
    func messages(until predicate: ([String: Any]) -> Bool, timeout: Double = 5) -> [[String: Any]]? {
        var seen: [[String: Any]] = []
        while let next = message(timeout: timeout) {
            seen.append(next)
            if predicate(next) { return seen }
        }
        return nil
    }

    /// Sends a request and reads until its answer: the answer, and the events that came before it.
    func request(_ id: Int, _ method: String, _ path: String, body: String? = nil) -> (
        answer: [String: Any]?, events: [[String: Any]]
    ) {
        sendText(#"{"id":\#(id),"method":"\#(method)","path":"\#(path)"\#(body.map { #","body":\#($0)"# } ?? "")}"#)
        let seen = messages { $0["type"] as? String == "response" && $0["id"] as? Int == id } ?? []
        return (
            seen.last.flatMap { $0["type"] as? String == "response" ? $0 : nil },
            seen.filter { $0["type"] as? String == "event" }
        )
    }
}

extension [String: Any] {
    var status: Int? { self["status"] as? Int }
    var errorCode: String? { ((self["body"] as? [String: Any])?["error"] as? [String: Any])?["code"] as? String }
    var eventName: String? { self["event"] as? String }
    var eventText: String? {
        ((self["data"] as? [String: Any])?["message"] as? [String: Any])?["text"] as? String
    }
}

@Suite struct WebSocketEndpointTests {
    let user = ["apikey": apiKey, "onBehalfOf": "bob"]
    /// Answers `!ping N` with `pong N`.
    static let pingBot = botFile(
        """
          - on: message
            when: { text_matches: "^!ping (?<n>\\\\d+)$" }
            do: [{ reply: "pong {n}" }]
        """)

    @Test func aSocketCarriesTheCallersRequestsAndEventsButNotItsOwnMessages() async throws {
        try await withHTTPChat(bots: ["pinger.yaml": Self.pingBot]) { http in
            let port = http.server.port
            let user = user
            let handshake = try await onThread { () throws -> [String] in
                let client = try WebSocketTestClient(port: port, headers: user)
                defer { client.send(.close, WebSocket.closePayload(1000, "")) }
                let greeting = client.message()
                return [
                    "\(client.status)", client.headers["upgrade"] ?? "-", client.headers["connection"] ?? "-",
                    client.headers["sec-websocket-accept"] ?? "-", greeting?["type"] as? String ?? "-",
                ]
            }
            #expect(handshake == ["101", "websocket", "Upgrade", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "session"])

            let log = try await onThread { () throws -> [String] in
                let client = try WebSocketTestClient(port: port, path: "/v3/ws?session=laptop", headers: user)
                var log: [String] = []
                log.append("greeting \(client.message()?["session"] as? String ?? "-")")
                // Bob's message: answered 200 with the message; the bot's reply comes as an
                // event; bob's own message does not (it was sent from this session).
                let sent = client.request(
                    1, "POST", "/v3/messages",
                    body: #"{"receiver":"room","receiverType":"group","data":{"text":"!ping 7"}}"#)
                let message = sent.answer?["body"] as? [String: Any]
                log.append(
                    "answer \(sent.answer?.status ?? 0) \(((message?["data"] as? [String: Any])?["sender"] as? String) ?? "-")"
                )
                // Generous: a loaded run (ThreadSanitizer, every suite at once) took up to 6 s.
                let reply = client.messages(until: { $0.eventText == "pong 7" }, timeout: 30)
                log.append("events \((sent.events + (reply ?? [])).compactMap(\.eventText))")
                // Carol's message comes as an event.
                log.append(
                    "listed \(client.request(2, "GET", "/v3/groups/room/messages?limit=2").answer?.status ?? 0)")
                return log
            }
            #expect(log == ["greeting laptop", "answer 200 bob", "events [\"pong 7\"]", "listed 200"])
        }
    }

    @Test func requestsAreAnsweredInOrderWithTheirIdsAndRefusalsKeepTheSocketOpen() async throws {
        try await withHTTPChat { http in
            let port = http.server.port
            let user = user
            let answers = try await onThread { () throws -> [String] in
                let client = try WebSocketTestClient(port: port, headers: user)
                _ = client.message()
                // Ten sends written at once: answered in order, stored in order.
                for index in 0..<10 {
                    client.sendText(
                        #"{"id":"s\#(index)","method":"POST","path":"/v3/messages","body":{"receiver":"room","receiverType":"group","data":{"text":"m\#(index)"}}}"#
                    )
                }
                var log: [String] = []
                let ids = (0..<10).compactMap { _ in
                    client.messages { $0["type"] as? String == "response" }?.last?["id"] as? String
                }
                log.append(ids.joined(separator: ","))
                // Refusals: a typed error each, the socket still open.
                client.sendText("not json")
                log.append("\(client.message()?.errorCode ?? "-")")
                log.append(
                    "\(client.request(3, "POST", "/v3/messages", body: #"{"receiver":"room","receiverType":"group","data":{"text":""}}"#).answer?.errorCode ?? "-")"
                )
                log.append("\(client.request(4, "GET", "/v3/events").answer?.errorCode ?? "-")")
                log.append(
                    "\(client.request(5, "POST", "/v3/users", body: #"{"uid":"x","name":"X"}"#).answer?.errorCode ?? "-")"
                )
                log.append("\(client.request(6, "GET", "/v3/nowhere").answer?.status ?? 0)")
                log.append("\(client.request(7, "GET", "/healthz").answer?["body"] as? String ?? "-")")
                return log
            }
            #expect(answers[0] == (0..<10).map { "s\($0)" }.joined(separator: ","))
            #expect(
                Array(answers.dropFirst()) == [
                    "ERR_BAD_REQUEST", "ERR_EMPTY_MESSAGE_TEXT", "ERR_BAD_REQUEST", "AUTH_ERR_APIKEY_NOT_FOUND", "404",
                    "ok\n",
                ])
            let stored = try await http.call("GET", "/v3/groups/room/messages?limit=10", as: .user("bob"))
            #expect(stored.list.compactMap { $0["text"] as? String } == (0..<10).map { "m\($0)" })
        }
    }

    @Test func sendsWrittenBackToBackAreStoredInOrderAndAReadAmongThemSeesThoseBefore() async throws {
        // 200 requests written at once, a bot answering each message: sends start while those
        // before them wait for their commits (WebSocketPipeliningTests), and must still be stored,
        // answered and refused in order, with a read among them seeing every send before it.
        try await withHTTPChat(bots: ["pinger.yaml": Self.pingBot]) { http in
            let port = http.server.port
            let user = user
            let raw = try await onThread { () throws -> [Data] in
                let client = try WebSocketTestClient(port: port, headers: user)
                _ = client.message()
                for index in 0..<200 {
                    let text = index == 60 ? "" : "!ping \(index)"
                    let receiver = index == 90 ? "nowhere" : "room"
                    client.sendText(
                        index == 120
                            ? #"{"id":120,"method":"GET","path":"/v3/groups/room/messages?limit=10"}"#
                            : #"{"id":\#(index),"method":"POST","path":"/v3/messages","body":{"receiver":"\#(receiver)","receiverType":"group","data":{"text":"\#(text)"}}}"#
                    )
                }
                return try (0..<200).compactMap { _ in
                    try client.messages { $0["type"] as? String == "response" }?.last.map {
                        try JSONSerialization.data(withJSONObject: $0)
                    }
                }
            }
            let answers = try raw.map { try #require(JSONSerialization.jsonObject(with: $0) as? [String: Any]) }
            #expect(answers.compactMap { $0["id"] as? Int } == Array(0..<200))
            #expect(answers.count == 200)
            guard answers.count == 200 else { return }
            #expect(answers[60].errorCode == "ERR_EMPTY_MESSAGE_TEXT")
            #expect(answers[90].errorCode == "ERR_GUID_NOT_FOUND")
            // Every other send answered with its message; their ids grow in the order sent.
            let sent = answers.indices.filter { ![60, 90, 120].contains($0) }
            #expect(sent.allSatisfy { answers[$0].status == 200 })
            let ids = sent.compactMap {
                ((answers[$0]["body"] as? [String: Any])?["data"] as? [String: Any])?["id"] as? Int
            }
            #expect(ids.count == sent.count)
            #expect(ids == ids.sorted() && Set(ids).count == ids.count)
            // The read sees bob's sends up to the one right before it, and none after it. (It lists
            // the room's newest ten, which may all be the bot's replies: a listing that does not
            // reach the send right before it was read before that send's commit.)
            let listed = (answers[120]["body"] as? [String: Any])?["data"] as? [[String: Any]] ?? []
            let idOf119 = ((answers[119]["body"] as? [String: Any])?["data"] as? [String: Any])?["id"] as? Int ?? .max
            #expect(listed.compactMap { $0["id"] as? Int }.max() ?? 0 >= idOf119)
            let bobs = listed.filter { $0["sender"] as? String == "bob" }.compactMap { $0["text"] as? String }
            #expect(!bobs.contains { Int($0.dropFirst(6)).map { $0 > 119 } ?? true })
            // Stored in the order sent, each answered by the bot.
            var texts: [String] = []
            var before: Int?
            repeat {
                let page = try await http.call(
                    "GET", "/v3/groups/room/messages?limit=100" + (before.map { "&id=\($0)" } ?? ""), as: .user("bob"))
                let messages = page.list
                texts =
                    messages.filter { $0["sender"] as? String == "bob" }.compactMap { $0["text"] as? String } + texts
                before = messages.isEmpty ? nil : messages.compactMap { $0["id"] as? Int }.min()
            } while before != nil
            #expect(texts == sent.map { "!ping \($0)" })
        }
    }

    @Test func handshakesThatAreNotWebSocketsAreRefused() async throws {
        try await withHTTPChat { http in
            let port = http.server.port
            let user = user
            let statuses = try await onThread { () throws -> [Int] in
                [
                    try WebSocketTestClient(port: port, headers: user.merging(["Upgrade": ""]) { $1 }).status,
                    try WebSocketTestClient(
                        port: port, headers: user.merging(["Sec-WebSocket-Version": "8"]) { $1 }
                    )
                    .status,
                    // Without its version the handshake is malformed (it was answered 426).
                    try WebSocketTestClient(port: port, headers: user.merging(["Sec-WebSocket-Version": ""]) { $1 })
                        .status,
                    try WebSocketTestClient(port: port, headers: user, key: "short").status,
                    try WebSocketTestClient(port: port, headers: user.merging(["Connection": "keep-alive"]) { $1 })
                        .status,
                    try WebSocketTestClient(port: port, headers: [:]).status,
                    try WebSocketTestClient(port: port, headers: ["apikey": "wrong"]).status,
                ]
            }
            #expect(statuses == [426, 426, 400, 400, 400, 401, 401])
            // The plain request names what is wrong.
            let plain = try await http.call("GET", "/v3/ws", as: .user("bob"))
            #expect(plain.status == 426)
            #expect(plain.errorCode == "ERR_BAD_REQUEST")
        }
    }

    @Test func theSocketAnswersPingsAndClosesOnProtocolErrors() async throws {
        try await withHTTPChat { http in
            let port = http.server.port
            let user = user
            let closes = try await onThread { () throws -> [String] in
                var log: [String] = []
                let client = try WebSocketTestClient(port: port, headers: user)
                _ = client.message()
                client.send(.ping, Array("hi".utf8))
                let pong = client.frame()
                log.append("\(pong?.opcode == .pong) \(String(decoding: pong?.payload ?? [], as: UTF8.self))")
                client.send(.close, WebSocket.closePayload(1000, "done"))
                log.append(closeCode(client))
                for bad: (WebSocket.Opcode, [UInt8], Bool) in [
                    (.binary, [1, 2], true), (.text, [0xFF], true), (.continuation, [0x61], true),
                    (.text, [UInt8](repeating: 0x61, count: 80 * 1024), true),
                ] {
                    let client = try WebSocketTestClient(port: port, headers: user)
                    _ = client.message()
                    client.send(bad.0, bad.1, fin: bad.2)
                    log.append(closeCode(client))
                }
                // An unmasked frame.
                let unmasked = try WebSocketTestClient(port: port, headers: user)
                _ = unmasked.message()
                var frame: [UInt8] = []
                WebSocket.append(.text, Array("{}".utf8), to: &frame)
                unmasked.write(frame)
                log.append(closeCode(unmasked))
                return log
            }
            #expect(closes == ["true hi", "1000", "1003", "1007", "1002", "1009", "1002"])
        }
    }

    /// The heartbeat counts from the client's last word, whatever the server sends meanwhile: a
    /// client that answers nothing is pinged and then closed even while a busy room keeps its
    /// socket's events coming (before, only a wait with nothing at all to do sent the ping); one
    /// that answers each ping with a pong stays open.
    @Test func aClientThatAnswersNothingIsPingedAndClosedWhileEventsKeepComing() async throws {
        try await withHTTPChat(socketHeartbeat: .seconds(1)) { http in
            let port = http.server.port
            let user = user
            let talking = Lock(true)
            let posted = Lock(0)
            let carol = Task {
                var index = 0
                while talking.withLock({ $0 }) {
                    index += 1
                    _ = try await http.call(
                        "POST", "/v3/messages", as: .user("carol"),
                        json: #"{"receiver":"room","receiverType":"group","data":{"text":"busy \#(index)"}}"#)
                    posted.withLock { $0 += 1 }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            defer { talking.withLock { $0 = false } }
            // The room is busy before the clients come (on a loaded machine the first posts can
            // take longer than a heartbeat).
            let busy = ContinuousClock.now + .seconds(10)
            while posted.withLock({ $0 }) < 3, ContinuousClock.now < busy {
                try await Task.sleep(for: .milliseconds(20))
            }
            async let silent = onThread { () throws -> String in
                let client = try WebSocketTestClient(port: port, headers: user)
                let start = Date()
                var events = 0
                var pingAfterEvents = false
                // Closed after a ping and a heartbeat more (2 s here), well before this limit.
                while Date().timeIntervalSince(start) < 9, let frame = client.frame(timeout: 2) {
                    if frame.opcode == .text { events += 1 }
                    if frame.opcode == .ping, events > 0 { pingAfterEvents = true }
                }
                return "\(pingAfterEvents) \(client.ended)"
            }
            async let answering = onThread { () throws -> String in
                let client = try WebSocketTestClient(port: port, headers: user)
                let end = Date().addingTimeInterval(3.5)
                var pings = 0
                while Date() < end, let frame = client.frame(timeout: end.timeIntervalSinceNow) {
                    if frame.opcode == .ping {
                        pings += 1
                        client.send(.pong, frame.payload)
                    }
                }
                let answer = client.request(1, "GET", "/v3/groups/room/messages?limit=1").answer
                return "\(pings >= 2) \(client.ended) \(answer?.status ?? 0)"
            }
            // Awaited into values first, so that a failure prints what each client saw.
            let silentSaw = try await silent
            let answeringSaw = try await answering
            #expect(silentSaw == "true true")
            #expect(answeringSaw == "true false 200")
            talking.withLock { $0 = false }
            try await carol.value
        }
    }

    @Test func stoppingTheServerClosesItsSocketsGoingAway() async throws {
        try await withHTTPChat { http in
            let port = http.server.port
            let user = user
            let client = try await onThread { () throws -> WebSocketTestClient in
                let client = try WebSocketTestClient(port: port, headers: user)
                _ = client.message()
                return client
            }
            let server = http.server
            await onThread { server.stop() }
            #expect(await onThread { closeCode(client) } == "1001")
        }
    }
}

extension WebSocketEndpointTests {
    /// A client that writes requests and does not read: the server answers until the socket and
    /// its buffer are full, then holds its work; the answers all come, in order, once the client
    /// reads, and a server that stops meanwhile still stops.
    @Test func aClientThatStopsReadingGetsEveryAnswerLaterAndDoesNotHoldTheServer() async throws {
        try await withHTTPChat { http in
            for index in 0..<100 {
                _ = try await http.call(
                    "POST", "/v3/messages", as: .user("carol"),
                    json:
                        #"{"receiver":"room","receiverType":"group","data":{"text":"\#(String(repeating: "x", count: 500)) \#(index)"}}"#
                )
            }
            let port = http.server.port
            let user = user
            let ids = try await onThread { () throws -> [Int] in
                let client = try WebSocketTestClient(port: port, headers: user)
                _ = client.message()
                // About 70 KB an answer: 150 of them are more than the kernel's buffers and
                // the server's own hold.
                for id in 0..<150 {
                    client.sendText(#"{"id":\#(id),"method":"GET","path":"/v3/groups/room/messages?limit=100"}"#)
                }
                usleep(500_000)
                return (0..<150).compactMap { _ in
                    client.messages { $0["type"] as? String == "response" }?.last?["id"] as? Int
                }
            }
            #expect(ids == Array(0..<150))

            let stalled = try await onThread { () throws -> WebSocketTestClient in
                let client = try WebSocketTestClient(port: port, headers: user)
                for id in 0..<150 {
                    client.sendText(#"{"id":\#(id),"method":"GET","path":"/v3/groups/room/messages?limit=100"}"#)
                }
                usleep(500_000)
                return client
            }
            let server = http.server
            await onThread { server.stop() }
            withExtendedLifetime(stalled) {}
        }
    }
}

/// The close code of the server's next close frame (other frames skipped), or "none".
func closeCode(_ client: WebSocketTestClient) -> String {
    while let frame = client.frame() {
        if frame.opcode == .close, frame.payload.count >= 2 {
            return String(UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]))
        }
    }
    return "none"
}

/// The socket's loop with a session of the test's: which requests start when, and in what order
/// their answers go out, when sends sent back to back start while those before them wait.
@Suite struct WebSocketPipeliningTests {
    /// `/send/N` pipelines: it says its write is queued, then waits for the test to let it finish.
    /// `/refused/N` pipelines and is answered at once (refused before its write was queued).
    /// `/read/N` does not pipeline and is answered at once.
    final class GatedSession: WebSocketSession, @unchecked Sendable {
        let log = Lock<[String]>([])
        let gates = Lock<[String: CheckedContinuation<Void, Never>]>([:])

        var greeting: [UInt8] { Array(#"{"type":"session","session":"test"}"#.utf8) }

        func pipelines(_ request: HTTPRequest) -> Bool { !request.path.hasPrefix("/read") }

        func respond(to request: HTTPRequest, pipelining: Pipelining?) async -> HTTPResponse {
            let name = String(request.path.dropFirst())
            log.withLock { $0.append("start \(name)\(pipelining == nil ? "" : " pipelined")") }
            if name.hasPrefix("send") {
                pipelining?.queued()
                await withCheckedContinuation { continuation in gates.withLock { $0[name] = continuation } }
            }
            return .text(200, name)
        }

        func followEvents(on executor: ThreadExecutor, deliver: @escaping @Sendable ([UInt8]) -> Void)
            -> @Sendable () -> Void
        { {} }

        /// Lets `/send/N` finish once it waits.
        func release(_ name: String) -> Bool {
            for _ in 0..<500 {
                if let gate = gates.withLock({ $0.removeValue(forKey: name) }) {
                    gate.resume()
                    return true
                }
                usleep(10_000)
            }
            return false
        }

        /// Waits until `count` lines are logged (at most 5 s).
        func logged(_ count: Int) -> [String] {
            for _ in 0..<500 {
                let lines = log.withLock { $0 }
                if lines.count >= count { return lines }
                usleep(10_000)
            }
            return log.withLock { $0 }
        }
    }

    /// A session whose events are more than the socket takes at once.
    final class FloodingSession: WebSocketSession, @unchecked Sendable {
        var greeting: [UInt8] { Array(#"{"type":"session","session":"test"}"#.utf8) }
        func pipelines(_ request: HTTPRequest) -> Bool { false }
        func respond(to request: HTTPRequest, pipelining: Pipelining?) async -> HTTPResponse { .text(200, "") }
        func followEvents(on executor: ThreadExecutor, deliver: @escaping @Sendable ([UInt8]) -> Void)
            -> @Sendable () -> Void
        {
            let event = Array(#"{"type":"event","data":"\#(String(repeating: "x", count: 60_000))"}"#.utf8)
            for _ in 0..<100 { deliver(event) }
            return {}
        }
    }

    /// A client that breaks the protocol and reads nothing more: the server's close frame waits
    /// behind what the client left unread, and the socket is given up after a heartbeat (it was
    /// polled without sleeping, forever, once the heartbeat was due).
    @Test func aClosingSocketWhoseClientReadsNothingIsGivenUpAfterAHeartbeat() async throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let connection = WebSocketConnection(
            session: FloodingSession(), maximumMessage: 1 << 20, heartbeat: .seconds(1))
        let (server, peer) = (pair[0], pair[1])
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            connection.run(socket: server, extra: [])
            finished.signal()
        }
        let client = WebSocketTestClient(connected: peer)
        client.send(.binary, [1, 2])
        let ended = await onThread { finished.wait(timeout: .now() + 10) == .success }
        if !ended {
            connection.finish()
            finished.wait()
        }
        #expect(ended)
        withExtendedLifetime(client) {}
    }

    @Test func sendsStartWhileThoseBeforeWaitAndTheirAnswersGoOutInOrder() async throws {
        let session = GatedSession()
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let connection = WebSocketConnection(session: session, maximumMessage: 1 << 20, heartbeat: .seconds(15))
        let (server, peer) = (pair[0], pair[1])
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            connection.run(socket: server, extra: [])
            finished.signal()
        }
        let result = await onThread { () -> [String] in
            let client = WebSocketTestClient(connected: peer)
            var seen: [String] = []
            _ = client.message()
            for (id, path) in ["/send/0", "/send/1", "/refused/2", "/send/3", "/read/4", "/send/5"].enumerated() {
                client.sendText(#"{"id":\#(id),"method":"POST","path":"\#(path)"}"#)
                // A malformed request is refused in its turn too (its id unread: null).
                if id == 1 { client.sendText("not json") }
            }
            // The three sends and the refusal start before any is answered; the read waits.
            seen += session.logged(4)
            usleep(50_000)
            seen.append("logged \(session.log.withLock { $0.count })")
            // Finished out of order (the refusal first), answered in order.
            for name in ["send/3", "send/1", "send/0"] where !session.release(name) { seen.append("no \(name)") }
            for _ in 0..<5 { seen.append("answer \(client.message()?["id"] as? Int ?? -1)") }
            // Then the read, alone, and after it the last send.
            seen.append("answer \(client.message()?["id"] as? Int ?? -1)")
            seen += session.logged(6).suffix(2)
            if !session.release("send/5") { seen.append("no send/5") }
            seen.append("answer \(client.message()?["id"] as? Int ?? -1)")
            client.send(.close, WebSocket.closePayload(1000, ""))
            return seen
        }
        #expect(
            result == [
                "start send/0 pipelined", "start send/1 pipelined", "start refused/2 pipelined",
                "start send/3 pipelined", "logged 4", "answer 0", "answer 1", "answer -1", "answer 2", "answer 3",
                "answer 4",
                "start read/4", "start send/5 pipelined", "answer 5",
            ])
        #expect(finished.wait(timeout: .now() + 10) == .success)
    }
}
