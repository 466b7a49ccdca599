import Foundation
import PerchChat
import PerchService
import PerchTestSupport
import Testing

@testable import PerchSQLite

/// The event log's retention (`storage.eventRetentionDays`): events and outbox rows older than it
/// go, messages stay, a consumer still working holds the log back, and a reader from before the
/// log's start is told what it missed.
@Suite struct RetentionTests {
    static let week: Int64 = 7 * 86_400

    /// Counts the rows of `table` (with an optional `WHERE`).
    static func count(_ store: SQLiteChatStore, _ table: String, where condition: String = "1") async throws -> Int64 {
        try await store.read { tx in
            try (tx as! SQLiteTransaction).db.scalar("SELECT count(*) FROM \(table) WHERE \(condition)") ?? 0
        }
    }

    @Test func eventsOlderThanTheRetentionGoMessagesStayAndAReaderFromBeforeIsToldWhatItMissed() async throws {
        try await withChat { chat in
            let (service, clock) = (chat.service, chat.clock)
            let old = try await chat.say("old", as: "bob")
            _ = try await chat.say("old too", as: "dave", to: .user("bob"))
            // The first pass only writes its mark: nothing is a week old yet.
            #expect(try await service.pruneEventLog(olderThan: Self.week) == LogPruning())
            let marked = try await chat.store.latestEventSequence()
            clock.advance(by: Self.week + 1)
            let new = try await chat.say("new", as: "bob")

            let pruned = try await service.pruneEventLog(olderThan: Self.week)
            #expect(pruned.events == Int(marked))
            #expect(try await Self.count(chat.store, "events") == 1)
            // The audience rows of the pruned one-on-one message went with it.
            #expect(try await Self.count(chat.store, "event_users", where: "seq <= \(marked)") == 0)

            let resumed = try await service.events(for: "dave", after: 0)
            #expect(resumed.missed == 1...marked)
            #expect(resumed.events.map(\.message?.id) == [new.id])
            let current = try await service.events(for: "dave", after: marked)
            #expect(current.missed == nil)
            #expect(current.events.map(\.message?.id) == [new.id])
            // The messages themselves are all kept.
            let messages = try await service.fetchPrevious(
                MessagesRequest(guid: "g", categories: [.message], limit: 100), as: "dave")
            #expect(messages.messages.map(\.id) == [old.id, new.id])
            #expect(try await service.message(old.id, as: "dave").text == "old")
        }
    }

    @Test func theNewestEventStaysSoASequenceIsNeverUsedTwice() async throws {
        try await withChat { chat in
            try await chat.say("one", as: "bob")
            let newest = try await chat.store.latestEventSequence()
            _ = try await chat.service.pruneEventLog(olderThan: Self.week)
            chat.clock.advance(by: Self.week + 1)
            let pruned = try await chat.service.pruneEventLog(olderThan: Self.week)
            #expect(pruned.events == Int(newest) - 1)
            #expect(try await chat.store.latestEventSequence() == newest)
            try await chat.say("two", as: "bob")
            let page = try await chat.service.events(for: "bob", after: newest)
            #expect(page.events.map(\.seq) == [newest + 1])
        }
    }

    @Test func aConsumerThatSavedItsCursorWithinTheRetentionHoldsTheLogBackAndOneGoneLongerDoesNot() async throws {
        try await withChat { chat in
            let (service, clock) = (chat.service, chat.clock)
            for index in 0..<4 { try await chat.say("m\(index)", as: "bob") }
            let held = try await chat.store.latestEventSequence() - 2
            // A bot that stopped long ago, and one still working two events behind.
            try await service.acknowledge(consumer: "bot:gone", seq: 1)
            _ = try await service.pruneEventLog(olderThan: Self.week)
            clock.advance(by: Self.week + 1)
            try await service.acknowledge(consumer: "bot:working", seq: held)
            try await chat.say("new", as: "bob")

            let pruned = try await service.pruneEventLog(olderThan: Self.week)
            #expect(pruned.events == Int(held))
            let page = try await service.events(for: "bob", after: held)
            #expect(page.missed == nil)
            #expect(page.events.compactMap(\.message?.text) == ["m2", "m3", "new"])

            // Once it has handled them they go at the next pass.
            try await service.acknowledge(consumer: "bot:working", seq: held + 2)
            #expect(try await service.pruneEventLog(olderThan: Self.week).events == 2)
        }
    }

    @Test func outboxRowsOlderThanTheRetentionGo() async throws {
        try await withChat { chat in
            let (service, clock) = (chat.service, chat.clock)
            try await chat.say("old", as: "bob")
            #expect(try await service.notifications(for: "dave").records.count == 1)
            _ = try await service.pruneEventLog(olderThan: Self.week)
            clock.advance(by: Self.week + 1)
            try await chat.say("new", as: "bob")
            let pruned = try await service.pruneEventLog(olderThan: Self.week)
            // alice, carol and dave had one notification each of the old message.
            #expect(pruned.outbox == 3)
            let page = try await service.notifications(for: "dave")
            #expect(page.records.map(\.createdAt) == [clock.now()])
            // A reader after a pruned row is told which went (some may have been its own); one
            // after them is not.
            #expect(page.missed == 1...3)
            #expect(try await service.notifications(for: "dave", after: 2).missed == 3...3)
            #expect(try await service.notifications(for: "dave", after: 3).missed == nil)
        }
    }

    /// A delivery consumer (a webhook whose receiver is down) that saved its cursor within the
    /// retention holds the outbox back at it; one that has not saved it for longer, and the
    /// plugins' feed nobody listens to (-1), hold nothing.
    @Test func aDeliveryConsumerWithinTheRetentionHoldsTheOutboxBack() async throws {
        try await withChat { chat in
            let (service, clock) = (chat.service, chat.clock)
            try await chat.say("old", as: "bob")  // rows 1–3: alice, carol, dave
            try await service.advanceDelivery(of: "webhook:removed", to: 0)
            _ = try await service.pruneEventLog(olderThan: Self.week)
            clock.advance(by: Self.week + 1)
            try await service.advanceDelivery(of: "webhook:down", to: 1)
            try await service.advanceDelivery(of: "plugins", to: -1)
            try await chat.say("new", as: "bob")

            #expect(try await service.pruneEventLog(olderThan: Self.week).outbox == 1)
            #expect(try await service.routedNotifications(after: 1, limit: 10).map(\.seq).prefix(2) == [2, 3])
            // Once it has handled them they go at the next pass.
            try await service.advanceDelivery(of: "webhook:down", to: 3)
            #expect(try await service.pruneEventLog(olderThan: Self.week).outbox == 2)
        }
    }

    @Test func aLongPassGoesInBatchesAndKeepsOnlyTheMarkItStillNeeds() async throws {
        try await withChat { chat in
            let (service, clock) = (chat.service, chat.clock)
            for index in 0..<25 {
                try await chat.say("m\(index)", as: "dave", to: .user("erin"))
                _ = try await service.pruneEventLog(olderThan: Self.week)
                clock.advance(by: 60)
            }
            #expect(try await Self.count(chat.store, "log_marks") == 25)
            clock.advance(by: Self.week)
            try await chat.say("new", as: "dave", to: .user("erin"))
            let before = try await chat.store.latestEventSequence()
            let pruned = try await service.pruneEventLog(olderThan: Self.week, batch: 4)
            #expect(pruned.events == Int(before) - 1)
            #expect(try await Self.count(chat.store, "events") == 1)
            #expect(try await Self.count(chat.store, "event_users", where: "seq < \(before)") == 0)
            // The marks older than the newest one a week old are gone; that one and this pass's stay.
            #expect(try await Self.count(chat.store, "log_marks") == 2)
        }
    }
}
