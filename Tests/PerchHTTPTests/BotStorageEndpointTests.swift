import Foundation
import PerchChat
import PerchTestSupport
import Testing

/// A bot's store over HTTP (`/v3/bots/{uid}/storage`), for the services its `url` plugins post to:
/// the store a plugin's `storage` reads and writes, with the app's API key only.
@Suite struct BotStorageEndpointTests {
    static let bots = ["b.yaml": botFile("  - on: { command: ping }\n    do: [{ reply: \"pong\" }]\n")]

    @Test func aServiceReadsAndWritesItsBotsStore() async throws {
        try await withHTTPChat(bots: Self.bots) { http in
            let set = try await http.call("PUT", "/v3/bots/bot/storage/team", json: #"{"value": {"on": "ops"}}"#)
            #expect(set.status == 200 && (set.data["value"] as? [String: Any])?["on"] as? String == "ops")
            // The same store a plugin's storage reads: the bot's name, "b".
            #expect(try await http.chat.service.storedValue("team", in: "b") == .object(["on": .string("ops")]))
            let read = try await http.call("GET", "/v3/bots/bot/storage/team")
            #expect((read.data["value"] as? [String: Any])?["on"] as? String == "ops")
            let absent = try await http.call("GET", "/v3/bots/bot/storage/nothing")
            #expect(
                absent.status == 200 && absent.data["value"] is NSNull && absent.data["key"] as? String == "nothing")

            for _ in 0..<3 { _ = try await http.call("POST", "/v3/bots/bot/storage/count/increment") }
            let counted = try await http.call("POST", "/v3/bots/bot/storage/count/increment", json: #"{"by": 10}"#)
            #expect(counted.data["value"] as? Int == 13)

            let swapped = try await http.call(
                "POST", "/v3/bots/bot/storage/count/compare-and-set", json: #"{"expected": 13, "new": 0}"#)
            #expect(swapped.data["set"] as? Bool == true)
            let stale = try await http.call(
                "POST", "/v3/bots/bot/storage/count/compare-and-set", json: #"{"expected": 13, "new": 1}"#)
            #expect(stale.data["set"] as? Bool == false)

            // A namespace is a store of its own; a key is one path segment, percent-encoded.
            let slashed = try await http.call(
                "PUT", "/v3/bots/bot/storage/a%20b?namespace=triage", json: #"{"value": "x", "expiresIn": 60}"#)
            #expect(slashed.status == 200, "\(slashed.status) \(slashed.json)")
            #expect(try await http.chat.service.storedValue("a b", in: "b/triage") == .string("x"))
            let listed = try await http.call("GET", "/v3/bots/bot/storage?namespace=triage")
            let entries = try #require(listed.json["data"] as? [[String: Any]])
            #expect(entries.count == 1 && entries[0]["key"] as? String == "a b" && entries[0]["expiresAt"] is Int)
            let mine = try await http.call("GET", "/v3/bots/bot/storage?prefix=te")
            #expect((mine.json["data"] as? [[String: Any]])?.compactMap { $0["key"] as? String } == ["team"])

            let deleted = try await http.call("DELETE", "/v3/bots/bot/storage/team")
            #expect(deleted.status == 200)
            #expect(try await http.chat.service.storedValue("team", in: "b") == nil)
        }
    }

    @Test func onlyTheAppReachesARunningBotsStoreAndBadInputIsNamed() async throws {
        try await withHTTPChat(bots: Self.bots) { http in
            // carol is a user, not a bot; ghost is nobody.
            for uid in ["carol", "ghost"] {
                let refused = try await http.call("GET", "/v3/bots/\(uid)/storage/k")
                #expect(refused.status == 404 && refused.errorCode == "ERR_BOT_NOT_FOUND")
            }
            let token = try #require(
                try await http.call("POST", "/v3/users/carol/auth_tokens").data["authToken"] as? String)
            let byUser = try await http.call("GET", "/v3/bots/bot/storage/k", as: .token(token))
            #expect(byUser.status == 401 && byUser.errorCode == "AUTH_ERR_APIKEY_NOT_FOUND")

            let cases: [(String, String, String?, String)] = [
                ("PUT", "/v3/bots/bot/storage/k", #"{}"#, "value"),
                ("PUT", "/v3/bots/bot/storage/k", #"{"value": 1, "expiresIn": 0}"#, "expiresIn"),
                ("PUT", "/v3/bots/bot/storage/k", #"{"value": 1, "colour": "red"}"#, "colour"),
                ("POST", "/v3/bots/bot/storage/k/increment", #"{"by": "many"}"#, "by"),
                ("GET", "/v3/bots/bot/storage?namespace=a/b", nil, "namespace"),
            ]
            for (method, path, body, field) in cases {
                let refused = try await http.call(method, path, json: body)
                #expect(refused.status == 400 && refused.errorCode == "ERR_BAD_REQUEST", "\(path) \(body ?? "")")
                let details = (refused.json["error"] as? [String: Any])?["details"] as? [String: Any]
                #expect("\(details ?? [:])".contains(field), "\(refused.json)")
            }
            // Not a number: the store says so, as to a plugin.
            _ = try await http.call("PUT", "/v3/bots/bot/storage/word", json: #"{"value": "abc"}"#)
            let notANumber = try await http.call("POST", "/v3/bots/bot/storage/word/increment")
            #expect(notANumber.status == 400, "\(notANumber.json)")
        }
    }
}
