import Foundation
import PerchChat
import PerchService
import Testing

@testable import PerchSQLite

/// A commit wakes the consumers its events are for (a stream per connected person, a bot per
/// room), not every consumer of the host; whoever cannot be ruled out is woken. The poll tick is an
/// hour away here unless a test says otherwise, so every wake seen is a commit's.
@Suite struct WakeTests {
    /// A store and service where alice owns `g` with bob and dave, erin owns `h` alone, and frank is
    /// in no group; each has read a page, so the store knows their groups.
    static func withRooms(
        pollInterval: Duration = .seconds(3_600), _ body: (SQLiteChatStore, ChatService) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-wake-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteChatStore(path: directory + "/perch.sqlite", pollInterval: pollInterval)
        let service = ChatService(store: store)
        for uid in ["alice", "bob", "dave", "erin", "frank"] { _ = try await service.createUser(uid: uid, name: uid) }
        _ = try await service.createGroup(guid: "g", name: "G", owner: "alice")
        try await service.addMembers(to: "g", [("bob", .participant), ("dave", .participant)], by: "alice")
        _ = try await service.createGroup(guid: "h", name: "H", owner: "erin")
        for uid in ["alice", "bob", "dave", "erin", "frank"] { _ = try await service.events(for: uid, after: 0) }
        do {
            try await body(store, service)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    /// Starts a wait for each of `uids` (nil: any event) after the newest event, and returns once all
    /// of them wait.
    static func waiters(_ uids: [String?], on store: SQLiteChatStore) async throws -> [Task<Void, Never>] {
        let latest = try await store.latestEventSequence()
        let already = store.notifier.waiting
        let tasks = uids.map { uid in Task { await store.waitForEvents(after: latest, for: uid) } }
        while store.notifier.waiting < already + uids.count { try await Task.sleep(for: .milliseconds(1)) }
        return tasks
    }

    @Test func aMessageWakesItsConversationsConsumersOnly() async throws {
        try await Self.withRooms { store, service in
            let passedOver = store.notifier.passedOver
            let tasks = try await Self.waiters(["dave", "erin", "frank", nil], on: store)
            // A commit resumes whom it wakes before the send returns.
            _ = try await service.send(MessageDraft(to: .group("g"), text: "to g"), as: "bob")
            // dave is in g, and the last waits for anything: both woken. erin and frank sleep on.
            #expect(store.notifier.waiting == 2)
            #expect(store.notifier.passedOver == passedOver + 2)
            // A one-on-one message to frank wakes frank, not erin.
            _ = try await service.send(MessageDraft(to: .user("frank"), text: "hi frank"), as: "alice")
            #expect(store.notifier.waiting == 1)
            #expect(store.notifier.passedOver == passedOver + 3)
            // erin's own room wakes her; she then reads the events she slept through: none hers.
            _ = try await service.send(MessageDraft(to: .group("h"), text: "note"), as: "erin")
            #expect(store.notifier.waiting == 0)
            for task in tasks { task.cancel() }
            for task in tasks { await task.value }
            let page = try await service.events(for: "erin", after: 0)
            #expect(page.events.compactMap(\.message?.text) == ["note"])
        }
    }

    @Test func aMembershipChangeWakesWhoeverItMightConcern() async throws {
        try await Self.withRooms { store, service in
            let tasks = try await Self.waiters(["erin", "frank"], on: store)
            // erin joins g: the commit changes members, so no remembered groups are trusted, and frank
            // (whom it does not concern) is woken too.
            try await service.addMembers(to: "g", [("erin", .participant)], by: "alice")
            #expect(store.notifier.waiting == 0)
            for task in tasks { task.cancel() }
            for task in tasks { await task.value }
            // erin now reads g's events, the earlier ones included.
            let page = try await service.events(for: "erin", after: 0)
            #expect(page.events.contains { $0.message?.text == nil && $0.name == .memberAddedToGroup })
        }
    }

    @Test func aConsumerWhoseGroupsAreNotKnownIsWoken() async throws {
        try await Self.withRooms { store, service in
            _ = try await service.createUser(uid: "gina", name: "Gina")
            // gina has read no page: the store does not know her groups.
            let passedOver = store.notifier.passedOver
            let tasks = try await Self.waiters(["gina"], on: store)
            _ = try await service.send(MessageDraft(to: .group("g"), text: "to g"), as: "bob")
            #expect(store.notifier.waiting == 0)
            #expect(store.notifier.passedOver == passedOver)
            for task in tasks { task.cancel() }
            for task in tasks { await task.value }
        }
    }

    /// A stream (`followEvents`) left asleep through other rooms' messages gets its own, and only
    /// its own, when they come.
    @Test func aStreamSleepsThroughOtherRoomsAndMissesNothingOfItsOwn() async throws {
        try await Self.withRooms { store, service in
            let received = Locked<[String]>([])
            let latest = try await store.latestEventSequence()
            let stream = Task {
                try await service.followEvents(for: "erin", after: latest) { events in
                    received.withLock { $0 += events.compactMap(\.message?.text) }
                    return received.withLock { $0.count } < 3
                }
            }
            for index in 0..<3 {
                // Once the stream waits, twenty messages of g pass it by.
                while store.notifier.waiting < 1 { try await Task.sleep(for: .milliseconds(1)) }
                let passedOver = store.notifier.passedOver
                for other in 0..<20 {
                    _ = try await service.send(MessageDraft(to: .group("g"), text: "g \(index).\(other)"), as: "bob")
                }
                #expect(store.notifier.passedOver == passedOver + 20)
                _ = try await service.send(MessageDraft(to: .group("h"), text: "h \(index)"), as: "erin")
            }
            try await stream.value
            #expect(received.withLock { $0 } == ["h 0", "h 1", "h 2"])
        }
    }

    /// The poll tick ends the waits for anyone's events (a bot with a cursor to save waits so), not
    /// the waits of consumers for their own user's events.
    @Test func thePollTickWakesOnlyTheWaitsForAnyone() async throws {
        try await Self.withRooms(pollInterval: .milliseconds(20)) { store, service in
            let erin = try await Self.waiters(["erin"], on: store)
            // A wait for anyone ends at a tick (nothing is committed here).
            let latest = try await store.latestEventSequence()
            await store.waitForEvents(after: latest, for: nil)
            try await Task.sleep(for: .milliseconds(100))
            #expect(store.notifier.waiting == 1)
            erin[0].cancel()
            await erin[0].value
        }
    }

    /// Another process's commit is found at the next poll tick, and every consumer behind it looks
    /// (its audience is not known here).
    @Test func anotherProcesssCommitWakesEveryConsumerBehindIt() async throws {
        try await Self.withRooms(pollInterval: .milliseconds(20)) { store, service in
            let tasks = try await Self.waiters(["erin", "frank"], on: store)
            let other = try SQLiteChatStore(path: store.path, pollInterval: .seconds(3_600))
            _ = try await ChatService(store: other).send(MessageDraft(to: .group("h"), text: "elsewhere"), as: "erin")
            await tasks[0].value
            await tasks[1].value
            let page = try await service.events(for: "erin", after: 0)
            #expect(page.events.compactMap(\.message?.text) == ["elsewhere"])
            await other.close()
        }
    }

    /// Another process commits and this one commits right after, before any tick: this commit
    /// cannot tell whom the other's events are for, so everyone behind them is woken.
    @Test func aCommitAfterAnotherProcesssWakesEveryConsumerBehindIt() async throws {
        try await Self.withRooms { store, service in
            // The writer has seen the file as it is now.
            _ = try await service.send(MessageDraft(to: .group("g"), text: "before"), as: "bob")
            let tasks = try await Self.waiters(["erin"], on: store)
            let other = try SQLiteChatStore(path: store.path, pollInterval: .seconds(3_600))
            _ = try await ChatService(store: other).send(MessageDraft(to: .group("h"), text: "elsewhere"), as: "erin")
            _ = try await service.send(MessageDraft(to: .group("g"), text: "here"), as: "bob")
            #expect(store.notifier.waiting == 0)
            tasks[0].cancel()
            await tasks[0].value
            await other.close()
        }
    }

    /// A consumer sleeps through at most `maximumLag` events of other conversations: then it is
    /// woken to read past them while the cache still holds them.
    @Test func aConsumerFarBehindIsWokenToMoveOn() async throws {
        try await Self.withRooms { store, service in
            let tasks = try await Self.waiters(["erin"], on: store)
            var pending: [PendingSend] = []
            for index in 0..<Int(EventNotifier.maximumLag) + 64 {
                pending.append(
                    try service.queueSend(
                        MessageDraft(to: .group("g"), text: "\(index)"), as: "bob", callerGoesOn: true))
            }
            for send in pending { _ = try await send.message }
            #expect(store.notifier.waiting == 0)
            tasks[0].cancel()
            await tasks[0].value
        }
    }

    /// A poll interval of zero (or less) is taken as 1 ms: a timer without a pause would spin.
    @Test func aPollIntervalOfZeroIsTakenAsAMillisecond() async throws {
        try await Self.withRooms(pollInterval: .zero) { store, _ in
            #expect(store.pollInterval == .milliseconds(1))
            // Waits for anyone still end at the ticks.
            let latest = try await store.latestEventSequence()
            await store.waitForEvents(after: latest, for: nil)
        }
    }
}
