import Foundation
import PerchTestSupport
import Testing

/// What a request's head may not say (docs/security.md, "What the server refuses"), sent byte for
/// byte on a socket: each refusal is a JSON error, given before any of the body is read.
@Suite struct RequestParsingTests {
    /// The status and the error's code and field of a raw answer.
    static func refusal(_ answer: String) -> (status: Int, code: String?, field: String?) {
        let status = Int(answer.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") ?? 0
        let body = answer.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        let json = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
        let error = json?["error"] as? [String: Any]
        return (status, error?["code"] as? String, (error?["details"] as? [String: Any])?["field"] as? String)
    }

    @Test func aNULInThePathOrAQueryValueIsRefused() async throws {
        try await withHTTPChat { http in
            let port = http.server.port
            let key = "apikey: \(apiKey)\r\nonBehalfOf: carol\r\n"
            for target in [
                "/v3/messages/1%00", "/v3/messages/1%00x", "/web/app.js%00.png", "/v3/groups/room/messages?limit=5%00",
                "/v3/users%00/carol", "/healthz?x=%00",
            ] {
                let answer = try await onThread {
                    try rawExchange(port: port, "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(key)\r\n")
                }
                let refused = Self.refusal(answer)
                #expect(
                    refused.status == 400 && refused.code == "ERR_BAD_REQUEST" && refused.field == "path", "\(target)")
            }
        }
    }

    @Test func aHeaderThatSaysWhoCallsOrHowLongTheBodyIsComesOnce() async throws {
        try await withHTTPChat { http in
            let port = http.server.port
            let body = #"{"receiver":"room","receiverType":"group","data":{"text":"hi"}}"#
            for (headers, field) in [
                ("apikey: \(apiKey)\r\napikey: other\r\nonBehalfOf: carol\r\n", "apikey"),
                ("apikey: \(apiKey)\r\nonBehalfOf: carol\r\nonBehalfOf: alice\r\n", "onBehalfOf"),
                ("authtoken: a\r\nauthtoken: b\r\n", "authtoken"),
                ("apikey: \(apiKey)\r\nonBehalfOf: carol\r\nContent-Length: \(body.utf8.count)\r\n", "Content-Length"),
            ] {
                let request =
                    "POST /v3/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "\(headers)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
                let answer = try await onThread { try rawExchange(port: port, request) }
                let refused = Self.refusal(answer)
                #expect(refused.status == 400 && refused.field == field, "\(answer)")
            }
            // Nothing was sent.
            let listed = try await http.call("GET", "/v3/groups/room/messages", as: .user("carol"))
            #expect(listed.list.allSatisfy { $0["text"] as? String != "hi" })
        }
    }

    @Test func aChunkedBodyIsRefusedAtOnceWhateverItsChunkSize() async throws {
        try await withHTTPChat { http in
            let port = http.server.port
            let head =
                "POST /v3/messages HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: \(apiKey)\r\nonBehalfOf: carol\r\n"
                + "Content-Type: application/json\r\n"
            // An absurd chunk size, its bytes never sent: the answer comes without them (the exchange
            // gives up after 5 s, the server's idle timeout is 60).
            let absurd = try await onThread {
                try rawExchange(port: port, head + "Transfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n{")
            }
            #expect(Self.refusal(absurd).status == 411 && Self.refusal(absurd).field == "Transfer-Encoding")
            let both = try await onThread {
                try rawExchange(
                    port: port, head + "Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
            }
            #expect(Self.refusal(both).status == 400 && Self.refusal(both).field == "Transfer-Encoding")
        }
    }

    @Test func aBodyOverTheLimitIsRefusedBeforeItIsRead() async throws {
        try await withHTTPChat(maximumBody: 1024) { http in
            let port = http.server.port
            // Announced, never sent: the refusal does not wait for it.
            let answer = try await onThread {
                try rawExchange(
                    port: port,
                    "POST /v3/messages HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: \(apiKey)\r\nonBehalfOf: carol\r\n"
                        + "Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{")
            }
            #expect(Self.refusal(answer).status == 413 && Self.refusal(answer).field == "body")
        }
    }

    @Test func aJSONBodyWithAKeyTwiceIsRefused() async throws {
        try await withHTTPChat { http in
            for json in [
                #"{"receiver":"room","receiver":"other","receiverType":"group","data":{"text":"hi"}}"#,
                #"{"receiver":"room","receiverType":"group","data":{"text":"hi","text":"ho"}}"#,
            ] {
                let refused = try await http.call("POST", "/v3/messages", as: .user("carol"), json: json)
                #expect(refused.status == 400 && refused.errorField == "body", "\(json)")
            }
        }
    }
}
