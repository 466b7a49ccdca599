import Foundation
import PerchChat
import PerchHost
import PerchTestSupport
import PerchTesting
import Testing

@testable import PerchHTTP

/// The success path and the error codes of each endpoint group, through a real socket.
@Suite struct HTTPEndpointTests {
    @Test func users() async throws {
        try await withHTTPChat { http in
            let created = try await http.call(
                "POST", "/v3/users", json: #"{"uid": "dan", "name": "Dan", "metadata": {"team": "x"}}"#)
            #expect(created.status == 200 && created.data["uid"] as? String == "dan")
            #expect(
                try await http.call("POST", "/v3/users", json: #"{"uid": "dan", "name": "Dan"}"#).errorCode
                    == "ERR_UID_ALREADY_EXISTS")
            #expect(
                try await http.call("POST", "/v3/users", json: #"{"uid": "app_system", "name": "S"}"#).status == 400)
            let issued = try await http.call("POST", "/v3/users/dan/auth_tokens")
            let token = try #require(issued.data["authToken"] as? String)
            #expect(
                try await http.call("POST", "/v3/users", as: .token(token), json: #"{"uid": "x", "name": "X"}"#).status
                    == 401)
            #expect(try await http.call("GET", "/v3/users?limit=2").list.count == 2)
            #expect(try await http.call("GET", "/v3/users/nobody").errorCode == "ERR_UID_NOT_FOUND")
            #expect(
                try await http.call("PUT", "/v3/users/dan", as: .token(token), json: #"{"name": "Daniel"}"#).data[
                    "name"] as? String == "Daniel")
            #expect(
                try await http.call("PUT", "/v3/users/bob", as: .token(token), json: #"{"name": "B"}"#).errorCode
                    == "ERR_PERMISSION_DENIED")
            #expect(
                try await http.call("PUT", "/v3/users/dan", as: .token(token), json: #"{"role": "admin"}"#).status
                    == 400)
        }
    }

    @Test func groupsAndMembers() async throws {
        try await withHTTPChat { http in
            let created = try await http.call(
                "POST", "/v3/groups", as: .user("bob"), json: #"{"guid": "club", "name": "Club"}"#)
            #expect(created.status == 200 && created.data["owner"] as? String == "bob")
            #expect(
                try await http.call("POST", "/v3/groups", as: .user("bob"), json: #"{"guid": "club", "name": "C"}"#)
                    .errorCode == "ERR_GUID_ALREADY_EXISTS")
            #expect(
                try await http.call(
                    "POST", "/v3/groups", as: .user("bob"), json: #"{"guid": "s", "name": "S", "type": "secret"}"#
                ).errorField == "type")
            _ = try await http.call(
                "POST", "/v3/groups", as: .user("bob"), json: #"{"guid": "vault", "name": "Vault", "type": "private"}"#)
            #expect(
                try await http.call("GET", "/v3/groups/vault", as: .user("carol")).errorCode == "ERR_GUID_NOT_FOUND")
            #expect(
                try await http.call("POST", "/v3/groups/vault/join", as: .user("carol")).errorCode
                    == "ERR_GROUP_JOIN_NOT_ALLOWED")
            #expect(
                try await http.call("GET", "/v3/groups", as: .user("carol")).list.compactMap { $0["guid"] as? String }
                    .contains("vault") == false)
            #expect(try await http.call("POST", "/v3/groups/club/join", as: .user("carol")).status == 200)
            #expect(
                try await http.call("POST", "/v3/groups/club/join", as: .user("carol")).errorCode
                    == "ERR_ALREADY_JOINED")
            #expect(
                try await http.call(
                    "POST", "/v3/groups/club/members", as: .user("carol"), json: #"{"participants": ["alice"]}"#
                ).errorCode == "ERR_GROUP_NO_CLEARANCE")
            #expect(
                try await http.call(
                    "POST", "/v3/groups/club/members", as: .user("bob"), json: #"{"moderators": ["alice"]}"#
                ).status == 200)
            #expect(try await http.call("GET", "/v3/groups/club/members", as: .user("carol")).list.count == 3)
            #expect(
                try await http.call(
                    "PUT", "/v3/groups/club/members/carol", as: .user("bob"), json: #"{"scope": "moderator"}"#
                ).data["scope"] as? String == "moderator")
            #expect(
                try await http.call(
                    "PUT", "/v3/groups/club/members/carol", as: .user("bob"), json: #"{"scope": "moderator"}"#
                ).errorCode == "ERR_SAME_SCOPE")
            #expect(
                try await http.call("DELETE", "/v3/groups/club/members/alice", as: .user("carol")).errorCode
                    == "ERR_GROUP_NO_SCOPE_CLEARANCE")
            #expect(try await http.call("DELETE", "/v3/groups/club/members/alice", as: .user("bob")).status == 200)
            #expect(
                try await http.call("DELETE", "/v3/groups/club/members/alice", as: .user("bob")).errorCode
                    == "ERR_NOT_A_MEMBER")
            #expect(try await http.call("POST", "/v3/groups/club/bannedusers/alice", as: .user("bob")).status == 200)
            #expect(
                try await http.call("POST", "/v3/groups/club/join", as: .user("alice")).errorCode
                    == "ERR_BANNED_GROUPMEMBER")
            #expect(try await http.call("DELETE", "/v3/groups/club/bannedusers/alice", as: .user("bob")).status == 200)
            #expect(try await http.call("POST", "/v3/groups/club/leave", as: .user("carol")).status == 200)
            #expect(
                try await http.call("POST", "/v3/groups/club/leave", as: .user("carol")).errorCode
                    == "ERR_GROUP_NOT_JOINED")
        }
    }

    @Test func aGroupsModeratorsListItsBannedUsers() async throws {
        try await withHTTPChat { http in
            #expect(try await http.call("GET", "/v3/groups/room/bannedusers", as: .user("bob")).list.isEmpty)
            #expect(try await http.call("POST", "/v3/groups/room/bannedusers/carol", as: .user("bob")).status == 200)
            let listed = try await http.call("GET", "/v3/groups/room/bannedusers", as: .user("bob"))
            #expect(listed.status == 200 && listed.list.map { $0["uid"] as? String } == ["carol"])
            #expect(listed.list.first?["name"] as? String == "Carol")
            // Carol, banned, and anyone below moderator are not shown the list.
            let refused = try await http.call("GET", "/v3/groups/other/bannedusers", as: .user("carol"))
            #expect(refused.status == 403 && refused.errorCode == "ERR_GROUP_NO_CLEARANCE")
            #expect(
                try await http.call("GET", "/v3/groups/nowhere/bannedusers", as: .user("bob")).errorCode
                    == "ERR_GUID_NOT_FOUND")
        }
    }

    @Test func aGroupsOwnerAndAdminsUpdateIt() async throws {
        try await withHTTPChat { http in
            let renamed = try await http.call(
                "PUT", "/v3/groups/room", as: .user("bob"), json: #"{"name": "The Room", "metadata": {"topic": "x"}}"#)
            #expect(renamed.status == 200 && renamed.data["name"] as? String == "The Room")
            #expect(
                try await http.call("GET", "/v3/groups/room", as: .user("carol")).data["name"] as? String == "The Room")
            let refused = try await http.call("PUT", "/v3/groups/room", as: .user("carol"), json: #"{"name": "Mine"}"#)
            #expect(refused.status == 403 && refused.errorCode == "ERR_GROUP_NO_CLEARANCE")
            #expect(
                try await http.call("PUT", "/v3/groups/room", as: .user("bob"), json: #"{"type": "secret"}"#).errorCode
                    == "ERR_BAD_REQUEST")
            #expect(
                try await http.call("PUT", "/v3/groups/room", as: .user("bob"), json: #"{"owner": "bob"}"#).errorCode
                    == "ERR_BAD_REQUEST")
            #expect(try await http.call("PUT", "/v3/groups/room", as: .user("bob")).errorCode == "ERR_BAD_REQUEST")
            #expect(
                try await http.call("PUT", "/v3/groups/room", json: #"{"type": "private"}"#).data["type"] as? String
                    == "private")
        }
    }

    @Test func messageRefusals() async throws {
        try await withHTTPChat { http in
            func send(_ json: String, as uid: String = "carol") async throws -> HTTPChat.Answer {
                try await http.call("POST", "/v3/messages", as: .user(uid), json: json)
            }
            let root = try await send(#"{"receiver": "room", "receiverType": "group", "data": {"text": "root"}}"#)
            let rootId = try #require(root.data["id"] as? Int)
            let reply = try await http.call(
                "POST", "/v3/messages/\(rootId)/thread", as: .user("bob"), json: #"{"data": {"text": "r"}}"#)
            let replyId = try #require(reply.data["id"] as? Int)
            #expect(
                try await send(
                    #"{"receiver": "room", "receiverType": "group", "parentId": \#(replyId), "data": {"text": "x"}}"#
                ).errorCode == "ERR_MESSAGE_THREAD_NESTING")
            #expect(
                try await send(
                    #"{"receiver": "other", "receiverType": "group", "parentId": \#(rootId), "data": {"text": "x"}}"#
                ).errorCode == "ERR_WRONG_MESSAGE_THREAD")
            let quote = try await send(
                #"{"receiver": "room", "receiverType": "group", "quotedMessageId": \#(rootId), "data": {"text": "q"}}"#,
                as: "bob")
            let quoteId = try #require(quote.data["id"] as? Int)
            #expect(
                try await send(
                    #"{"receiver": "room", "receiverType": "group", "quotedMessageId": \#(quoteId), "data": {"text": "x"}}"#
                ).errorCode == "ERR_MESSAGE_ACTION_NOT_ALLOWED")
            let guarded = try await http.call("DELETE", "/v3/messages/\(rootId)", as: .user("carol"))
            #expect(guarded.status == 409 && guarded.errorCode == "ERR_MESSAGE_ACTION_NOT_ALLOWED")
            #expect(
                ((guarded.json["error"] as? [String: Any])?["details"] as? [String: Any])?["quoteReplyCount"] as? Int
                    == 1)
            #expect(
                try await http.call("DELETE", "/v3/messages/\(quoteId)", as: .user("carol")).errorCode
                    == "ERR_MESSAGE_NOT_A_SENDER")
            #expect(
                try await send(#"{"receiver": "room", "receiverType": "group", "data": {"text": "  "}}"#).errorCode
                    == "ERR_EMPTY_MESSAGE_TEXT")
            #expect(
                try await send(#"{"receiver": "room", "receiverType": "planet", "data": {"text": "x"}}"#).errorCode
                    == "ERR_INVALID_RECEIVER_TYPE")
            #expect(
                try await send(#"{"receiver": "nowhere", "receiverType": "group", "data": {"text": "x"}}"#).errorCode
                    == "ERR_GUID_NOT_FOUND")
            #expect(
                try await send(#"{"receiver": "room", "receiverType": "group", "data": {"text": "x"}}"#, as: "ghost")
                    .errorCode == "ERR_UID_NOT_FOUND")
            #expect(try await http.call("DELETE", "/v3/messages/\(rootId)", as: .user("bob")).status == 200)
            #expect(
                try await http.call("POST", "/v3/messages/\(rootId)/pin", as: .user("bob")).errorCode
                    == "ERR_MESSAGE_ID_NOT_FOUND")
            #expect(
                try await http.call("POST", "/v3/messages/\(replyId)/thread/subscription", as: .user("bob")).errorCode
                    == "ERR_MESSAGE_ACTION_NOT_ALLOWED")
            // errorParams keep an id's every digit: a double would round it and write it in exponent form.
            let largest = try await http.call("GET", "/v3/messages/9223372036854775807", as: .user("bob"))
            #expect(largest.errorCode == "ERR_MESSAGE_ID_NOT_FOUND")
            #expect(String(decoding: largest.body, as: UTF8.self).contains(#""messageId":9223372036854775807"#))
        }
    }

    /// The conversation listings take CometChat's REST filters as query parameters, and refuse
    /// those on state Perch does not keep instead of leaving them out.
    @Test func conversationListingsTakeCometChatsFilters() async throws {
        try await withHTTPChat { http in
            func send(_ json: String, as uid: String) async throws -> Int {
                let answer = try await http.call("POST", "/v3/messages", as: .user(uid), json: json)
                return try #require(answer.data["id"] as? Int)
            }
            let first = try await send(
                #"{"receiver": "room", "receiverType": "group", "data": {"text": "one"}}"#, as: "bob")
            _ = try await send(
                #"{"receiver": "room", "receiverType": "group", "tags": ["ops"], "data": {"text": "two"}}"#, as: "carol"
            )
            _ = try await send(
                #"{"receiver": "room", "receiverType": "group", "quotedMessageId": \#(first), "data": {"text": "three"}}"#,
                as: "bob")
            func texts(_ query: String, at path: String = "/v3/groups/room/messages?category=message&") async throws
                -> [String]
            {
                let answer = try await http.call("GET", path + query, as: .user("carol"))
                #expect(answer.status == 200, "\(query): \(String(decoding: answer.body, as: UTF8.self))")
                return answer.list.compactMap {
                    ($0["data"] as? [String: Any])?["text"] as? String ?? $0["text"] as? String
                }
            }
            #expect(try await texts("sender=bob") == ["one", "three"])
            #expect(try await texts("tags=ops,other&withTags=true") == ["two"])
            #expect(try await texts("hideQuotedMessages=true") == ["one", "two"])
            #expect(try await texts("sender=bob&hideQuotedMessages=true&type=text") == ["one"])
            let listed = try await http.call("GET", "/v3/messages/\(first)", as: .user("carol"))
            let now = try #require(listed.data["sentAt"] as? Int)
            #expect(try await texts("fromTimestamp=\(now + 3600)") == [])
            #expect(try await texts("toTimestamp=\(now + 3600)&sender=carol") == ["two"])
            #expect(try await texts("timestamp=\(now - 3600)") == [])
            #expect(try await texts("timestamp=\(now - 3600)&affix=append&sender=carol") == ["two"])
            for (query, field) in [
                ("unread=true", "unread"), ("updatedAfter=5", "updatedAfter"), ("hasReactions=maybe", "hasReactions"),
                ("fromTimestamp=soon", "fromTimestamp"), ("hasMentions=maybe", "hasMentions"),
                ("fromTimestamp=\(now)&toTimestamp=\(now - 1)", "fromTimestamp"), ("category=chat", "category"),
            ] {
                let refused = try await http.call("GET", "/v3/groups/room/messages?\(query)", as: .user("carol"))
                #expect(refused.status == 400 && refused.errorCode == "ERR_BAD_REQUEST", "\(query)")
                #expect(
                    ((refused.json["error"] as? [String: Any])?["details"] as? [String: Any])?["field"] as? String
                        == field, "\(query)")
            }
            #expect(try await texts("unread=false") == ["one", "two", "three"])
            // The pinned and the saved lists take the same filters.
            let conversation = try await http.call(
                "GET", "/v3/groups/room/messages?category=message", as: .user("carol"))
            for id in conversation.list.compactMap({ $0["id"] as? Int }) {
                #expect(try await http.call("POST", "/v3/messages/\(id)/pin").status == 200)
                #expect(try await http.call("POST", "/v3/messages/\(id)/save", as: .user("carol")).status == 200)
            }
            #expect(try await texts("pinned=true&sender=bob&hideQuotedMessages=true") == ["one"])
            #expect(try await texts("pinned=true&tags=ops") == ["two"])
            #expect(try await texts("saved=true&sender=bob", at: "/v3/messages?") == ["three", "one"])
        }
    }

    /// CometChat's Send Bot Message: the app posts as one of its bots, with a send's body.
    @Test func theAppSendsAsABot() async throws {
        let bots = ["b.yaml": botFile("  - on: { command: ping }\n    do: [{ reply: \"pong\" }]\n")]
        try await withHTTPChat(bots: bots) { http in
            let root = try await http.call(
                "POST", "/v3/messages", as: .user("carol"),
                json: #"{"receiver": "room", "receiverType": "group", "data": {"text": "a question"}}"#)
            let rootId = try #require(root.data["id"] as? Int)
            let answer =
                #"{"receiver": "room", "receiverType": "group", "parentId": \#(rootId), "#
                + #""muid": "m1", "data": {"text": "an answer"}}"#
            let sent = try await http.call("POST", "/v3/bots/bot/messages", json: answer)
            #expect(sent.status == 200)
            #expect(sent.data["sender"] as? String == "bot" && sent.data["parentMessageId"] as? Int == rootId)
            let thread = try await http.call("GET", "/v3/messages/\(rootId)/thread", as: .user("carol"))
            #expect(thread.list.map { $0["sender"] as? String } == ["bot"])
            // The same muid is the same message, as on any send; one-on-one works too.
            let again = try await http.call("POST", "/v3/bots/bot/messages", json: answer)
            #expect(again.data["id"] as? Int == sent.data["id"] as? Int)
            let direct = try await http.call(
                "POST", "/v3/bots/bot/messages",
                json: #"{"receiver": "carol", "receiverType": "user", "data": {"text": "hi carol"}}"#)
            #expect(direct.data["sender"] as? String == "bot" && direct.data["receiverUid"] as? String == "carol")
            // `onBehalfOf` does not change the sender: the path names it.
            let behalf = try await http.call(
                "POST", "/v3/bots/bot/messages", as: .user("alice"),
                json: #"{"receiver": "room", "receiverType": "group", "data": {"text": "still the bot"}}"#)
            #expect(behalf.data["sender"] as? String == "bot")

            // Only users with role `bot` send this way, and only with the API key.
            let body = #"{"receiver": "room", "receiverType": "group", "data": {"text": "x"}}"#
            for uid in ["carol", "ghost"] {
                let refused = try await http.call("POST", "/v3/bots/\(uid)/messages", json: body)
                #expect(refused.status == 404 && refused.errorCode == "ERR_BOT_NOT_FOUND")
                #expect(
                    ((refused.json["error"] as? [String: Any])?["details"] as? [String: Any])?["uid"] as? String == uid)
            }
            let token = try #require(
                try await http.call("POST", "/v3/users/carol/auth_tokens").data["authToken"] as? String)
            let byUser = try await http.call("POST", "/v3/bots/bot/messages", as: .token(token), json: body)
            #expect(byUser.status == 401 && byUser.errorCode == "AUTH_ERR_APIKEY_NOT_FOUND")
            // A send's own refusals stay: the bot is no member of a group it was not given.
            _ = try await http.call(
                "POST", "/v3/groups", json: #"{"guid": "third", "name": "Third", "owner": "alice"}"#)
            #expect(
                try await http.call(
                    "POST", "/v3/bots/bot/messages",
                    json: #"{"receiver": "third", "receiverType": "group", "data": {"text": "x"}}"#
                ).errorCode == "ERR_GROUP_NOT_JOINED")
            #expect(
                try await http.call("POST", "/v3/bots/bot/messages", json: #"{"receiver": "room"}"#).errorCode
                    == "ERR_BAD_REQUEST")
            #expect(
                try await http.chat.botMessages(in: .group("room")).compactMap(\.text) == [
                    "an answer", "still the bot",
                ])
        }
    }

    @Test func threadsPreferencesNotificationsFeaturesAndHooks() async throws {
        let hookBot = botFile(
            """
              - on: { webhook: deploy, group: room }
                do: [{ reply: "deployed {webhook.version}" }]
            """)
        try await withHTTPChat(bots: ["b.yaml": hookBot]) { http in
            #expect(try await http.call("GET", "/v3/threads?uid=bob&guid=room", as: .user("carol")).status == 400)
            #expect(try await http.call("GET", "/v3/threads?participatedByMe=false", as: .user("carol")).status == 400)
            #expect(
                try await http.call("GET", "/v3/threads?guid=other", as: .user("bob")).errorCode
                    == "ERR_GROUP_NOT_JOINED")
            let preferences = try await http.call("GET", "/v3/notifications/preferences", as: .user("carol"))
            #expect((preferences.data["groupPreferences"] as? [String: Any])?["groupMessages"] as? Int == 2)
            let updated = try await http.call(
                "PUT", "/v3/notifications/preferences", as: .user("carol"),
                json: #"{"groupPreferences": {"groupMessages": "SUBSCRIBE_TO_MENTIONS", "groupReplies": 4}}"#)
            #expect((updated.data["groupPreferences"] as? [String: Any])?["groupReplies"] as? Int == 4)
            _ = try await http.call(
                "POST", "/v3/messages", as: .user("bob"),
                json: #"{"receiver": "room", "receiverType": "group", "data": {"text": "plain"}}"#)
            let mention = try await http.call(
                "POST", "/v3/messages", as: .user("bob"),
                json: #"{"receiver": "room", "receiverType": "group", "data": {"text": "hey <@uid:carol>"}}"#)
            let outbox = try await http.call("GET", "/v3/notifications", as: .user("carol"))
            #expect(outbox.list.map { $0["reason"] as? String } == ["mention"])
            #expect(outbox.list.first?["messageId"] as? Int == mention.data["id"] as? Int)
            // CometChat's mute: the room muted, then do not disturb, each silence carol's outbox.
            func bobSays(_ text: String) async throws {
                let body = #"{"receiver": "room", "receiverType": "group", "data": {"text": "\#(text)"}}"#
                #expect(try await http.call("POST", "/v3/messages", as: .user("bob"), json: body).status == 200)
            }
            #expect((updated.data["mutePreferences"] as? [String: Any])?["dnd"] as? Bool == false)
            let muted = try await http.call(
                "PUT", "/v3/notifications/preferences/mute", as: .user("carol"),
                json: #"{"conversations": [{"id": "room", "type": "group"}, {"id": "bob", "type": "oneOnOne"}]}"#)
            #expect(muted.status == 200 && muted.data["success"] as? Bool == true)
            let listed = try await http.call("GET", "/v3/notifications/preferences/mute", as: .user("carol"))
            #expect(
                (listed.data["mutedConversations"] as? [[String: Any]])?.map {
                    "\($0["type"] as? String ?? "?"):\($0["id"] as? String ?? "?"):\($0["until"] as? Int ?? -1)"
                } == ["oneOnOne:bob:0", "group:room:0"])
            try await bobSays("muted <@uid:carol>")
            #expect(try await http.call("GET", "/v3/notifications", as: .user("carol")).list.count == 1)
            let unmuted = try await http.call(
                "DELETE", "/v3/notifications/preferences/mute", as: .user("carol"),
                json: #"{"conversations": [{"id": "room", "type": "group"}]}"#)
            #expect(unmuted.status == 200)
            let dnd = try await http.call(
                "PUT", "/v3/notifications/preferences", as: .user("carol"), json: #"{"mutePreferences": {"dnd": true}}"#
            )
            #expect((dnd.data["mutePreferences"] as? [String: Any])?["dnd"] as? Bool == true)
            #expect((dnd.data["groupPreferences"] as? [String: Any])?["groupReplies"] as? Int == 4)
            try await bobSays("dnd <@uid:carol>")
            #expect(try await http.call("GET", "/v3/notifications", as: .user("carol")).list.count == 1)
            _ = try await http.call(
                "PUT", "/v3/notifications/preferences", as: .user("carol"),
                json: #"{"mutePreferences": {"dnd": false}}"#)
            try await bobSays("back <@uid:carol>")
            #expect(try await http.call("GET", "/v3/notifications", as: .user("carol")).list.count == 2)
            let outside = try await http.call(
                "PUT", "/v3/notifications/preferences/mute", as: .user("bob"),
                json: #"{"conversations": [{"id": "other", "type": "group"}]}"#)
            #expect(outside.status == 403 && outside.errorCode == "ERR_GROUP_NOT_JOINED")
            #expect(try await http.call("GET", "/v3/notifications?after=x", as: .user("carol")).status == 400)
            // After the retention removed rows the caller had not read, `meta.missed` names them and
            // `next` moves past them; a read after them is not told again.
            _ = try await http.chat.service.pruneEventLog(olderThan: 0)
            let pruned = try await http.call("GET", "/v3/notifications", as: .user("carol"))
            let meta = pruned.json["meta"] as? [String: Any]
            let missed = meta?["missed"] as? [String: Any]
            let through = missed?["through"] as? Int ?? 0
            #expect(missed?["from"] as? Int == 1 && through >= 2)
            let next = (meta?["next"] as? [String: Any])?["after"] as? Int
            #expect(next == pruned.list.last?["seq"] as? Int ?? through)
            let after = try await http.call("GET", "/v3/notifications?after=\(through)", as: .user("carol"))
            #expect(after.status == 200 && (after.json["meta"] as? [String: Any])?["missed"] == nil)
            #expect(try await http.call("GET", "/v3/features", as: .user("carol")).data["pin"] as? Bool == true)
            #expect(
                try await http.call("POST", "/v3/hooks/deploy", json: #"{"version": "2.0"}"#).data["rules"] as? Int == 1
            )
            let unknownHook = try await http.call("POST", "/v3/hooks/unknown", json: "{}")
            #expect(unknownHook.status == 404)
            #expect(unknownHook.errorCode == "ERR_WEBHOOK_NOT_FOUND")
            #expect(
                ((unknownHook.json["error"] as? [String: Any])?["details"] as? [String: Any])?["name"] as? String
                    == "unknown")
            #expect(try await http.call("POST", "/v3/hooks/deploy", as: .user("carol"), json: "{}").status == 200)
            let issued = try await http.call("POST", "/v3/users/carol/auth_tokens")
            let token = try #require(issued.data["authToken"] as? String)
            #expect(try await http.call("POST", "/v3/hooks/deploy", as: .token(token), json: "{}").status == 401)
            try await http.chat.settle()
            let texts = try await http.chat.messages(in: .group("room"), viewer: "alice").filter { $0.sender == "bot" }
                .compactMap(\.text)
            #expect(texts.first == "deployed 2.0")
            #expect(try await http.call("GET", "/v3/events", as: .nobody).status == 401)
        }
    }

    /// Reactions over REST: the reaction is a percent-encoded path part; a message's counts say
    /// which are the caller's; who reacted comes a page at a time; a message the caller cannot see
    /// takes no reactions from them and shows none.
    @Test func reactionsOverREST() async throws {
        try await withHTTPChat { http in
            let sent = try await http.call(
                "POST", "/v3/messages", as: .user("bob"),
                json: #"{"receiver": "room", "receiverType": "group", "data": {"text": "ship it?"}}"#)
            let id = sent.data["id"] as! Int
            #expect((sent.data["reactions"] as? [Any])?.isEmpty == true)
            // The reaction is a path part, percent-encoded.
            let thumbs = "%F0%9F%91%8D"
            let added = try await http.call("POST", "/v3/messages/\(id)/reactions/\(thumbs)", as: .user("carol"))
            #expect(added.status == 200)
            let counts = added.data["reactions"] as? [[String: Any]]
            #expect(counts?.first?["reaction"] as? String == "👍")
            #expect(counts?.first?["count"] as? Int == 1)
            #expect(counts?.first?["reactedByMe"] as? Bool == true)
            _ = try await http.call("POST", "/v3/messages/\(id)/reactions/:eyes:", as: .user("bob"))
            _ = try await http.call("POST", "/v3/messages/\(id)/reactions/\(thumbs)", as: .user("bob"))
            // bob's view of the conversation counts both, and says which are his.
            let page = try await http.call("GET", "/v3/groups/room/messages", as: .user("bob"))
            let mine = page.list.first { $0["id"] as? Int == id }?["reactions"] as? [[String: Any]]
            #expect(
                mine?.map { "\($0["reaction"]!) \($0["count"]!) \($0["reactedByMe"]!)" } == ["👍 2 1", ":eyes: 1 1"])
            // Who reacted, a page at a time through meta.next.after.
            let first = try await http.call("GET", "/v3/messages/\(id)/reactions?limit=2", as: .user("carol"))
            #expect(first.list.map { $0["uid"] as? String } == ["carol", "bob"])
            let next = ((first.json["meta"] as? [String: Any])?["next"] as? [String: Any])?["after"] as? Int
            let second = try await http.call(
                "GET", "/v3/messages/\(id)/reactions?limit=2&after=\(next ?? -1)", as: .user("carol"))
            #expect(second.list.map { "\($0["uid"]!) \($0["reaction"]!)" } == ["bob 👍"])
            #expect((second.json["meta"] as? [String: Any])?["next"] == nil)
            let onlyEyes = try await http.call(
                "GET", "/v3/messages/\(id)/reactions?reaction=:eyes:", as: .user("carol"))
            #expect(onlyEyes.list.map { $0["uid"] as? String } == ["bob"])
            let removed = try await http.call("DELETE", "/v3/messages/\(id)/reactions/\(thumbs)", as: .user("bob"))
            #expect((removed.data["reactions"] as? [[String: Any]])?.map { $0["count"] as? Int } == [1, 1])
            let reacted = try await http.call("GET", "/v3/groups/room/messages?hasReactions=true", as: .user("bob"))
            #expect(reacted.list.map { $0["id"] as? Int } == [id])
            // Refusals: the text, the message, the viewer, the cursor.
            let spaced = try await http.call("POST", "/v3/messages/\(id)/reactions/a%20b", as: .user("bob"))
            #expect(spaced.status == 400 && spaced.errorField == "reaction")
            #expect(try await http.call("POST", "/v3/messages/999999/reactions/x", as: .user("bob")).status == 404)
            let elsewhere = try await http.call(
                "POST", "/v3/messages", as: .user("carol"),
                json: #"{"receiver": "other", "receiverType": "group", "data": {"text": "not for bob"}}"#)
            let hidden = elsewhere.data["id"] as! Int
            for (method, path) in [("GET", "reactions"), ("POST", "reactions/x"), ("DELETE", "reactions/x")] {
                let outsider = try await http.call(method, "/v3/messages/\(hidden)/\(path)", as: .user("bob"))
                #expect(outsider.status == 403 && outsider.errorCode == "ERR_MESSAGE_NO_ACCESS", "\(method)")
            }
            let badCursor = try await http.call("GET", "/v3/messages/\(id)/reactions?after=x", as: .user("bob"))
            #expect(badCursor.status == 400 && badCursor.errorField == "after")
            #expect(try await http.call("GET", "/v3/messages/\(id)/reactions?limit=0", as: .user("bob")).status == 400)
        }
    }

    @Test func preferenceChangesMadeAtOnceAllHold() async throws {
        // Each PUT changes only the fields it names: four made at once, each naming another field,
        // must all be there afterwards, none lost to another's read of the older preferences.
        try await withHTTPChat { http in
            let changes = [
                (#"{"groupPreferences": {"groupMessages": 3}}"#, "groupPreferences", "groupMessages", 3),
                (#"{"groupPreferences": {"groupReplies": 4}}"#, "groupPreferences", "groupReplies", 4),
                (
                    #"{"oneOnOnePreferences": {"oneOnOneQuotedReplies": 1}}"#, "oneOnOnePreferences",
                    "oneOnOneQuotedReplies", 1
                ),
                (
                    #"{"oneOnOnePreferences": {"oneOnOneMessages": "DONT_SUBSCRIBE"}}"#, "oneOnOnePreferences",
                    "oneOnOneMessages", 1
                ),
            ]
            let reset = """
                {"groupPreferences": {"groupMessages": 2, "groupReplies": 2},
                 "oneOnOnePreferences": {"oneOnOneMessages": 2, "oneOnOneQuotedReplies": 2}, "mutePreferences": {"dnd": false}}
                """
            for _ in 0..<12 {
                #expect(
                    try await http.call("PUT", "/v3/notifications/preferences", as: .user("carol"), json: reset).status
                        == 200)
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for change in changes {
                        group.addTask {
                            try await http.call(
                                "PUT", "/v3/notifications/preferences", as: .user("carol"), json: change.0
                            ).status
                        }
                    }
                    group.addTask {
                        try await http.call(
                            "PUT", "/v3/notifications/preferences", as: .user("carol"),
                            json: #"{"mutePreferences": {"dnd": true}}"#
                        ).status
                    }
                    for try await status in group { #expect(status == 200) }
                }
                let stored = try await http.call("GET", "/v3/notifications/preferences", as: .user("carol")).data
                for (_, object, field, value) in changes {
                    #expect((stored[object] as? [String: Any])?[field] as? Int == value, "\(field)")
                }
                #expect((stored["mutePreferences"] as? [String: Any])?["dnd"] as? Bool == true)
            }
        }
    }

    /// A webhook with its own secret takes GitHub's signature or GitLab's token instead of the
    /// app's API key (a service cannot send an `apikey` header, and should not hold the key), and
    /// fires only the rules that secret belongs to; without the key an unknown hook is told as a
    /// refusal, so names cannot be probed.
    @Test func aWebhookWithASecretTakesASignatureOrATokenInsteadOfTheKey() async throws {
        let secret = "hook-secret-0123456789"
        let hookBot = botFile(
            """
              - name: signed
                on: { webhook: push, group: room, secret: "\(secret)" }
                do: [{ reply: "pushed {webhook.ref}" }]
              - name: other
                on: { webhook: push, group: room, secret: "another-secret-0123456789" }
                do: [{ reply: "other {webhook.ref}" }]
            """)
        try await withHTTPChat(bots: ["b.yaml": hookBot]) { http in
            let body = Data(#"{"ref": "main"}"#.utf8)
            let mac = WebhookSignature.hmacSHA256(key: secret, Array(body))
            let hex = mac.map { String(format: "%02x", $0) }.joined()
            // GitHub's own example (docs: "Validating webhook deliveries"): the digest is right.
            #expect(
                WebhookSignature.hmacSHA256(key: "It's a Secret to Everybody", Array("Hello, World!".utf8))
                    .map { String(format: "%02x", $0) }.joined()
                    == "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
            func post(_ headers: [String: String], body: Data = body, path: String = "/v3/hooks/push") async throws
                -> HTTPChat.Answer
            {
                try await http.call("POST", path, as: .nobody, body: body, headers: headers)
            }
            let signed = try await post(["X-Hub-Signature-256": "sha256=" + hex])
            #expect(signed.status == 200)
            #expect(signed.data["rules"] as? Int == 1)
            #expect(try await post(["X-Gitlab-Token": secret]).data["rules"] as? Int == 1)
            #expect(try await post(["Authorization": "Bearer " + secret]).data["rules"] as? Int == 1)
            // The app's key fires every rule on the hook.
            #expect(try await http.call("POST", "/v3/hooks/push", body: body).data["rules"] as? Int == 2)

            // Refused: a signature of another body, a wrong token, a signature that is not hex,
            // nothing at all, and a hook that does not exist (the same answer as a wrong secret).
            let tampered = try await post(["X-Hub-Signature-256": "sha256=" + hex], body: Data(#"{"ref": "x"}"#.utf8))
            #expect(tampered.status == 401)
            #expect(tampered.errorCode == "AUTH_ERR_APIKEY_NOT_FOUND")
            #expect(try await post(["X-Gitlab-Token": secret + "x"]).status == 401)
            #expect(try await post(["X-Hub-Signature-256": "sha256=zz"]).status == 401)
            #expect(try await post(["X-Hub-Signature-256": hex]).status == 401)
            let bare = try await post([:])
            #expect(bare.status == 401)
            #expect(bare.errorCode == "AUTH_ERR_APIKEY_NOT_FOUND")
            let unknown = try await post(["X-Gitlab-Token": secret], path: "/v3/hooks/nothing")
            #expect(unknown.status == 401)
            #expect(unknown.errorCode == "AUTH_ERR_APIKEY_NOT_FOUND")

            try await http.chat.settle()
            let texts = try await http.chat.messages(in: .group("room"), viewer: "alice").filter { $0.sender == "bot" }
                .compactMap(\.text)
            #expect(texts.sorted() == ["other main", "pushed main", "pushed main", "pushed main", "pushed main"])
        }
    }

    @Test func theSendGovernorAnswers429WithRetryAfter() async throws {
        try await withHTTPChat(messagesPerMinute: 3) { http in
            let message = #"{"receiver": "room", "receiverType": "group", "data": {"text": "x"}}"#
            for _ in 0..<3 {
                #expect(try await http.call("POST", "/v3/messages", as: .user("carol"), json: message).status == 200)
            }
            let limited = try await http.call("POST", "/v3/messages", as: .user("carol"), json: message)
            #expect(limited.status == 429 && limited.errorCode == "ERR_TOO_MANY_REQUESTS")
            let retryAfter =
                ((limited.json["error"] as? [String: Any])?["details"] as? [String: Any])?["retryAfter"] as? Int
            #expect((1...60).contains(retryAfter ?? 0))
            // RFC 9110's header says the same, for clients that read only headers.
            #expect(limited.headers["retry-after"] == retryAfter.map(String.init))
            // Another user has their own minute.
            #expect(try await http.call("POST", "/v3/messages", as: .user("bob"), json: message).status == 200)
        }
    }
}
