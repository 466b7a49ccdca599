import Foundation
import PerchTestSupport
import Testing

@testable import PerchHTTP

/// The names the server answers to and the pages that may change state through it: a DNS-rebinding
/// page (another site's name pointing at the server) and another site's form or `fetch` are refused.
@Suite struct OriginPolicyTests {
    /// The sign-in as a page of `origin` sent to the server as `host`: status, code and field.
    static func signIn(_ http: HTTPChat, host: String, origin: String?) throws -> (Int, String?, String?) {
        let body = #"{"uid":"alice"}"#
        var request = "POST /v3/web/sign-in HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/json\r\n"
        if let origin { request += "Origin: \(origin)\r\n" }
        request += "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let answer = RequestParsingTests.refusal(try rawExchange(port: http.server.port, request))
        return (answer.status, answer.code, answer.field)
    }

    @Test func aRebindingPageGetsNoTokenFromTheDevelopmentSignIn() async throws {
        try await withHTTPChat(web: try WebEndpointTests.web(devSignIn: true), hostNames: ["chat.example.org"]) {
            http in
            let port = http.server.port
            // Another site's name, with or without its page's Origin: refused before the sign-in.
            for (host, origin) in [
                ("evil.example:\(port)", "http://evil.example:\(port)"), ("evil.example:\(port)", nil),
                ("chat.example.org.evil.example", nil), ("localhost.evil.example:\(port)", nil),
            ] {
                let (status, _, field) = try await onThread { try Self.signIn(http, host: host, origin: origin) }
                #expect(status == 421 && field == "Host", "\(host)")
            }
            // The server's own names sign in.
            for host in ["127.0.0.1:\(port)", "localhost:\(port)", "chat.example.org", "CHAT.example.org:443"] {
                let (status, _, _) = try await onThread {
                    try Self.signIn(http, host: host, origin: "http://\(host)")
                }
                #expect(status == 200, "\(host)")
            }
        }
    }

    @Test func aPageOfAnotherOriginMayNotChangeState() async throws {
        try await withHTTPChat(web: try WebEndpointTests.web(devSignIn: true)) { http in
            let port = http.server.port
            for origin in [
                "http://evil.example", "http://127.0.0.1:\(port + 1)", "null", "https://127.0.0.1.evil.example",
            ] {
                let (status, code, field) = try await onThread {
                    try Self.signIn(http, host: "127.0.0.1:\(port)", origin: origin)
                }
                #expect(status == 403 && code == "ERR_PERMISSION_DENIED" && field == "Origin", "\(origin)")
                let send = try await http.call(
                    "POST", "/v3/messages", as: .user("carol"),
                    json: #"{"receiver":"room","receiverType":"group","data":{"text":"from elsewhere"}}"#,
                    headers: ["Origin": origin])
                #expect(send.status == 403 && send.errorField == "Origin", "\(origin)")
            }
            // Reading is not refused for its Origin (the browser keeps another site from reading the answer).
            let read = try await http.call(
                "GET", "/v3/groups/room/messages", as: .user("carol"), headers: ["Origin": "http://evil.example"])
            #expect(read.status == 200)
            #expect(read.headers["access-control-allow-origin"] == nil)
        }
    }

    /// A browser lets any page open a WebSocket: the handshake of a page of another origin is
    /// refused as its POST would be.
    @Test func aWebSocketFromAnotherOriginIsRefused() async throws {
        try await withHTTPChat { http in
            let port = http.server.port
            let statuses = try await onThread { () throws -> [Int] in
                // The client says `Host: 127.0.0.1`: its own origin is http://127.0.0.1.
                try ["http://evil.example", "http://127.0.0.1"].map { origin in
                    try WebSocketTestClient(
                        port: port, headers: ["apikey": apiKey, "onBehalfOf": "carol", "Origin": origin]
                    ).status
                }
            }
            #expect(statuses == [403, 101])
        }
    }

    @Test func aJSONEndpointTakesJSONOnly() async throws {
        try await withHTTPChat { http in
            let text = #"{"receiver":"room","receiverType":"group","data":{"text":"plain"}}"#
            for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""] {
                let refused = try await http.call(
                    "POST", "/v3/messages", as: .user("carol"), body: Data(text.utf8), headers: ["Content-Type": type])
                #expect(refused.status == 415 && refused.errorField == "Content-Type", "\(type)")
            }
            let fine = try await http.call(
                "POST", "/v3/messages", as: .user("carol"), body: Data(text.utf8),
                headers: ["Content-Type": "Application/JSON; charset=utf-8"])
            #expect(fine.status == 200)
        }
    }

    @Test func namesAndOriginsAreReadAsAddressesAndNames() {
        let policy = OriginPolicy(hostNames: ["chat.example.org", "other.example:8443"])
        for host in [
            "127.0.0.1", "127.0.0.1:8080", "10.1.2.3:80", "[::1]:8080", "[fe80::1]", "localhost:1", "LOCALHOST",
        ] {
            #expect(policy.accepts(host: host), "\(host)")
        }
        for host in ["chat.example.org", "chat.example.org:443", "other.example:8443"] {
            #expect(policy.accepts(host: host), "\(host)")
        }
        for host in ["evil.example", "other.example", "other.example:80", "127.0.0.1.evil", "[::1", "", ":80", "1.2.3"]
        {
            #expect(!policy.accepts(host: host), "\(host)")
        }
        #expect(policy.accepts(origin: "http://127.0.0.1:8080", host: "127.0.0.1:8080"))
        #expect(policy.accepts(origin: "https://chat.example.org", host: "127.0.0.1:8080"))
        #expect(!policy.accepts(origin: "http://127.0.0.1:8081", host: "127.0.0.1:8080"))
        #expect(!policy.accepts(origin: "javascript://127.0.0.1:8080", host: "127.0.0.1:8080"))
        #expect(!policy.accepts(origin: "null", host: "127.0.0.1:8080"))
    }
}
