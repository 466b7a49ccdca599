import PerchChat
import PerchService
import PerchTestSupport
import Testing

/// A user's notifications as a client reads them: unread state kept server-side, marking read, the
/// message of each row, the live stream's notifications, and the delivery consumers' feed.
@Suite struct NotificationCentreTests {
    @Test func unreadStateIsKeptPerUserAndMarkedOneByOneOrAll() async throws {
        try await withChat { chat in
            let first = try await chat.say("one <@uid:bob>", as: "dave")
            let second = try await chat.say("two", as: "carol")
            let third = try await chat.say("three", as: "dave")
            let bobs = try await chat.service.notifications(for: "bob").records
            #expect(bobs.map(\.messageId) == [first.id, second.id, third.id])
            #expect(bobs.allSatisfy { $0.readAt == 0 })
            #expect(try await chat.service.unreadNotificationCount(of: "bob") == 3)

            chat.clock.advance(by: 5)
            // Another user's row, an unknown row and a repeated one are passed over.
            let carols = try await chat.service.notifications(for: "carol").records
            let read = try await chat.service.markNotificationsRead(
                [bobs[1].seq, bobs[1].seq, carols[0].seq, 999_999], as: "bob")
            #expect(read.seqs == [bobs[1].seq])
            #expect(read.unreadCount == 2)
            #expect(try await chat.service.unreadNotificationCount(of: "carol") == carols.count)
            let unread = try await chat.service.notifications(for: "bob", unreadOnly: true).records
            #expect(unread.map(\.messageId) == [first.id, third.id])
            let marked = try await chat.service.notifications(for: "bob").records[1]
            #expect(marked.readAt == chat.clock.now())

            chat.clock.advance(by: 5)
            let all = try await chat.service.markAllNotificationsRead(as: "bob")
            #expect(all.unreadCount == 0)
            #expect(try await chat.service.notifications(for: "bob", unreadOnly: true).records.isEmpty)
            let after = try await chat.service.notifications(for: "bob").records
            #expect(after.map(\.readAt) == [chat.clock.now(), marked.readAt, chat.clock.now()])

            // A row routed after "mark all" is unread again.
            let fourth = try await chat.say("four", as: "dave")
            #expect(
                try await chat.service.notifications(for: "bob", unreadOnly: true).records.map(\.messageId) == [
                    fourth.id
                ])
            #expect(try await chat.service.unreadNotificationCount(of: "bob") == 1)
            await expectRefusal(.badRequest) { _ = try await chat.service.markNotificationsRead([], as: "bob") }
            await expectRefusal(.uidNotFound) { _ = try await chat.service.markAllNotificationsRead(as: "ghost") }
        }
    }

    @Test func theNewestComeFirstForANotificationCentre() async throws {
        try await withChat { chat in
            var ids: [Int64] = []
            for index in 0..<5 { ids.append(try await chat.say("m\(index)", as: "dave").id) }
            let firstPage = try await chat.service.latestNotifications(for: "bob", limit: 2)
            #expect(firstPage.map(\.messageId) == [ids[4], ids[3]])
            let secondPage = try await chat.service.latestNotifications(
                for: "bob", before: firstPage.last!.seq, limit: 2)
            #expect(secondPage.map(\.messageId) == [ids[2], ids[1]])
            _ = try await chat.service.markNotificationsRead([firstPage[0].seq], as: "bob")
            let unread = try await chat.service.latestNotifications(for: "bob", limit: 10, unreadOnly: true)
            #expect(unread.map(\.messageId) == [ids[3], ids[2], ids[1], ids[0]])
        }
    }

    @Test func eachRowCarriesItsMessageAndThreadAsTheUserMayReadThem() async throws {
        try await withChat { chat in
            _ = try await chat.service.createGroup(guid: "secret", name: "Secret", type: .private, owner: "alice")
            try await chat.service.addMembers(to: "secret", [("bob", .participant)], by: "alice")
            let root = try await chat.say("root", as: "bob", to: .group("g"))
            let reply = try await chat.say("a reply", as: "dave", parent: root.id)
            let hidden = try await chat.say("for members only", as: "alice", to: .group("secret"))
            let records = try await chat.service.notifications(for: "bob").records
            let ofReply = try #require(records.first { $0.messageId == reply.id })
            #expect(ofReply.message?.text == "a reply")
            #expect(ofReply.message?.parentMessage?.id == root.id)
            #expect(records.first { $0.messageId == hidden.id }?.message?.text == "for members only")

            try await chat.service.leave("secret", as: "bob")
            let later = try await chat.service.notifications(for: "bob").records
            let gone = try #require(later.first { $0.messageId == hidden.id })
            #expect(gone.message == nil)
        }
    }

    /// Two sessions of one user agree: marking read in one reaches the other as
    /// `onNotificationsRead`, and a new notification reaches the live stream with its message and
    /// its read state as it is when the stream reads it.
    @Test func theLiveStreamCarriesNotificationsAndReadMarks() async throws {
        try await withChat { chat in
            let start = try await chat.service.store.latestEventSequence()
            let old = try await chat.say("before the stream", as: "dave")
            _ = old
            let stream = Task {
                var seen: [String] = []
                try await chat.service.followEvents(for: "bob", session: "tab-2", after: start, notifications: true) {
                    page in
                    for event in page.events where event.name == .notificationsRead {
                        seen.append("read:\(event.read?.seqs ?? []):\(event.read?.unreadCount ?? -1)")
                    }
                    for record in page.notifications {
                        seen.append("notified:\(record.message?.text ?? "?"):\(record.readAt == 0 ? "unread" : "read")")
                    }
                    return seen.count < 3
                }
                return seen
            }
            try await Task.sleep(for: .milliseconds(50))
            let mention = try await chat.say("hi <@uid:bob>", as: "dave")
            _ = try await chat.say("bob's own", as: "bob")
            let row = try #require(
                try await chat.service.notifications(for: "bob").records.first { $0.messageId == mention.id })
            _ = try await chat.service.markNotificationsRead([row.seq], as: "bob")
            _ = try await chat.say("again", as: "carol")
            let seen = try await stream.value
            // A page holds what was committed since the last: when the mark and the mention come in
            // one, the mark may come first, and the notification then says it is read already, so
            // a client ends in the same state either way.
            let read = "read:[\(row.seq)]:1"
            #expect(
                seen == ["notified:hi <@uid:bob>:unread", read, "notified:again:unread"]
                    || seen == [read, "notified:hi <@uid:bob>:read", "notified:again:unread"], "\(seen)")
        }
    }

    @Test func deliveryConsumersReadEveryRowInOrderAndKeepWhatTheyGaveUpOn() async throws {
        try await withChat { chat in
            #expect(try await chat.service.deliveryCursor(of: "webhook:a") == nil)
            let message = try await chat.say("to the group", as: "dave")
            let feed = try await chat.service.routedNotifications(after: 0)
            #expect(Set(feed.map(\.uid)) == ["alice", "bob", "carol"])
            #expect(feed.map(\.seq) == feed.map(\.seq).sorted())
            #expect(feed.allSatisfy { $0.message?.id == message.id })
            #expect(try await chat.service.newestNotificationSequence() == feed.last!.seq)

            let letter = DeadLetter(consumer: "webhook:a", record: feed[0], attempts: 3, lastError: "HTTP 500", at: 7)
            try await chat.service.advanceDelivery(of: "webhook:a", to: feed[1].seq, deadLetters: [letter])
            #expect(try await chat.service.deliveryCursor(of: "webhook:a") == feed[1].seq)
            #expect(try await chat.service.routedNotifications(after: feed[1].seq).map(\.seq) == [feed[2].seq])
            var stored = letter
            stored.record.message = nil
            #expect(try await chat.service.deadLetters(of: "webhook:a") == [stored])
            #expect(try await chat.service.deadLetters(of: "webhook:b").isEmpty)
        }
    }
}
