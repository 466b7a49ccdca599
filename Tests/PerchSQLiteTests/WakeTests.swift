import Foundation
import PerchChat
import PerchLock
import PerchService
import PerchTestSupport
import PerchTesting
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
    static func waiters(
        _ uids: [String?], on store: SQLiteChatStore, session: String? = nil, ignoringOwnMessages: Bool = false,
        endingAtTick: Bool = false
    ) async throws -> [Task<Void, Never>] {
        let latest = try await store.latestEventSequence()
        let already = store.notifier.waiting
        let tasks = uids.map { uid in
            Task {
                await store.waitForEvents(
                    after: latest, for: uid, session: session, ignoringOwnMessages: ignoringOwnMessages,
                    endingAtTick: endingAtTick)
            }
        }
        while store.notifier.waiting < already + uids.count { try await Task.sleep(for: .milliseconds(1)) }
        return tasks
    }

    /// Sends `first`, through which exactly one of `waiters` must sleep on, then `second`, which
    /// must wake it; then ends the waiters.
    static func expectOneSleepsThrough(
        _ first: (to: String, text: String, as: String, session: String?),
        then second: (to: String, text: String, as: String),
        waiters: [Task<Void, Never>], store: SQLiteChatStore, service: ChatService
    ) async throws {
        let passedOver = store.notifier.passedOver
        _ = try await service.send(
            MessageDraft(to: .group(first.to), text: first.text), as: first.as, session: first.session)
        #expect(store.notifier.waiting == 1)
        #expect(store.notifier.passedOver == passedOver + 1)
        _ = try await service.send(MessageDraft(to: .group(second.to), text: second.text), as: second.as)
        #expect(store.notifier.waiting == 0)
        for task in waiters { task.cancel() }
        for task in waiters { await task.value }
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
                try await service.followEvents(for: "erin", after: latest) { page in
                    received.withLock { $0 += page.events.compactMap(\.message?.text) }
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

    /// Asking for the newest event (a readiness probe, a stream starting, a harness settling) wakes
    /// nobody when this process already knows it: the consumers that slept through other rooms'
    /// events sleep on.
    @Test func askingForTheNewestEventWakesNobody() async throws {
        try await Self.withRooms { store, service in
            let tasks = try await Self.waiters(["erin"], on: store)
            _ = try await service.send(MessageDraft(to: .group("g"), text: "to g"), as: "bob")
            #expect(store.notifier.waiting == 1)
            for _ in 0..<3 { _ = try await store.latestEventSequence() }
            #expect(store.notifier.waiting == 1)
            tasks[0].cancel()
            await tasks[0].value
        }
    }

    /// A message sent from a session is left out of that session's stream (CometChat's sender gets no
    /// live event for it), so it does not wake that session's wait; the user's other sessions and
    /// the other members are woken.
    @Test func aMessageLeftOutForASessionDoesNotWakeThatSession() async throws {
        try await Self.withRooms { store, service in
            let before = try await store.latestEventSequence()
            let waiters =
                try await Self.waiters(["bob"], on: store, session: "phone")
                + Self.waiters(["bob"], on: store, session: "laptop") + Self.waiters(["dave"], on: store)
            // The phone sleeps through its own message; its next event wakes it, and its page holds
            // that one only.
            try await Self.expectOneSleepsThrough(
                (to: "g", text: "from the phone", as: "bob", session: "phone"),
                then: (to: "g", text: "from dave", as: "dave"),
                waiters: waiters, store: store, service: service)
            let page = try await service.events(for: "bob", session: "phone", after: before)
            #expect(page.events.compactMap(\.message?.text) == ["from dave"])
        }
    }

    /// A wait that ends at the poll tick (a bot with a cursor to save) wakes at the next tick with
    /// nothing committed; one for the same user that does not, sleeps on.
    @Test func aWaitEndingAtTheTickWakesAtTheTick() async throws {
        try await Self.withRooms(pollInterval: .milliseconds(20)) { store, service in
            let asleep = try await Self.waiters(["erin"], on: store, ignoringOwnMessages: true)
            let latest = try await store.latestEventSequence()
            await store.waitForEvents(
                after: latest, for: "erin", session: nil, ignoringOwnMessages: true, endingAtTick: true)
            try await Task.sleep(for: .milliseconds(100))
            #expect(store.notifier.waiting == 1)
            asleep[0].cancel()
            await asleep[0].value
        }
    }

    /// A bot's wait sleeps through the bot's own messages (it never handles them) and wakes for
    /// anyone else's; a stream of the same user is woken by both.
    @Test func aBotsWaitSleepsThroughItsOwnMessages() async throws {
        try await Self.withRooms { store, service in
            let waiters =
                try await Self.waiters(["dave"], on: store, ignoringOwnMessages: true)
                + Self.waiters(["dave"], on: store)
            try await Self.expectOneSleepsThrough(
                (to: "g", text: "dave's own", as: "dave", session: nil),
                then: (to: "g", text: "bob's", as: "bob"),
                waiters: waiters, store: store, service: service)
        }
    }

    /// The poll tick ends the waits for anyone's events (a bot with a cursor to save waits so), not
    /// the waits of consumers for their own user's events.
    @Test func thePollTickWakesOnlyTheWaitsForAnyone() async throws {
        try await Self.withRooms(pollInterval: .milliseconds(20)) { store, service in
            let erin = try await Self.waiters(["erin"], on: store)
            // A wait for anyone ends at a tick (nothing is committed here).
            let latest = try await store.latestEventSequence()
            await store.waitForEvents(
                after: latest, for: nil, session: nil, ignoringOwnMessages: false, endingAtTick: false)
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
            await store.waitForEvents(
                after: latest, for: nil, session: nil, ignoringOwnMessages: false, endingAtTick: false)
        }
    }
}

/// The notifier's index against its definition: a commit wakes exactly the waiters the old look at
/// every waiter woke. Random waiters (for anyone or a user; groups known or not, from this
/// membership generation or an older one; at, ahead of or far behind the newest event) and random
/// commits (events for groups, users or both; right after the newest or thousands later).
/// The poll tick reads the newest sequence from the database to find other processes' commits; a
/// commit of this process it reads between SQLite's `COMMIT` and the commit's publication is not
/// another's.
@Suite struct FoundCommitTests {
    static func waiter(on notifier: EventNotifier, after seq: Int64) async throws -> Task<Void, Never> {
        let already = notifier.waiting
        let task = Task { await notifier.wait(after: seq, for: "erin", groups: ["h"], generation: 0) }
        while notifier.waiting == already { try await Task.sleep(for: .milliseconds(1)) }
        return task
    }

    @Test func aCommitInFlightIsNotTakenForAnotherProcesss() async throws {
        let notifier = EventNotifier()
        notifier.advance(to: 10)
        let waiter = try await Self.waiter(on: notifier, after: 10)
        // This process's writer commits 11 and 12; the tick reads 12 before they are published.
        notifier.willCommit(through: 12)
        notifier.found(newest: 12)
        #expect(notifier.waiting == 1)
        // 13 is another process's: every waiter behind it looks.
        notifier.found(newest: 13)
        #expect(notifier.waiting == 0)
        waiter.cancel()
        await waiter.value
    }

    @Test func aFailedCommitsSequencesMayBeAnotherProcesss() async throws {
        let notifier = EventNotifier()
        notifier.advance(to: 10)
        let waiter = try await Self.waiter(on: notifier, after: 10)
        notifier.willCommit(through: 12)
        notifier.commitFailed()
        // Rolled back: 11 and 12 are free, and another process committed them.
        notifier.found(newest: 12)
        #expect(notifier.waiting == 0)
        waiter.cancel()
        await waiter.value
    }
}

@Suite struct NotifierIndexTests {
    struct Spec {
        var uid: String?
        var groups: Set<String>?
        var generation: Int
        var after: Int64
        var session: String?
        var ignoresOwnMessages: Bool
    }

    /// Whether a commit of `events` (the newest now `latest`) must wake `waiter`: the rule of
    /// `EventNotifier.advance(to:committed:generation:)`, written out.
    static func mustWake(_ waiter: Spec, events: [CachedEvent], latest: Int64, generation: Int) -> Bool {
        guard waiter.after < latest else { return false }
        guard let uid = waiter.uid, let groups = waiter.groups, waiter.generation == generation,
            waiter.after < events[0].event.seq, latest - waiter.after <= EventNotifier.maximumLag
        else { return true }
        let audiences = events.map { entry in
            entry.audience!.users.contains(uid) || entry.audience!.group.map(groups.contains) == true
        }
        // Up to `examinedBatch` events, a waiter that leaves some of its user's events out (its
        // session's, its own messages) is woken only by one it reads; a larger commit wakes it by
        // user and group alone.
        guard waiter.session != nil || waiter.ignoresOwnMessages, events.count <= EventNotifier.examinedBatch else {
            return audiences.contains(true)
        }
        return zip(events, audiences).contains { entry, concerns in
            concerns && (waiter.session == nil || entry.audience!.excludedSession != waiter.session)
                && !(waiter.ignoresOwnMessages && entry.event.message?.sender == uid)
        }
    }

    @Test(.timeLimit(.minutes(1))) func aCommitWakesExactlyWhomItMayConcern() async throws {
        var random = SplitMix(seed: 42)
        let users = ["u0", "u1", "u2", "u3", "u4"]
        let groups = ["g0", "g1", "g2", "g3"]
        for round in 0..<150 {
            let notifier = EventNotifier()
            let start: Int64 = 10_000
            notifier.advance(to: start)
            let specs = (0..<Int.random(in: 1...12, using: &random)).map { _ in
                Spec(
                    uid: Bool.random(using: &random) || Int.random(in: 0..<4, using: &random) > 0
                        ? users.randomElement(using: &random) : nil,
                    groups: Int.random(in: 0..<5, using: &random) == 0
                        ? nil : Set(groups.filter { _ in Int.random(in: 0..<3, using: &random) == 0 }),
                    generation: Int.random(in: 0..<6, using: &random) == 0 ? 1 : 2,
                    after: start + [0, 0, 0, 0, 1, 2].randomElement(using: &random)!,
                    session: [nil, "s0", "s1"].randomElement(using: &random)!,
                    ignoresOwnMessages: Bool.random(using: &random))
            }
            // The project's pthread lock, which ThreadSanitizer sees (not the test helper's Mutex).
            let woke = Lock<Set<Int>>([])
            let tasks = specs.enumerated().map { index, spec in
                Task {
                    await notifier.wait(
                        after: spec.after, for: spec.uid, groups: spec.groups, generation: spec.generation,
                        session: spec.session, ignoringOwnMessages: spec.ignoresOwnMessages)
                    woke.withLock { _ = $0.insert(index) }
                }
            }
            while notifier.waiting < specs.count { try await Task.sleep(for: .milliseconds(1)) }
            let first = start + (Int.random(in: 0..<8, using: &random) == 0 ? 5_000 : 1)
            // Mostly a few events (each looked at), now and then more than a commit's examined batch.
            let count = Int.random(in: 0..<6, using: &random) == 0 ? EventNotifier.examinedBatch + 4 : 3
            let events = (0..<Int.random(in: 1...count, using: &random)).map { offset in
                CachedEvent(
                    event: ChatEvent(
                        seq: first + Int64(offset), name: .textMessageReceived, conversationId: "c", createdAt: 0,
                        message: Message(
                            conversationId: "c", sender: users.randomElement(using: &random)!, receiverType: .group,
                            receiverUid: "c")),
                    audience: EventAudience(
                        group: Bool.random(using: &random) ? groups.randomElement(using: &random) : nil,
                        users: users.filter { _ in Int.random(in: 0..<4, using: &random) == 0 },
                        excludedSession: [nil, nil, "s0", "s1"].randomElement(using: &random)!))
            }
            let latest = events.last!.event.seq
            notifier.advance(to: latest, committed: events, generation: 2)
            let expected = Set(
                specs.indices.filter { Self.mustWake(specs[$0], events: events, latest: latest, generation: 2) })
            #expect(notifier.waiting == specs.count - expected.count, "round \(round)")
            // The woken tasks record themselves once they run (within a second, or the check fails).
            let deadline = ContinuousClock.now + .seconds(1)
            while woke.withLock({ $0.count }) < expected.count, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(1))
            }
            #expect(woke.withLock { $0 } == expected, "round \(round)")
            // The rest end when cancelled; then no waiter is left in the index.
            for task in tasks { task.cancel() }
            for task in tasks { await task.value }
            #expect(notifier.waiting == 0)
            #expect(notifier.indexed == 0, "round \(round)")
        }
    }
}

/// The index keeps one waiter of a key inline and more in a set: whatever the order of adds and
/// removals, a key yields exactly its waiters, and says when none is left.
@Suite struct WaiterIndexTests {
    @Test func aKeyHoldsExactlyItsWaitersInlineOrInASet() {
        var ids = EventNotifier.WaiterIDs.one(7)
        #expect(Array(ids) == [7] && ids.count == 1)
        ids.insert(7)
        #expect(Array(ids) == [7] && ids.count == 1)
        ids.insert(3)
        ids.insert(9)
        #expect(Set(ids) == [3, 7, 9] && ids.count == 3)
        var left = ids.remove(7)
        #expect(left && Set(ids) == [3, 9])
        left = ids.remove(42)
        #expect(left && Set(ids) == [3, 9])
        left = ids.remove(3)
        #expect(left && Array(ids) == [9] && ids.count == 1)
        if case .many = ids { Issue.record("one waiter left is held inline") }
        left = ids.remove(9)
        #expect(!left)
        var other = EventNotifier.WaiterIDs.one(1)
        left = other.remove(2)
        #expect(left && Array(other) == [1])
        left = other.remove(1)
        #expect(!left)
    }

    /// Many waiters for one user and group, woken by one commit: none is left in the index.
    @Test func theIndexEmptiesWhenItsWaitersAreWoken() async throws {
        let notifier = EventNotifier()
        notifier.advance(to: 10)
        var tasks: [Task<Void, Never>] = []
        for _ in 0..<5 {
            let already = notifier.waiting
            tasks.append(Task { await notifier.wait(after: 10, for: "erin", groups: ["h"], generation: 0) })
            while notifier.waiting == already { try await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(notifier.indexed == 15)
        notifier.advance(to: 11)
        for task in tasks { await task.value }
        #expect(notifier.waiting == 0)
        #expect(notifier.indexed == 0)
    }
}
