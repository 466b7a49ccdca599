import PerchChat
import PerchService
import PerchTestSupport
import Testing

/// Thread subscriptions: subscribe and unsubscribe, automatic subscription, `threadSubscribed`, the inbox.
@Suite struct ThreadSubscriptionTests {
    @Test func subscribeIsIdempotentAndWorksWithNoReplies() async throws {
        try await withChat { chat in
            let root = try await chat.say("no replies yet", as: "dave")
            let first = try await chat.service.subscribeToThread(root.id, as: "bob")
            #expect(first.threadSubscribed)
            _ = try await chat.service.subscribeToThread(root.id, as: "bob")
            #expect(try await chat.service.message(root.id, as: "bob").threadSubscribed)
            #expect(!(try await chat.service.message(root.id, as: "carol").threadSubscribed))
            let off = try await chat.service.unsubscribeFromThread(root.id, as: "bob")
            #expect(!off.threadSubscribed)
            _ = try await chat.service.unsubscribeFromThread(root.id, as: "bob")
            _ = try await chat.service.unsubscribeFromThread(root.id, as: "carol")
        }
    }

    @Test func errors() async throws {
        try await withChat { chat in
            let root = try await chat.say("root", as: "dave")
            let reply = try await chat.say("reply", as: "bob", parent: root.id)
            await expectRefusal(.messageActionNotAllowed) {
                _ = try await chat.service.subscribeToThread(reply.id, as: "bob")
            }
            await expectRefusal(.messageActionNotAllowed) {
                _ = try await chat.service.unsubscribeFromThread(reply.id, as: "bob")
            }
            await expectRefusal(.messageIdNotFound) { _ = try await chat.service.subscribeToThread(77_777, as: "bob") }
            await expectRefusal(.messageNoAccess) { _ = try await chat.service.subscribeToThread(root.id, as: "erin") }
            // Someone who does not exist is named as such (a bot's `subscribe: UID` names anyone).
            await expectRefusal(.uidNotFound) { _ = try await chat.service.subscribeToThread(root.id, as: "nobody") }
            await expectRefusal(.uidNotFound) {
                _ = try await chat.service.unsubscribeFromThread(root.id, as: "nobody")
            }
            try await chat.service.leave("g", as: "carol")
            await expectRefusal(.messageNoAccess) { _ = try await chat.service.subscribeToThread(root.id, as: "carol") }
            try await chat.service.ban("dave", from: "g", by: "bob")
            await expectRefusal(.messageNoAccess) {
                _ = try await chat.service.unsubscribeFromThread(root.id, as: "dave")
            }
            let gone = try await chat.say("to delete", as: "bob")
            _ = try await chat.service.delete(gone.id, as: "bob")
            await expectRefusal(.messageIdNotFound) { _ = try await chat.service.subscribeToThread(gone.id, as: "bob") }
        }
    }

    @Test func theFirstReplySubscribesTheStartersAndEveryReplyItsSenderAndMentions() async throws {
        try await withChat { chat in
            let root = try await chat.say("root mentioning <@uid:carol>", as: "dave")
            _ = try await chat.say("first reply", as: "bob", parent: root.id)
            for uid in ["dave", "carol", "bob"] {
                #expect(try await chat.service.message(root.id, as: uid).threadSubscribed, "\(uid)")
            }
            #expect(!(try await chat.service.message(root.id, as: "alice").threadSubscribed))
            _ = try await chat.say("second, cc <@uid:alice>", as: "bob", parent: root.id)
            #expect(try await chat.service.message(root.id, as: "alice").threadSubscribed)
        }
    }

    @Test func unsubscribingIsNotSticky() async throws {
        try await withChat { chat in
            let root = try await chat.say("root", as: "dave")
            _ = try await chat.say("reply", as: "bob", parent: root.id)
            _ = try await chat.service.unsubscribeFromThread(root.id, as: "bob")
            _ = try await chat.say("another", as: "carol", parent: root.id)
            #expect(!(try await chat.service.message(root.id, as: "bob").threadSubscribed))
            _ = try await chat.say("bob again", as: "bob", parent: root.id)
            #expect(try await chat.service.message(root.id, as: "bob").threadSubscribed)
            _ = try await chat.service.unsubscribeFromThread(root.id, as: "bob")
            _ = try await chat.say("hey <@uid:bob>", as: "carol", parent: root.id)
            #expect(try await chat.service.message(root.id, as: "bob").threadSubscribed)
        }
    }

    @Test func onlyUsersWithAccessAreSubscribed() async throws {
        try await withChat { chat in
            let root = try await chat.say("root", as: "dave")
            try await chat.service.leave("g", as: "dave")
            // dave started the thread but left before its first reply: no subscription for him.
            _ = try await chat.say("first reply", as: "bob", parent: root.id)
            _ = try await chat.service.join("g", as: "dave")
            #expect(!(try await chat.service.message(root.id, as: "dave").threadSubscribed))
        }
    }

    @Test func threadSubscribedIsFalseOnRepliesAndOnLivePayloads() async throws {
        try await withChat { chat in
            let root = try await chat.say("root", as: "dave")
            let reply = try await chat.say("reply", as: "bob", parent: root.id)
            #expect(!(try await chat.service.message(reply.id, as: "bob").threadSubscribed))
            let page = try await chat.service.fetchPrevious(
                MessagesRequest(guid: "g", categories: [.message]), as: "bob")
            #expect(page.messages.map(\.threadSubscribed) == [true, false])
            let live = try await chat.service.events(for: "bob", after: 0).events.compactMap(\.message)
            #expect(live.allSatisfy { !$0.threadSubscribed })
        }
    }

    @Test func worksInOneOnOneConversations() async throws {
        try await withChat { chat in
            let root = try await chat.say("dm root", as: "dave", to: .user("erin"))
            _ = try await chat.say("dm reply", as: "erin", to: .user("dave"), parent: root.id)
            #expect(try await chat.service.message(root.id, as: "dave").threadSubscribed)
            #expect(try await chat.service.message(root.id, as: "erin").threadSubscribed)
            _ = try await chat.service.unsubscribeFromThread(root.id, as: "dave")
            #expect(!(try await chat.service.message(root.id, as: "dave").threadSubscribed))
        }
    }
}

@Suite struct ThreadsInboxTests {
    @Test func twoHundredFiftySameSecondThreadsPagedBySevenComeBackOnceInOrder() async throws {
        try await withChat { chat in
            var ids: [Int64] = []
            for index in 0..<250 {
                let root = try await chat.say("t\(index)", as: "alice")
                _ = try await chat.service.subscribeToThread(root.id, as: "dave")
                ids.append(root.id)
            }
            // All in one second: updatedAt alone could not separate them.
            let request = try chat.service.threadsRequest(.init(limit: 7), as: "dave")
            var seen: [Int64] = []
            var pages = 0
            while request.hasMore {
                let page = try await request.fetchNext()
                #expect(page.count <= 7)
                #expect(page.allSatisfy { $0.isSubscribed && $0.unreadReplyCount == nil && $0.lastReply == nil })
                seen += page.map(\.parentMessageId)
                pages += 1
            }
            #expect(seen == ids.reversed())
            #expect(pages == 36)
            #expect(try await request.fetchNext().isEmpty)
        }
    }

    @Test func aReplyBetweenPagesNeverRepeatsARowWithinOneRequest() async throws {
        try await withChat { chat in
            var roots: [Message] = []
            for index in 0..<10 {
                let root = try await chat.say("t\(index)", as: "dave")
                _ = try await chat.say("r\(index)", as: "dave", parent: root.id)
                roots.append(root)
            }
            let request = try chat.service.threadsRequest(.init(limit: 4), as: "dave")
            var seen: [Int64] = try await request.fetchNext().map(\.parentMessageId)
            chat.clock.advance()
            // A reply bumps a thread already shown to the top.
            _ = try await chat.say("late", as: "bob", parent: seen[0])
            while request.hasMore { seen += try await request.fetchNext().map(\.parentMessageId) }
            #expect(Set(seen).count == seen.count)
        }
    }

    @Test func rowsCarryTheSeedFieldsAndUpdatedAtBumps() async throws {
        try await withChat { chat in
            let quiet = try await chat.say("quiet", as: "dave")
            _ = try await chat.service.subscribeToThread(quiet.id, as: "dave")
            chat.clock.advance(by: 10)
            let busy = try await chat.say("busy", as: "alice")
            let reply = try await chat.say("a reply", as: "dave", parent: busy.id)
            var threads = try await chat.service.threadsRequest(.init(), as: "dave").fetchNext()
            #expect(threads.map(\.parentMessageId) == [busy.id, quiet.id])
            let row = threads[0]
            #expect(row.parentMessage.id == busy.id && row.parentMessage.text == "busy")
            #expect(row.replyCount == 1 && row.lastReply?.id == reply.id)
            #expect(row.conversationId == "group_g" && row.receiverType == .group && row.receiverUid == "g")
            #expect(row.updatedAt == chat.clock.now())
            #expect(threads[1].lastReply == nil)

            // Re-subscribing bumps the user's own row.
            chat.clock.advance(by: 5)
            _ = try await chat.service.subscribeToThread(quiet.id, as: "dave")
            threads = try await chat.service.threadsRequest(.init(), as: "dave").fetchNext()
            #expect(threads.map(\.parentMessageId) == [quiet.id, busy.id])
            #expect(threads[0].updatedAt == chat.clock.now())

            // Unsubscribing removes the row.
            _ = try await chat.service.unsubscribeFromThread(quiet.id, as: "dave")
            threads = try await chat.service.threadsRequest(.init(), as: "dave").fetchNext()
            #expect(threads.map(\.parentMessageId) == [busy.id])
        }
    }

    @Test func scopedToAConversationAndToAccess() async throws {
        try await withChat { chat in
            let inGroup = try await chat.say("group thread", as: "dave")
            _ = try await chat.say("r", as: "dave", parent: inGroup.id)
            let direct = try await chat.say("dm thread", as: "dave", to: .user("erin"))
            _ = try await chat.say("r", as: "dave", to: .user("erin"), parent: direct.id)
            #expect(
                try await chat.service.threadsRequest(.init(guid: "g"), as: "dave").fetchNext().map(\.parentMessageId)
                    == [inGroup.id])
            #expect(
                try await chat.service.threadsRequest(.init(uid: "erin"), as: "dave").fetchNext().map(\.parentMessageId)
                    == [direct.id])
            try await chat.service.leave("g", as: "dave")
            #expect(
                try await chat.service.threadsRequest(.init(), as: "dave").fetchNext().map(\.parentMessageId)
                    == [direct.id])
            _ = try await chat.service.delete(direct.id, as: "dave")
            #expect(try await chat.service.threadsRequest(.init(), as: "dave").fetchNext().isEmpty)
        }
    }

    @Test func participatedByMeFalseListsEveryThreadWithItsRealState() async throws {
        try await withChat { chat in
            let mine = try await chat.say("mine", as: "dave")
            _ = try await chat.say("r", as: "dave", parent: mine.id)
            chat.clock.advance()
            let theirs = try await chat.say("theirs", as: "bob")
            _ = try await chat.say("r", as: "carol", parent: theirs.id)
            let all = try await chat.service.threadsRequest(.init(guid: "g", participatedByMe: false), as: "dave")
                .fetchNext()
            #expect(all.map(\.parentMessageId) == [theirs.id, mine.id])
            #expect(all.map(\.isSubscribed) == [false, true])
        }
    }

    @Test func requestErrors() async throws {
        try await withChat { chat in
            await expectRefusal(.badRequest) {
                _ = try chat.service.threadsRequest(.init(uid: "bob", guid: "g"), as: "dave")
            }
            await expectRefusal(.badRequest) { _ = try chat.service.threadsRequest(.init(limit: 0), as: "dave") }
            await expectRefusal(.badRequest) { _ = try chat.service.threadsRequest(.init(limit: 101), as: "dave") }
            await expectRefusal(.badRequest) {
                _ = try chat.service.threadsRequest(.init(participatedByMe: false), as: "dave")
            }
            await expectRefusal(.groupNotJoined) {
                _ = try await chat.service.threadsRequest(.init(guid: "g"), as: "erin").fetchNext()
            }
            #expect(ThreadsRequest.Options().limit == 30)
        }
    }

    @Test func theInboxPageReadsThroughItsIndex() async throws {
        try await withChat { chat in
            for byConversation in [false, true] {
                let plan = try await chat.store.inboxQueryPlan(byConversation: byConversation).joined(separator: " | ")
                let index = byConversation ? "subscriptions_inbox_by_conversation" : "subscriptions_inbox"
                #expect(
                    plan.contains("SEARCH s USING INDEX \(index) (uid=?")
                        || plan.contains("SEARCH s USING COVERING INDEX \(index)"),
                    "\(plan)")
                #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
            }
        }
    }
}
