import Foundation
import PerchHTTP
import PerchTestSupport
import Testing

/// The web chat's endpoints: static files, settings, development sign-in, and what they answer
/// to bad input.
@Suite struct WebEndpointTests {
    static func web(devSignIn: Bool) throws -> WebSettings {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-web-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "<!doctype html><title>Perch</title>".write(
            toFile: directory + "/index.html", atomically: true, encoding: .utf8)
        try "console.log('perch')".write(toFile: directory + "/app.js", atomically: true, encoding: .utf8)
        try "secret".write(toFile: directory + "/.env.js", atomically: true, encoding: .utf8)
        return WebSettings(
            directory: directory, devSignIn: devSignIn, people: ["alice", "bob"],
            settingsJSON: #"{"threadSubscription":{"enabled":true}}"#)
    }

    @Test func filesAreServedByNameAndNothingElse() async throws {
        try await withHTTPChat(web: try Self.web(devSignIn: true)) { http in
            let index = try await http.call("GET", "/", as: .nobody)
            #expect(index.status == 200)
            #expect(String(decoding: index.body, as: UTF8.self).contains("<title>Perch</title>"))
            let script = try await http.call("GET", "/web/app.js", as: .nobody)
            #expect(script.status == 200)
            for path in ["/web/..%2Fconfig.yaml", "/web/.env.js", "/web/missing.js", "/web/index.exe", "/web/"] {
                let answer = try await http.call("GET", path, as: .nobody)
                #expect(answer.status == 404, "\(path)")
                #expect(answer.errorCode == "ERR_BAD_REQUEST", "\(path)")
            }
        }
    }

    /// The page and its files: a strict Content-Security-Policy (the browser tests run the whole web
    /// chat under it and fail on anything it refuses), never framed, no Referer. Every API answer,
    /// refusals too: never stored by a cache in front (it keys on the URL, not on the credentials
    /// that chose the answer), never sniffed into a page.
    @Test func thePageIsLockedDownAndNoAnswerIsCached() async throws {
        try await withHTTPChat(web: try Self.web(devSignIn: true)) { http in
            for path in ["/", "/web/app.js"] {
                let file = try await http.call("GET", path, as: .nobody)
                let policy = try #require(file.headers["content-security-policy"], "\(path)")
                for directive in [
                    "default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'",
                ] {
                    #expect(policy.contains(directive), "\(path): \(policy)")
                }
                #expect(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"))
                #expect(file.headers["x-frame-options"] == "DENY")
                #expect(file.headers["referrer-policy"] == "no-referrer")
                #expect(file.headers["x-content-type-options"] == "nosniff")
                #expect(file.headers["cache-control"] == "no-cache", "\(path)")
            }
            let sent = try await http.call(
                "POST", "/v3/messages", as: .user("alice"),
                json: #"{"receiver": "room", "receiverType": "group", "data": {"text": "private"}}"#)
            for answer in [
                sent, try await http.call("GET", "/v3/groups/room/messages", as: .user("alice")),
                try await http.call("GET", "/v3/messages/999999", as: .user("alice")),
                try await http.call("GET", "/v3/users", as: .nobody),
                try await http.call("GET", "/v3/web/settings", as: .nobody),
            ] {
                #expect(answer.headers["cache-control"] == "no-store", "\(answer.status)")
                #expect(answer.headers["x-content-type-options"] == "nosniff", "\(answer.status)")
            }
        }
    }

    @Test func signInMintsATokenForASeededPersonOnly() async throws {
        try await withHTTPChat(web: try Self.web(devSignIn: true)) { http in
            let settings = try await http.call("GET", "/v3/web/settings", as: .nobody)
            #expect(settings.data["devSignIn"] as? Bool == true)
            #expect(
                (settings.data["people"] as? [[String: Any]])?.compactMap { $0["uid"] as? String } == ["alice", "bob"])
            #expect((settings.data["ui"] as? [String: Any])?["threadSubscription"] != nil)
            let signedIn = try await http.call("POST", "/v3/web/sign-in", as: .nobody, json: #"{"uid":"alice"}"#)
            #expect(signedIn.status == 200)
            let token = try #require(signedIn.data["authToken"] as? String)
            #expect((signedIn.data["user"] as? [String: Any])?["uid"] as? String == "alice")
            let me = try await http.call("GET", "/v3/users/alice", as: .token(token))
            #expect(me.status == 200)
            // carol exists but is not offered; nobody does not exist: neither signs in.
            for uid in ["carol", "nobody"] {
                let refused = try await http.call("POST", "/v3/web/sign-in", as: .nobody, json: #"{"uid":"\#(uid)"}"#)
                #expect(refused.status == 404)
                #expect(refused.errorCode == "ERR_UID_NOT_FOUND")
            }
        }
    }

    @Test func badSignInBodiesAreTypedErrors() async throws {
        try await withHTTPChat(web: try Self.web(devSignIn: true)) { http in
            for (body, field) in [("{}", "uid"), (#"{"uid":"alice","admin":true}"#, "admin"), (#"{"uid":7}"#, "uid")] {
                let answer = try await http.call("POST", "/v3/web/sign-in", as: .nobody, json: body)
                #expect(answer.status == 400, "\(body)")
                #expect(answer.errorCode == "ERR_BAD_REQUEST", "\(body)")
                #expect(answer.errorField == field, "\(body)")
            }
            let garbage = try await http.call("POST", "/v3/web/sign-in", as: .nobody, json: "not json")
            #expect(garbage.status == 400)
            #expect(garbage.errorCode == "ERR_BAD_REQUEST")
        }
    }

    @Test func signInIsRefusedWhenDevelopmentSignInIsOff() async throws {
        try await withHTTPChat(web: try Self.web(devSignIn: false)) { http in
            let refused = try await http.call("POST", "/v3/web/sign-in", as: .nobody, json: #"{"uid":"alice"}"#)
            #expect(refused.status == 403)
            #expect(refused.errorCode == "ERR_PERMISSION_DENIED")
            let settings = try await http.call("GET", "/v3/web/settings", as: .nobody)
            #expect(settings.data["devSignIn"] as? Bool == false)
            #expect((settings.data["people"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func withoutAWebFolderNothingIsServed() async throws {
        try await withHTTPChat { http in
            let index = try await http.call("GET", "/", as: .nobody)
            #expect(index.status == 404)
            let settings = try await http.call("GET", "/v3/web/settings", as: .nobody)
            #expect(settings.status == 404)
            let signIn = try await http.call("POST", "/v3/web/sign-in", as: .nobody, json: #"{"uid":"alice"}"#)
            #expect(signIn.status == 403)
        }
    }
}
