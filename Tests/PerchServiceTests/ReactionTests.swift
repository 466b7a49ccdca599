import PerchChat
import PerchService
import PerchTestSupport
import Testing

/// Reactions (CometChat's `addReaction`, `removeReaction`, `ReactionsRequest`): per user and
/// reaction, counted on every fetched message, announced to the whole conversation.
@Suite struct ReactionTests {
    @Test func reactionsAreCountedPerViewerInTheOrderFirstAdded() async throws {
        try await withChat { chat in
            let message = try await chat.say("ship it?", as: "dave")
            let mine = try await chat.service.addReaction("👍", to: message.id, as: "bob")
            #expect(mine.reactions == [ReactionCount(reaction: "👍", count: 1, reactedByMe: true)])
            chat.clock.advance(by: 1)
            _ = try await chat.service.addReaction("🎉", to: message.id, as: "carol")
            _ = try await chat.service.addReaction("👍", to: message.id, as: "carol")
            // Reacting again is idempotent: no second count, no second event.
            _ = try await chat.service.addReaction("👍", to: message.id, as: "carol")
            let seen = try await chat.service.message(message.id, as: "carol")
            #expect(
                seen.reactions == [
                    ReactionCount(reaction: "👍", count: 2, reactedByMe: true),
                    ReactionCount(reaction: "🎉", count: 1, reactedByMe: true),
                ])
            let bobs = try await chat.service.message(message.id, as: "bob")
            #expect(bobs.reactions.map(\.reactedByMe) == [true, false])
            // Every listing fills them, per viewer.
            let page = try await chat.service.fetchNext(MessagesRequest(guid: "g"), as: "dave")
            #expect(page.messages.last?.reactions.map(\.reactedByMe) == [false, false])
            #expect(page.messages.last?.reactions.map(\.count) == [2, 1])
            // hasReactions keeps only the messages someone reacted to.
            var reacted = MessagesRequest(guid: "g")
            reacted.hasReactions = true
            _ = try await chat.say("no one reacts to this", as: "dave")
            #expect(try await chat.service.fetchNext(reacted, as: "dave").messages.map(\.id) == [message.id])
            // Taking back one; taking back one never made is quiet.
            let after = try await chat.service.removeReaction("👍", from: message.id, as: "bob")
            // 👍 now dates from carol's, added after her 🎉.
            #expect(after.reactions == [.init(reaction: "🎉", count: 1), .init(reaction: "👍", count: 1)])
            _ = try await chat.service.removeReaction("👍", from: message.id, as: "bob")
            _ = try await chat.service.removeReaction("🚀", from: message.id, as: "dave")
            // The whole conversation hears each change once, with the reaction and the counts
            // then; its reactedByMe is "not reported".
            let events = try await chat.service.events(for: "dave", after: 0).events.filter {
                $0.name == .messageReactionAdded || $0.name == .messageReactionRemoved
            }
            #expect(
                events.map { "\($0.name.rawValue) \($0.reaction!.uid) \($0.reaction!.reaction)" } == [
                    "onMessageReactionAdded bob 👍", "onMessageReactionAdded carol 🎉",
                    "onMessageReactionAdded carol 👍", "onMessageReactionRemoved bob 👍",
                ])
            #expect(events[2].message?.reactions == [.init(reaction: "👍", count: 2), .init(reaction: "🎉", count: 1)])
            #expect(events[2].message?.id == message.id)
            #expect(try await chat.service.events(for: "erin", after: 0).events.allSatisfy { $0.reaction == nil })
        }
    }

    @Test func aMessagesReactionsAreListedOldestFirstInPages() async throws {
        try await withChat { chat in
            let message = try await chat.say("vote", as: "alice")
            for (index, uid) in ["dave", "bob", "carol", "alice"].enumerated() {
                _ = try await chat.service.addReaction(index % 2 == 0 ? "👍" : "👎", to: message.id, as: uid)
                chat.clock.advance(by: 1)
            }
            _ = try await chat.service.addReaction("👎", to: message.id, as: "dave")
            var seen: [String] = []
            var cursor: Int64?
            repeat {
                let page = try await chat.service.reactions(to: message.id, limit: 2, after: cursor, as: "dave")
                seen += page.reactions.map { "\($0.uid) \($0.reaction)" }
                cursor = page.hasMore ? page.reactions.last?.id : nil
            } while cursor != nil
            #expect(seen == ["dave 👍", "bob 👎", "carol 👍", "alice 👎", "dave 👎"])
            let thumbsUp = try await chat.service.reactions(to: message.id, reaction: "👍", as: "bob")
            #expect(thumbsUp.reactions.map(\.uid) == ["dave", "carol"])
            #expect(!thumbsUp.hasMore)
        }
    }

    @Test func reactionsAreChecked() async throws {
        try await withChat { chat in
            let message = try await chat.say("hi", as: "dave")
            await expectRefusal(.badRequest) { _ = try await chat.service.addReaction("", to: message.id, as: "bob") }
            await expectRefusal(.badRequest) {
                _ = try await chat.service.addReaction("thumbs up", to: message.id, as: "bob")
            }
            await expectRefusal(.badRequest) {
                _ = try await chat.service.addReaction(String(repeating: "x", count: 65), to: message.id, as: "bob")
            }
            await expectRefusal(.messageIdNotFound) { _ = try await chat.service.addReaction("👍", to: 999, as: "bob") }
            // erin is not in the group: she learns nothing of its messages.
            await expectRefusal(.messageNoAccess) {
                _ = try await chat.service.addReaction("👍", to: message.id, as: "erin")
            }
            await expectRefusal(.messageNoAccess) { _ = try await chat.service.reactions(to: message.id, as: "erin") }
            await expectRefusal(.badRequest) {
                _ = try await chat.service.reactions(to: message.id, limit: 0, as: "bob")
            }
            // A message holds at most 50 different reactions; one already there still takes more.
            for index in 0..<ReactionRules.perMessage {
                _ = try await chat.service.addReaction("r\(index)", to: message.id, as: "bob")
            }
            await expectRefusal(
                .messageActionNotAllowed,
                params: [
                    "messageId": .int(message.id), "limit": .int(50),
                    "reason": "a message holds at most 50 different reactions",
                ]
            ) { _ = try await chat.service.addReaction("r50", to: message.id, as: "carol") }
            let more = try await chat.service.addReaction("r0", to: message.id, as: "carol")
            #expect(more.reactions.first == ReactionCount(reaction: "r0", count: 2, reactedByMe: true))
            // A deleted message takes its reactions with it.
            _ = try await chat.service.delete(message.id, as: "dave")
            await expectRefusal(.messageIdNotFound) {
                _ = try await chat.service.addReaction("👍", to: message.id, as: "bob")
            }
            await expectRefusal(.messageIdNotFound) { _ = try await chat.service.reactions(to: message.id, as: "bob") }
            let deleted = try await chat.service.message(message.id, as: "bob")
            #expect(deleted.reactions.isEmpty)
            // An action message takes none.
            _ = try await chat.service.kick("dave", from: "g", by: "alice")
            let action = try await chat.service.fetchNext(MessagesRequest(guid: "g"), as: "alice").messages.last!
            #expect(action.category == .action)
            await expectRefusal(.messageActionNotAllowed) {
                _ = try await chat.service.addReaction("👍", to: action.id, as: "alice")
            }
        }
    }
}
