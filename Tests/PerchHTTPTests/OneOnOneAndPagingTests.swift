import Foundation
import PerchChat
import PerchTestSupport
import Testing

/// The API's details a careful client hits: a one-on-one conversation from either side, the saver's
/// `savedAt` on the live event, and pinned and saved lists longer than a page.
@Suite struct OneOnOneAndPagingTests {
    /// Every endpoint that takes its conversation from a message works for both people of a
    /// one-on-one conversation.
    @Test func aOneOnOneThreadIsRepliedToAndListedFromBothSides() async throws {
        try await withHTTPChat { http in
            let sent = try await http.call(
                "POST", "/v3/messages", as: .user("alice"),
                json: #"{"receiver":"bob","receiverType":"user","data":{"text":"a question"}}"#)
            let root = try #require(sent.data["id"] as? Int)
            for (who, text) in [("bob", "an answer"), ("alice", "thanks"), ("bob", "welcome")] {
                let reply = try await http.call(
                    "POST", "/v3/messages/\(root)/thread", as: .user(who), json: #"{"data":{"text":"\#(text)"}}"#)
                #expect(reply.status == 200, "\(who): \(String(decoding: reply.body, as: UTF8.self))")
                #expect(reply.data["conversationId"] as? String == sent.data["conversationId"] as? String)
                #expect(reply.data["parentMessageId"] as? Int == root)
            }
            for (viewer, other) in [("alice", "bob"), ("bob", "alice")] {
                let thread = try await http.call("GET", "/v3/messages/\(root)/thread", as: .user(viewer))
                #expect(thread.list.compactMap { $0["text"] as? String } == ["an answer", "thanks", "welcome"])
                // A quote reply to the root, from either side, stays in their conversation.
                let quoted = try await http.call(
                    "POST", "/v3/messages", as: .user(viewer),
                    json:
                        #"{"receiver":"\#(other)","receiverType":"user","quotedMessageId":\#(root),"data":{"text":"q"}}"#
                )
                #expect(quoted.status == 200)
                // The threads inbox names the other person, never the viewer.
                let inbox = try await http.call("GET", "/v3/threads", as: .user(viewer))
                let row = try #require(inbox.list.first { $0["parentMessageId"] as? Int == root })
                #expect(row["receiverUid"] as? String == other && row["receiverType"] as? String == "user")
            }
        }
    }

    @Test func theLiveSaveEventCarriesTheSaversSavedAt() async throws {
        try await withHTTPChat { http in
            let sent = try await http.chat.post("keep", as: "alice", to: .group("room"))
            let start = try await http.chat.service.store.latestEventSequence()
            let saved = try await http.call("POST", "/v3/messages/\(sent.id)/save", as: .user("bob"))
            let savedAt = try #require(saved.data["savedAt"] as? Int)
            #expect(savedAt > 0)
            let events = try await http.chat.service.events(for: "bob", after: start).events
            let event = try #require(events.first { $0.name == .messageSaved })
            #expect(event.message?.savedAt == Int64(savedAt))
            _ = try await http.call("DELETE", "/v3/messages/\(sent.id)/save", as: .user("bob"))
            let after = try await http.chat.service.events(for: "bob", after: start).events
            #expect(after.first { $0.name == .messageUnsaved }?.message?.savedAt == 0)
        }
    }

    /// With the pin and save limits raised past a page (100), both lists page to their end.
    @Test func pinnedAndSavedListsPageToTheEndPastTheirLimit() async throws {
        let config = hostConfig + "\nlimits: { pinsPerConversation: 250, savesPerUser: 250 }\n"
        try await withHTTPChat(config: config) { http in
            var ids: [Int64] = []
            for index in 0..<130 {
                let message = try await http.chat.post("m\(index)", as: "alice", to: .group("room"))
                _ = try await http.chat.service.pin(message.id, as: "alice")
                _ = try await http.chat.service.save(message.id, as: "bob")
                ids.append(message.id)
            }
            for (path, who) in [("/v3/groups/room/messages?pinned=true", "alice"), ("/v3/messages?saved=true", "bob")] {
                var seen: [Int] = []
                var next = ""
                for _ in 0..<5 {
                    let page = try await http.call("GET", path + "&limit=100" + next, as: .user(who))
                    #expect(page.status == 200)
                    seen += page.list.compactMap { $0["id"] as? Int }
                    let meta = page.json["meta"] as? [String: Any]
                    guard meta?["hasMore"] as? Bool == true,
                        let cursor = (meta?["next"] as? [String: Any])?["id"] as? Int
                    else { break }
                    next = "&id=\(cursor)&affix=append"
                }
                #expect(seen.count == 130, "\(path)")
                #expect(Set(seen) == Set(ids.map(Int.init)), "\(path)")
            }
        }
    }
}
