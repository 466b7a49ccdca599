import Foundation
import PerchChat
import PerchConfig
import PerchLock
import PerchSQLite
import PerchService
import PerchTestSupport
import Testing

@testable import PerchHost

/// ``QueuedSends``: a bot's queued replies commit in the order they were queued, and the bot's
/// cursor is saved only once every queued reply has committed.
@Suite struct QueuedSendsTests {
    @Test func theCursorIsSavedOnlyOnceTheQueuedSendsAreCommitted() async throws {
        try await withBot { service, store, context in
            let sends = QueuedSends()
            store.holdCommits()
            for text in ["one", "two", "three"] {
                try sends.queue(MessageDraft(to: .group("g"), text: text), context: context, callerGoesOn: true) {
                    Issue.record("refused: \($0)")
                }
            }
            let saving = Task { try await sends.acknowledge(42, as: "bot:b", in: service) }
            // The writes are held: the cursor must not move past the events whose replies they are.
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await service.cursor(consumer: "bot:b") == 0)
            store.releaseCommits()
            try await saving.value
            #expect(try await service.cursor(consumer: "bot:b") == 42)
            let texts = try await service.fetchPrevious(MessagesRequest(guid: "g", limit: 10), as: "b").messages
                .filter { $0.sender == "b" }.compactMap(\.text)
            #expect(texts == ["one", "two", "three"])
        }
    }

    @Test func aSendRefusedAtItsCommitIsReportedAndDoesNotHoldTheCursor() async throws {
        try await withBot { service, _, context in
            let sends = QueuedSends()
            let refusals = Lock<[ChatError.Code]>([])
            // Checked only at the commit: the group does not exist.
            try sends.queue(MessageDraft(to: .group("nowhere"), text: "lost"), context: context, callerGoesOn: false) {
                error in refusals.withLock { $0.append(error.code) }
            }
            try await sends.acknowledge(7, as: "bot:b", in: service)
            #expect(refusals.withLock { $0 } == [.guidNotFound])
            #expect(try await service.cursor(consumer: "bot:b") == 7)
        }
    }

    @Test func pagesBeyondTheLimitWaitForTheOldestPagesSends() async throws {
        try await withBot { _, store, context in
            let sends = QueuedSends()
            store.holdCommits()
            let handled = Lock(0)
            let pages = Task {
                for page in 0...QueuedSends.pagesInFlight {
                    try sends.queue(
                        MessageDraft(to: .group("g"), text: "p\(page)"), context: context, callerGoesOn: true
                    ) {
                        Issue.record("refused: \($0)")
                    }
                    await sends.pageHandled()
                    handled.withLock { $0 += 1 }
                }
            }
            try await Task.sleep(for: .milliseconds(200))
            // The pages within the limit went on; the one past it waits for the oldest page's send.
            #expect(handled.withLock { $0 } == QueuedSends.pagesInFlight)
            store.releaseCommits()
            try await pages.value
            #expect(handled.withLock { $0 } == QueuedSends.pagesInFlight + 1)
        }
    }

    /// A chat service on a temporary database behind ``GatedStore``, with the bot `b` in group `g`,
    /// and a context for a message of carol's there.
    func withBot(_ body: (ChatService, GatedStore, BotContext) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-qs-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sqlite = try SQLiteChatStore(path: directory + "/perch.sqlite")
        let store = GatedStore(sqlite)
        let service = ChatService(store: store)
        for uid in ["carol", "b"] { _ = try await service.createUser(uid: uid, name: uid) }
        _ = try await service.createGroup(guid: "g", name: "G", owner: "carol")
        try await service.addMembers(to: "g", [("b", .participant)], by: "carol")
        let message = try await service.send(MessageDraft(to: .group("g"), text: "hi"), as: "carol")
        let actions = BotActions(
            service: service, bus: HostEventBus(), metrics: HostMetrics(), botName: "b", perMinute: 1_000,
            burst: 1_000, perConversationPerMinute: 1_000, now: { 0 })
        let context = BotContext(
            bot: BotIdentity(name: "b", uid: "b", system: false),
            event: ChatEvent(
                name: .textMessageReceived, conversationId: message.conversationId, createdAt: 0, message: message),
            message: message, parent: nil, sender: nil, captures: [:], strings: StringTable(),
            logger: HostLogger(minimum: .error, sink: { _ in }), actions: actions)
        do {
            try await body(service, store, context)
        } catch {
            store.releaseCommits()
            await sqlite.close()
            throw error
        }
        store.releaseCommits()
        await sqlite.close()
    }
}

/// A store that can hold the writes queued with `submit` until released (the others pass
/// through): a queued send stays uncommitted for as long as a test needs.
final class GatedStore: ChatStore {
    let inner: SQLiteChatStore
    private let held = Lock<(holding: Bool, queued: [@Sendable () -> Void])>((false, []))

    init(_ inner: SQLiteChatStore) { self.inner = inner }

    func holdCommits() { held.withLock { $0.holding = true } }

    /// Submits every held write, in the order it was queued, and holds no more.
    func releaseCommits() {
        let queued = held.withLock { state in
            defer { state = (false, []) }
            return state.queued
        }
        for submit in queued { submit() }
    }

    var submitsInOrder: Bool { true }

    func submit<T: Sendable>(_ body: @escaping @Sendable (any ChatWriteTransaction) throws -> T, callerGoesOn: Bool)
        -> PendingWrite<T>
    {
        let pending = PendingWrite<T>()
        let submit: @Sendable () -> Void = { [inner] in
            inner.submit(body, callerGoesOn: callerGoesOn).observe { pending.fulfil($0) }
        }
        let now = held.withLock { state -> Bool in
            guard state.holding else { return true }
            state.queued.append(submit)
            return false
        }
        if now { submit() }
        return pending
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any ChatWriteTransaction) throws -> T) async throws -> T {
        try await inner.write(body)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any ChatReadTransaction) throws -> T) async throws -> T {
        try await inner.read(body)
    }

    func events(for uid: String, session: String?, after seq: Int64, limit: Int) async throws -> EventPage {
        try await inner.events(for: uid, session: session, after: seq, limit: limit)
    }

    func latestEventSequence() async throws -> Int64 { try await inner.latestEventSequence() }

    func waitForEvents(
        after seq: Int64, for uid: String?, session: String?, ignoringOwnMessages: Bool, endingAtTick: Bool
    ) async {
        await inner.waitForEvents(
            after: seq, for: uid, session: session, ignoringOwnMessages: ignoringOwnMessages,
            endingAtTick: endingAtTick)
    }

    func close() async { await inner.close() }
}
