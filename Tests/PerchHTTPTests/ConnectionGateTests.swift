import Foundation
import PerchTestSupport
import Testing

@testable import PerchHTTP

/// The gate in front of libmicrohttpd: a connection gets a thread only once its first request's
/// head is in, half-sent requests cannot take the server from anyone else, one address cannot take
/// every connection, and what the gate refuses it refuses as JSON.
@Suite struct ConnectionGateTests {
    /// Opens `count` connections to `port`, each sending the start of a request and no more.
    static func halfSent(_ count: Int, port: UInt16) throws -> [Int32] {
        try (0..<count).map { index in
            let socket = try connectLoopback(port: port)
            let start = Array("GET /v3/users/\(index) HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".utf8)
            _ = start.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
            return socket
        }
    }

    @Test func halfSentRequestsLeaveHealthAndTheAPIReachable() async throws {
        try await withHTTPChat(maximumStreams: 100) { http in
            let port = http.server.port
            let slow = try await onThread { try Self.halfSent(1_200, port: port) }
            defer { for socket in slow { close(socket) } }
            try await Task.sleep(for: .milliseconds(300))
            let health = try await onThread {
                try rawExchange(port: port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            }
            #expect(health.hasPrefix("HTTP/1.1 200") && health.hasSuffix("ok\n"), "\(health)")
            let ready = try await onThread {
                try rawExchange(port: port, "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            }
            #expect(ready.hasPrefix("HTTP/1.1 200"), "\(ready)")
            let metrics = try await onThread {
                try rawExchange(port: port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            }
            #expect(metrics.hasPrefix("HTTP/1.1 200") && metrics.contains("perch_"), "\(metrics.prefix(200))")
            #expect(try await http.call("GET", "/v3/groups/room/messages", as: .user("carol")).status == 200)
        }
    }

    @Test func aHeadThatDoesNotComeInTimeIsToldSoAndClosed() async throws {
        try await withHTTPChat(headTimeout: .seconds(1)) { http in
            let port = http.server.port
            let answer = try await onThread { () throws -> String in
                let client = try SSEClient(port: port, path: nil, headers: [:])
                client.handle.write(Data("GET /v3/users HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Sl".utf8))
                return client.readToEnd(timeout: 10)
            }
            let refused = RequestParsingTests.refusal(answer)
            #expect(refused.status == 408 && refused.code == "ERR_BAD_REQUEST", "\(answer)")
        }
    }

    /// A body sent a byte at a time, each well inside the idle timeout, is cut off once its time
    /// (the body timeout, and a second a KiB) is over; one that comes at a decent pace is not.
    @Test func aBodyThatTricklesIsCutOffAndOneThatFlowsIsNot() async throws {
        try await withHTTPChat(bodyTimeout: .seconds(1)) { http in
            let port = http.server.port
            let body = #"{"receiver":"room","receiverType":"group","data":{"text":"trickled"}}"#
            let head =
                "POST /v3/messages HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: \(apiKey)\r\n"
                + "onBehalfOf: carol\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
            let (answer, elapsed) = try await onThread { () throws -> (String, Double) in
                let started = Date()
                let pieces = [Array(head.utf8)] + body.utf8.prefix(10).map { [$0] }
                let answer = try rawExchange(port: port, pieces: pieces, pause: 300_000, timeout: 10)
                return (answer, Date().timeIntervalSince(started))
            }
            #expect(answer.isEmpty, "\(answer)")
            #expect(elapsed < 8)
            #expect(
                http.chat.host.metrics.prometheusText.contains(
                    #"perch_http_connections_refused_total{reason="body_timeout"} 1"#))
            let flowing = try await onThread { () throws -> String in
                let pieces = [Array(head.utf8), Array(body.utf8.prefix(30)), Array(body.utf8.dropFirst(30))]
                return try rawExchange(port: port, pieces: pieces, pause: 300_000, timeout: 10)
            }
            #expect(flowing.hasPrefix("HTTP/1.1 200"), "\(flowing)")
        }
    }

    /// What libmicrohttpd would refuse in HTML, refused in the API's JSON.
    @Test(arguments: [
        ("GET / HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n", 505, "version"),
        ("GET / HTTP/1.2\r\nHost: 127.0.0.1\r\n\r\n", 505, "version"),
        ("GET /\(String(repeating: "a", count: 9_000)) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 414, "path"),
        (
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: \(String(repeating: "b", count: 20_000))\r\n\r\n", 431,
            "headers"
        ),
        ("\u{16}\u{03}\u{01}\u{02}\u{00}\r\n\r\n", 400, "request"),
        ("GET / HTTP/1.1\r\n\r\n", 400, "Host"),
        ("POST /v3/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n", 400, "Content-Length"),
        ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header: x\r\n\r\n", 400, "headers"),
        ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n folded\r\n\r\n", 400, "headers"),
        ("GET http://elsewhere/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400, "path"),
    ])
    func aBrokenHeadIsRefusedInJSON(request: String, status: Int, field: String) async throws {
        try await withHTTPChat { http in
            let port = http.server.port
            let answer = try await onThread { try rawExchange(port: port, request) }
            let refused = RequestParsingTests.refusal(answer)
            #expect(refused.status == status && refused.field == field, "\(answer.prefix(300))")
            #expect(answer.lowercased().contains("content-type: application/json"))
        }
    }

    /// One address may hold so many connections: past it, it is told to come back (429), while
    /// `/readyz`, `/metrics` and `/healthz` still answer it.
    @Test func oneAddressHoldsAtMostItsShareOfConnections() async throws {
        try await withHTTPChat(connectionsPerClient: 4) { http in
            let port = http.server.port
            let bob = ["apikey": apiKey, "onBehalfOf": "bob"]
            let streams = try (0..<4).map { _ in try SSEClient(port: port, path: "/v3/events", headers: bob) }
            for stream in streams { await onThread { stream.waitUntilOpen() } }
            #expect(streams.allSatisfy { $0.buffer.contains("perch.session") })
            let refused = try await onThread {
                try rawExchange(
                    port: port,
                    "GET /v3/groups/room/messages HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: \(apiKey)\r\nonBehalfOf: bob\r\n\r\n"
                )
            }
            #expect(RequestParsingTests.refusal(refused).status == 429, "\(refused)")
            #expect(refused.lowercased().contains("retry-after: 5"))
            for path in ["/readyz", "/metrics", "/healthz"] {
                let answer = try await onThread {
                    try rawExchange(port: port, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                }
                #expect(answer.hasPrefix("HTTP/1.1 200"), "\(path): \(answer.prefix(200))")
            }
            for stream in streams { try stream.handle.close() }
        }
    }
}
