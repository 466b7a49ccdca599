import Foundation
import PerchLock
import PerchTestSupport
import Testing

@testable import PerchHTTP

#if canImport(Glibc)
    import Glibc
#endif

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
