import Foundation
import PerchTestSupport
import Testing

/// A field that names who acts (a group's `owner`) is the caller, unless the app itself calls: a
/// user's credentials never create something in someone else's name.
@Suite struct ActingForOthersTests {
    @Test func aUserCreatesGroupsInTheirOwnNameOnly() async throws {
        try await withHTTPChat { http in
            let issued = try await http.call("POST", "/v3/users/carol/auth_tokens")
            let token = try #require(issued.data["authToken"] as? String)
            for (who, name) in [(HTTPChat.As.user("carol"), "onBehalfOf"), (.token(token), "token")] {
                for owner in ["bob", "app_system", "bot", "nobody"] {
                    let refused = try await http.call(
                        "POST", "/v3/groups", as: who,
                        json: #"{"guid": "g-\#(name)-\#(owner)", "name": "G", "owner": "\#(owner)"}"#)
                    #expect(refused.status == 403 && refused.errorCode == "ERR_PERMISSION_DENIED", "\(name) \(owner)")
                    #expect(refused.errorField == "owner")
                    #expect(try await http.call("GET", "/v3/groups/g-\(name)-\(owner)").status == 404)
                }
                let own = try await http.call(
                    "POST", "/v3/groups", as: who, json: #"{"guid": "mine-\#(name)", "name": "M", "owner": "carol"}"#)
                #expect(own.status == 200 && own.data["owner"] as? String == "carol")
            }
            // The app (its key alone) creates a group for anyone.
            let forBob = try await http.call(
                "POST", "/v3/groups", as: .app, json: #"{"guid": "bobs", "name": "B", "owner": "bob"}"#)
            #expect(forBob.status == 200 && forBob.data["owner"] as? String == "bob")
        }
    }
}
