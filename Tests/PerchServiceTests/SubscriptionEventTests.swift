import PerchChat
import PerchService
import PerchTestSupport
import Testing

/// `onThreadSubscribed` / `onThreadUnsubscribed`: every change of a subscription, by any means,
/// reaches the user's sessions and the conversation's bots, and nobody else.
@Suite struct SubscriptionEventTests {
    func subscriptionEvents(_ chat: ChatFixture, for uid: String, after seq: Int64) async throws -> [String] {
        try await chat.service.events(for: uid, after: seq).events.compactMap { event in
            guard event.name == .threadSubscribed || event.name == .threadUnsubscribed else { return nil }
            let verb = event.name == .threadSubscribed ? "subscribed" : "unsubscribed"
            return "\(event.actor ?? "?") \(verb) \(event.message?.id ?? 0)"
        }
    }

    @Test func everyChangeIsAnnouncedToTheUserAndTheConversationsBotsOnly() async throws {
        try await withChat { chat in
            _ = try await chat.service.createUser(uid: "robo", name: "Robo", role: User.botRole)
            try await chat.service.addMembers(to: "g", [("robo", .participant)], by: "alice")
            let start = try await chat.service.store.latestEventSequence()
            let root = try await chat.say("root", as: "dave")
            // A reply subscribes its sender and, as the first, the root's author.
            _ = try await chat.say("first", as: "bob", parent: root.id)
            // Already subscribed: nothing changes, nothing is said.
            _ = try await chat.say("again", as: "bob", parent: root.id)
            _ = try await chat.service.subscribeToThread(root.id, as: "bob")
            _ = try await chat.service.unsubscribeFromThread(root.id, as: "bob")
            _ = try await chat.service.unsubscribeFromThread(root.id, as: "bob")
            _ = try await chat.say("hey <@uid:bob>", as: "carol", parent: root.id)

            let id = root.id
            #expect(
                try await subscriptionEvents(chat, for: "robo", after: start) == [
                    "dave subscribed \(id)", "bob subscribed \(id)", "bob unsubscribed \(id)",
                    "carol subscribed \(id)", "bob subscribed \(id)",
                ])
            #expect(
                try await subscriptionEvents(chat, for: "bob", after: start) == [
                    "bob subscribed \(id)", "bob unsubscribed \(id)", "bob subscribed \(id)",
                ])
            // Another person of the group hears nothing of bob's follows.
            #expect(try await subscriptionEvents(chat, for: "alice", after: start).isEmpty)
            #expect(try await subscriptionEvents(chat, for: "dave", after: start) == ["dave subscribed \(id)"])
        }
    }

    /// The group's bots are read as they are at each change: a bot that joins hears the next one,
    /// a bot that left hears no more (the list is remembered between writes, and forgotten when
    /// the members change).
    @Test func aBotThatJoinsOrLeavesIsToldFromItsNextChange() async throws {
        try await withChat { chat in
            for uid in ["early", "late"] {
                _ = try await chat.service.createUser(uid: uid, name: uid, role: User.botRole)
            }
            try await chat.service.addMembers(to: "g", [("early", .participant)], by: "alice")
            let start = try await chat.service.store.latestEventSequence()
            let root = try await chat.say("root", as: "dave")
            _ = try await chat.say("first", as: "bob", parent: root.id)
            try await chat.service.addMembers(to: "g", [("late", .participant)], by: "alice")
            try await chat.service.leave("g", as: "early")
            _ = try await chat.service.subscribeToThread(root.id, as: "carol")

            let id = root.id
            #expect(
                try await subscriptionEvents(chat, for: "early", after: start) == [
                    "dave subscribed \(id)", "bob subscribed \(id)",
                ])
            #expect(try await subscriptionEvents(chat, for: "late", after: start) == ["carol subscribed \(id)"])
        }
    }
}
