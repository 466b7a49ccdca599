import Foundation
import PerchChat
import PerchSQLite
import PerchService
import PerchTestSupport
import Testing

/// The writer remembers users, groups, members, bans, preferences and mutes between sends; a send must
/// still see every committed change to them: this process's, another connection's, and never a
/// rolled-back one.
@Suite struct ReferenceCacheTests {
    private func messageIds(_ chat: ChatFixture, for uid: String) async throws -> [Int64] {
        try await chat.service.notifications(for: uid).records.map(\.messageId)
    }

    @Test func anotherConnectionsChangesHoldAtTheNextSend() async throws {
        try await withChat { chat in
            // Remembered: dave and bob as members of g, bob's (default) preferences.
            try await chat.say("one", as: "dave")
            // Another process (a second store on the file) removes dave and quiets bob.
            let other = try SQLiteChatStore(path: chat.path)
            let elsewhere = ChatService(store: other)
            try await elsewhere.kick("dave", from: "g", by: "alice")
            var quiet = NotificationPreferences()
            quiet.group.messages = .dontSubscribe
            _ = try await elsewhere.updateNotificationPreferences(quiet, of: "bob")
            await other.close()

            await #expect(throws: ChatError(.groupNotJoined, ["guid": .string("g")])) {
                try await chat.say("two", as: "dave")
            }
            let three = try await chat.say("three", as: "carol")
            #expect(try await messageIds(chat, for: "bob").contains(three.id) == false)
            #expect(try await messageIds(chat, for: "alice").contains(three.id))
            #expect(try await messageIds(chat, for: "dave").contains(three.id) == false)
        }
    }

    @Test func anotherConnectionsMuteHoldsAtTheNextSend() async throws {
        try await withChat { chat in
            // Remembered: g's mutes (none).
            let one = try await chat.say("one", as: "dave")
            #expect(try await messageIds(chat, for: "bob") == [one.id])
            let other = try SQLiteChatStore(path: chat.path)
            try await ChatService(store: other).muteConversations(
                [MutedConversation(receiver: .group("g"), until: 0)], as: "bob")
            await other.close()
            let two = try await chat.say("two", as: "dave")
            #expect(try await messageIds(chat, for: "bob") == [one.id])
            #expect(try await messageIds(chat, for: "carol").contains(two.id))
        }
    }

    @Test func thisProcesssChangesHoldAtTheNextSend() async throws {
        try await withChat { chat in
            try await chat.say("one", as: "dave")
            try await chat.service.ban("dave", from: "g", by: "alice")
            await #expect(throws: ChatError.self) { try await chat.say("two", as: "dave") }
            try await chat.service.unban("dave", from: "g", by: "alice")
            _ = try await chat.service.join("g", as: "dave")
            let three = try await chat.say("three", as: "dave")
            #expect(try await messageIds(chat, for: "alice").contains(three.id))
            try await chat.service.addMembers(to: "g", [("erin", .participant)], by: "alice")
            let four = try await chat.say("four", as: "dave")
            #expect(try await messageIds(chat, for: "erin") == [four.id])
        }
    }

    @Test func aWriteThatFailsLeavesNothingRemembered() async throws {
        struct Refused: Error {}
        try await withChat { chat in
            try await chat.say("one", as: "dave")
            // A queued write adds erin, reads what it wrote (remembering it), then fails.
            await #expect(throws: Refused.self) {
                try await chat.store.write { tx in
                    try tx.upsertMember(GroupMember(guid: "g", uid: "erin", scope: .participant))
                    _ = try tx.member(guid: "g", uid: "erin")
                    _ = try tx.memberUids(guid: "g")
                    throw Refused()
                }
            }
            await #expect(throws: ChatError(.groupNotJoined, ["guid": .string("g")])) {
                try await chat.say("two", as: "erin")
            }
            let three = try await chat.say("three", as: "dave")
            #expect(try await messageIds(chat, for: "erin").contains(three.id) == false)
        }
    }
}
