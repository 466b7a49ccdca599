import Foundation
import PerchChat
import PerchHost
import PerchTestSupport
import PerchTesting
import Testing

@testable import PerchHTTP

/// The server's connections: pipelined requests answered in order, idle connections closed, the
/// stream limit, and what a stop does to open streams and requests in flight.
@Suite struct HTTPConnectionTests {
    @Test func pipelinedRequestsAreAnsweredInOrderEachAfterItsCommit() async throws {
        try await withHTTPChat { http in
            // Twelve POSTs written at once on one keep-alive connection (HTTP/1.1 pipelining), the
            // last a refusal: twelve answers in request order, the sends stored in that order.
            let client = try SSEClient(port: http.server.port, path: nil, headers: [:])
            var requests = ""
            for index in 0..<12 {
                let text = index == 11 ? "" : "pipelined \(index)"
                let body = #"{"receiver": "room", "receiverType": "group", "data": {"text": "\#(text)"}}"#
                requests +=
                    "POST /v3/messages HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: \(apiKey)\r\nonBehalfOf: carol\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
            client.handle.write(Data(requests.utf8))
            let answers = await onThread { client.responses(12) }
            #expect(answers.count == 12)
            #expect(answers.dropLast().allSatisfy { $0.status == 200 })
            #expect(answers.last?.status == 400 && answers.last?.body.contains("ERR_EMPTY_MESSAGE_TEXT") == true)
            let texts = answers.dropLast().map { answer -> String in
                let json = try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
                return (json?["data"] as? [String: Any])?["text"] as? String ?? ""
            }
            #expect(texts == (0..<11).map { "pipelined \($0)" })
            let ids = answers.dropLast().map { answer -> Int in
                let json = try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
                return (json?["data"] as? [String: Any])?["id"] as? Int ?? 0
            }
            #expect(ids == ids.sorted() && Set(ids).count == 11)
            let stored = try await http.call("GET", "/v3/groups/room/messages?limit=11", as: .user("carol")).list
            #expect(stored.compactMap { $0["text"] as? String } == texts)
        }
    }

    @Test func stoppingTheServerEndsAnOpenEventStreamAtOnce() async throws {
        try await withTestHost(config: hostConfig) { chat in
            let api = PerchAPI(
                service: chat.service, host: chat.host, apiKey: apiKey, metrics: chat.host.metrics,
                media: MediaSettings(directory: chat.directory + "/media", maximumBytes: 1024, allowedTypes: []),
                web: nil, maximumBodyBytes: 64 * 1024,
                messagesPerMinute: 0)
            // A heartbeat far longer than the test: the stream's thread would wait that long.
            let server = try HTTPServer(
                host: "127.0.0.1", port: 0, maximumBodyBytes: 64 * 1024, heartbeat: .seconds(120)
            ) {
                await api.respond(to: $0)
            }
            let client = try SSEClient(
                port: server.port, path: "/v3/events", headers: ["apikey": apiKey, "onBehalfOf": "bob"])
            await onThread { client.waitUntilOpen() }
            #expect(client.buffer.contains("perch.session"))
            let took = await onThread {
                let started = ContinuousClock.now
                server.stop()
                return ContinuousClock.now - started
            }
            #expect(took < .seconds(30))
            // The stream ended: the client reads the end of the connection.
            let ended = await onThread { () -> Bool in
                var fds = pollfd(fd: client.handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&fds, 1, 5_000) > 0 else { return false }
                while !client.handle.availableData.isEmpty {}
                return true
            }
            #expect(ended)
        }
    }

    @Test func idleConnectionsAreClosedWhileStreamsStayOpen() async throws {
        // Heartbeats further apart than the stream is quiet below, so only its being open keeps it
        // from counting as idle.
        try await withHTTPChat(heartbeat: .seconds(8), idleTimeout: .seconds(1), headTimeout: .seconds(2)) { http in
            let port = http.server.port
            let bob = ["apikey": apiKey, "onBehalfOf": "bob"]
            let stream = try SSEClient(port: port, path: "/v3/events", headers: bob)
            let socket = try await onThread { try WebSocketTestClient(port: port, headers: bob) }
            await onThread { stream.waitUntilOpen() }
            #expect(stream.buffer.contains("perch.session") && socket.status == 101)

            // A keep-alive connection, answered and then silent, is closed; a client that stalls in
            // the middle of its first request is told so (408) and closed. Each would otherwise hold
            // a connection.
            let keptAlive = try SSEClient(port: port, path: nil, headers: [:])
            keptAlive.handle.write(Data("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
            let stalled = try SSEClient(port: port, path: nil, headers: [:])
            stalled.handle.write(Data("GET /healthz HTTP/1.1\r\nHo".utf8))
            let answered = await onThread { keptAlive.readToEnd(timeout: 20) }
            #expect(answered.hasPrefix("HTTP/1.1 200") && keptAlive.closed)
            let timedOut = await onThread { stalled.readToEnd(timeout: 20) }
            #expect(timedOut.hasPrefix("HTTP/1.1 408") && timedOut.contains(#""code":"ERR_BAD_REQUEST""#))
            #expect(stalled.closed)

            // The stream and the WebSocket, quiet for twice as long as that, are still open and deliver.
            try await Task.sleep(for: .seconds(2))
            let sent = try await http.call(
                "POST", "/v3/messages", as: .user("alice"),
                json: #"{"receiver": "room", "receiverType": "group", "data": {"text": "still there?"}}"#)
            #expect(sent.status == 200)
            let delivered = await onThread { stream.events(1) }
            #expect(delivered.map(\.name) == ["onTextMessageReceived"])
            let answered200 = await onThread {
                socket.request(1, "GET", "/v3/groups/room/messages").answer?.status == 200
            }
            #expect(answered200)
        }
    }

    @Test func streamsBeyondTheLimitAreAnswered503AndRequestsStillGetThrough() async throws {
        try await withHTTPChat(maximumStreams: 2) { http in
            let port = http.server.port
            let bob = ["apikey": apiKey, "onBehalfOf": "bob"]
            func stream() throws -> SSEClient { try SSEClient(port: port, path: "/v3/events", headers: bob) }
            /// Opens streams until one is admitted (a place comes back once the server sees its
            /// stream's client gone, at the next heartbeat); the admitted one.
            func admitted() async throws -> SSEClient? {
                for _ in 0..<50 {
                    let client = try stream()
                    await onThread { client.waitUntilOpen(timeout: 1) }
                    if client.buffer.contains("perch.session") { return client }
                    try await Task.sleep(for: .milliseconds(100))
                }
                return nil
            }
            let first = try stream()
            let socket = try await onThread { try WebSocketTestClient(port: port, headers: bob) }
            await onThread { first.waitUntilOpen() }
            #expect(first.buffer.contains("perch.session") && socket.status == 101)

            // The third stream is refused, saying the limit and when to try again; so is a WebSocket.
            let third = try stream()
            let refused = await onThread { third.readToEnd() }
            #expect(refused.hasPrefix("HTTP/1.1 503") || refused.hasPrefix("HTTP/1.0 503"))
            #expect(refused.lowercased().contains("retry-after: 5"))
            // The refused client does not keep a connection the other requests need.
            #expect(refused.lowercased().contains("connection: close"))
            #expect(refused.contains(#""code":"ERR_TOO_MANY_STREAMS""#))
            #expect(refused.contains(#""limit":2"#) && refused.contains(#""retryAfter":5"#))
            let refusedSocket = try await onThread { try WebSocketTestClient(port: port, headers: bob) }
            #expect(refusedSocket.status == 503)
            // Requests that are not streams still get through.
            #expect(try await http.call("GET", "/v3/groups/room/messages", as: .user("bob")).status == 200)

            // A stream whose client left gives its place back, and so does a closed WebSocket.
            try first.handle.close()
            let next = try await admitted()
            #expect(next != nil)
            await onThread { socket.send(.close, WebSocket.closePayload(1000, "")) }
            let after = try await admitted()
            #expect(after != nil)
            #expect(try await onThread { try WebSocketTestClient(port: port, headers: bob) }.status == 503)
        }
    }

    @Test func aRequestCaughtByShutdownIsAnswered503AndNotLoggedAsAFailure() async throws {
        try await withHTTPChat { http in
            await http.chat.host.stop()
            let message = #"{"receiver": "room", "receiverType": "group", "data": {"text": "late"}}"#
            let late = try await http.call("POST", "/v3/messages", as: .user("carol"), json: message)
            #expect(late.status == 503 && late.errorCode == "ERR_SERVICE_UNAVAILABLE")
            #expect(try await http.call("GET", "/v3/groups/room/members").status == 503)
            let log = await http.chat.log
            #expect(!log.contains { $0.contains("internal error") })
        }
    }
}
