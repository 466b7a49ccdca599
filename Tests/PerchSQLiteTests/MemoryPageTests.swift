import Foundation
import PerchChat
import PerchService
import PerchTestSupport
import Synchronization
import Testing

@testable import PerchSQLite

/// Event pages built from memory (the decoded-event cache with each event's audience, and the
/// reader's groups as they are now) must be exactly the pages the database gives: same events, same
/// `scannedThrough`, same fullness, for every user, session, cursor and limit.
@Suite struct MemoryPageTests {
    let users = ["alice", "bob", "carol", "dave", "erin"]

    func expectSamePages(_ chat: ChatFixture, _ step: String) async throws {
        let latest = try await chat.store.latestEventSequence()
        for uid in users {
            for session in [nil, "s1"] {
                for cursor in stride(from: Int64(0), through: latest, by: 3) {
                    for limit in [1, 2, 256] {
                        let memory = try #require(
                            try chat.store.memoryPage(for: uid, session: session, after: cursor, limit: limit),
                            "\(step): every event was committed here, so the page comes from memory")
                        let stored = try await chat.store.read { tx in
                            try tx.events(for: uid, session: session, after: cursor, limit: limit)
                        }
                        #expect(
                            memory.events.map(\.seq) == stored.events.map(\.seq), "\(step) \(uid) \(cursor) \(limit)")
                        #expect(memory.events == stored.events, "\(step) \(uid)")
                        #expect(memory.scannedThrough == stored.scannedThrough, "\(step) \(uid) \(cursor) \(limit)")
                        #expect(memory.isFull == stored.isFull, "\(step) \(uid) \(cursor) \(limit)")
                    }
                }
            }
        }
    }

    @Test func pagesFromMemoryAreTheDatabasesPagesThroughMembershipChanges() async throws {
        try await withChat { chat in
            let first = try await chat.say("to the group", as: "bob")
            try await chat.say("to erin", as: "dave", to: .user("erin"))
            // A save is announced to the saver's other sessions only.
            _ = try await chat.service.save(first.id, as: "dave", session: "s1")
            try await expectSamePages(chat, "before")
            // erin joins: the group's earlier events are now hers to read too, as the database says.
            try await chat.service.addMembers(to: "g", [("erin", .participant)], by: "alice")
            try await chat.say("welcome", as: "alice")
            try await expectSamePages(chat, "after a join")
            // dave is removed: the group's events, old and new, are no longer his.
            try await chat.service.kick("dave", from: "g", by: "alice")
            try await chat.say("after dave", as: "carol")
            try await expectSamePages(chat, "after a kick")
        }
    }

    /// A write whose body appended an event and then failed leaves no trace: its event does not
    /// count as committed (it did, and every page after it was read from the database while
    /// streams woke for an event that did not exist), whether the write ran alone in its
    /// transaction or last of a batch.
    @Test func anEventOfAFailedWriteNeverCountsAsCommitted() async throws {
        struct Refused: Error {}
        @Sendable func appendThenFail(_ tx: any ChatWriteTransaction) throws {
            _ = try tx.appendEvent(
                ChatEvent(name: .textMessageReceived, conversationId: "group_g", createdAt: 0),
                audience: EventAudience(group: "g"))
            throw Refused()
        }
        try await withChat { chat in
            try await chat.say("before", as: "bob")
            // Alone in its transaction.
            await #expect(throws: Refused.self) { try await chat.store.write(appendThenFail) }
            try await expectSamePages(chat, "after a lone failed write")
            // Queued behind others: the batch's last body fails after appending.
            var pending: [PendingWrite<Void>] = []
            for index in 0..<40 {
                pending.append(
                    chat.store.submit(
                        { tx in
                            guard index % 2 == 0 else { return try appendThenFail(tx) }
                            _ = try tx.appendEvent(
                                ChatEvent(name: .textMessageReceived, conversationId: "group_g", createdAt: 0),
                                audience: EventAudience(group: "g"))
                        }, callerGoesOn: index < 39))
            }
            for (index, write) in pending.enumerated() {
                if index % 2 == 0 {
                    try await write.value
                } else {
                    await #expect(throws: Refused.self) { try await write.value }
                }
            }
            try await expectSamePages(chat, "after queued failed writes")
            // The next event takes the sequence the failed one had, and is read from memory too.
            try await chat.say("after", as: "bob")
            try await expectSamePages(chat, "after the next send")
        }
    }

    /// The same through the service: adding two members where the second does not exist announces
    /// the first one's join, then refuses the whole call.
    @Test func aRefusedCallThatHadAnnouncedSomethingAnnouncesNothing() async throws {
        try await withChat { chat in
            try await chat.say("before", as: "bob")
            let latest = try await chat.store.latestEventSequence()
            do {
                try await chat.service.addMembers(
                    to: "g", [("erin", .participant), ("nobody", .participant)], by: "alice")
                Issue.record("adding a user who does not exist was accepted")
            } catch {
                #expect((error as? ChatError)?.code == .uidNotFound)
            }
            #expect(try await chat.store.latestEventSequence() == latest)
            try await expectSamePages(chat, "after the refused call")
            #expect(try await chat.service.events(for: "erin", after: 0).events.isEmpty)
        }
    }

    @Test func anotherProcesssCommitsAreReadFromTheDatabaseAndItsMemberChangesCount() async throws {
        try await withChat { chat in
            try await chat.say("one", as: "bob")
            let seen = try await chat.service.events(for: "dave", after: 0)
            #expect(seen.events.compactMap(\.message?.text) == ["one"])
            // Another process (a second store on the file) removes dave and posts.
            let other = try SQLiteChatStore(path: chat.path)
            let elsewhere = ChatService(store: other)
            try await elsewhere.kick("dave", from: "g", by: "alice")
            try await elsewhere.say(MessageDraft(to: .group("g"), text: "two"), as: "bob")
            // This process posts after: its commit makes the other process's events count here.
            try await chat.say("three", as: "bob")
            let page = try await chat.service.events(for: "dave", after: seen.scannedThrough)
            #expect(page.events.compactMap(\.message?.text) == [])
            let bobs = try await chat.service.events(for: "bob", after: seen.scannedThrough)
            #expect(bobs.events.compactMap(\.message?.text) == ["two", "three"])
            // From here on the pages come from memory again, with dave's groups read anew.
            try await chat.say("four", as: "bob")
            let after = try await chat.service.events(for: "dave", after: page.scannedThrough)
            #expect(after.events.compactMap(\.message?.text) == [])
            await other.close()
        }
    }

    @Test func aClosedStoreAnswersNoPageAndEndsALiveStream() async throws {
        let chat = try await ChatFixture.make()
        try await chat.say("before", as: "bob")
        let stream = chat.service.eventStream(for: "dave", after: 0)
        let received = Mutex(0)
        let reader = Task {
            do {
                for try await _ in stream { received.withLock { $0 += 1 } }
            } catch {}
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while received.withLock({ $0 }) == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(received.withLock { $0 } >= 1)
        await chat.close()
        await #expect(throws: ChatError.self) { _ = try await chat.service.events(for: "dave", after: 0) }
        // The stream ends by itself (it does not spin on empty pages).
        await reader.value
    }

    @Test func anotherProcesssCommitIsSeenWithinThePollIntervalWithoutALocalOne() async throws {
        try await withChat { chat in
            let start = try await chat.store.latestEventSequence()
            let other = try SQLiteChatStore(path: chat.path)
            try await ChatService(store: other).say(MessageDraft(to: .group("g"), text: "elsewhere"), as: "bob")
            var texts: [String] = []
            let deadline = ContinuousClock.now + .seconds(5)
            while texts.isEmpty, ContinuousClock.now < deadline {
                await chat.service.waitForEvents(after: start)
                texts = try await chat.service.events(for: "dave", after: start).events.compactMap(\.message?.text)
            }
            #expect(texts == ["elsewhere"])
            await other.close()
        }
    }
}

extension ChatService {
    fileprivate func say(_ draft: MessageDraft, as sender: String) async throws {
        _ = try await send(draft, as: sender)
    }
}
