import Foundation
import PerchChat
import PerchLock
import PerchSQLite
import PerchService
import PerchTestSupport
import Testing

/// The store's writer (a lone caller commits on its own thread, a queue goes to the writer thread),
/// its decoded-event cache, and where a short event page says it scanned to.
@Suite struct WriterTests {
    @Test func aLoneSendIsCommittedBeforeItReturns() async throws {
        try await withChat { chat in
            // A second store on the file shares no memory with the first: it sees only commits.
            let other = try SQLiteChatStore(path: chat.path)
            let reader = ChatService(store: other)
            for index in 0..<40 {
                let sent = try await chat.say("lone \(index)")
                #expect(try await reader.message(sent.id, as: "bob").text == "lone \(index)")
            }
            await other.close()
        }
    }

    @Test func queuedSendsAreStoredInCallOrderAndARefusalStaysItsOwn() async throws {
        try await withChat { chat in
            var pending: [PendingSend] = []
            for index in 0..<100 {
                // erin is in no group: her sends are refused when they run, alone.
                let sender = index % 10 == 9 ? "erin" : "dave"
                pending.append(try chat.service.queueSend(MessageDraft(to: .group("g"), text: "q\(index)"), as: sender))
            }
            var ids: [Int64] = []
            var refused = 0
            for send in pending {
                do {
                    ids.append(try await send.message.id)
                } catch {
                    #expect((error as? ChatError)?.code == .groupNotJoined)
                    refused += 1
                }
            }
            #expect(refused == 10)
            #expect(ids.count == 90)
            #expect(ids == ids.sorted())
            let page = try await chat.service.fetchPrevious(
                MessagesRequest(guid: "g", categories: [.message], limit: 100), as: "bob")
            #expect(page.messages.compactMap(\.text) == (0..<100).filter { $0 % 10 != 9 }.map { "q\($0)" })
        }
    }

    /// A body that wrote (a cursor, an event) and then failed leaves nothing behind, alone or in a
    /// batch, and the other bodies of its batch commit (it runs again with a savepoint per body).
    @Test func aBodyThatFailsAfterWritingLeavesNothingAndItsBatchCommits() async throws {
        struct Refused: Error {}
        try await withChat { chat in
            let before = try await chat.store.latestEventSequence()
            @Sendable func body(_ index: Int, fails: Bool) -> @Sendable (any ChatWriteTransaction) throws -> Void {
                { tx in
                    try tx.setCursor(consumer: "c\(index)", seq: Int64(index + 1), at: 0)
                    _ = try tx.appendEvent(
                        ChatEvent(name: .textMessageReceived, conversationId: "group_g", createdAt: 0),
                        audience: EventAudience(group: "g"))
                    if fails { throw Refused() }
                }
            }
            // Alone: its transaction is rolled back.
            await #expect(throws: Refused.self) { try await chat.store.submit(body(0, fails: true)).value }
            #expect(try await chat.service.cursor(consumer: "c0") == 0)
            #expect(try await chat.store.latestEventSequence() == before)
            // Queued together (the writer thread takes them in batches): every third fails.
            let pending = (1...60).map { index in
                chat.store.submit(body(index, fails: index % 3 == 0), callerGoesOn: true)
            }
            var failed = 0
            for write in pending {
                do { try await write.value } catch is Refused { failed += 1 }
            }
            #expect(failed == 20)
            for index in 1...60 {
                let expected: Int64 = index % 3 == 0 ? 0 : Int64(index + 1)
                #expect(try await chat.service.cursor(consumer: "c\(index)") == expected)
            }
            // The events of the bodies that committed, and of no other, are there, from memory and
            // from the file alike.
            let latest = try await chat.store.latestEventSequence()
            #expect(latest == before + 40)
            let page = try await chat.service.events(for: "bob", after: before, limit: 100)
            #expect(page.events.count == 40)
            #expect(page.events.map(\.seq) == Array(before + 1...latest))
        }
    }

    @Test func queueingRefusesBadContentAtOnce() async throws {
        try await withChat { chat in
            #expect(throws: ChatError.self) {
                _ = try chat.service.queueSend(MessageDraft(to: .group("g"), text: ""), as: "dave")
            }
        }
    }

    @Test func queuedWritesAllCommitInArrivalOrderPerCaller() async throws {
        try await withChat { chat in
            // 8 callers × 40 sends, all at once: the first leads, the rest queue for the thread.
            let ids = Locked<[Int: [Int64]]>([:])
            try await withThrowingTaskGroup(of: Void.self) { group in
                for caller in 0..<8 {
                    group.addTask {
                        for index in 0..<40 {
                            let sent = try await chat.say("c\(caller) \(index)")
                            ids.withLock { $0[caller, default: []].append(sent.id) }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let all = ids.withLock { $0 }
            #expect(all.values.map(\.count) == Array(repeating: 40, count: 8))
            for list in all.values { #expect(list == list.sorted()) }
            let page = try await chat.service.fetchPrevious(
                MessagesRequest(guid: "g", categories: [.message], limit: 100), as: "bob")
            #expect(page.messages.count == 100)
            #expect(Set(all.values.joined()).count == 320)
        }
    }

    @Test func closingWhileWritesQueueLosesNoAcknowledgedWrite() async throws {
        let fixture = try await ChatFixture.make()
        let succeeded = Locked<Set<Int64>>([])
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    if let sent = try? await fixture.say("queued \(index)") {
                        succeeded.withLock { _ = $0.insert(sent.id) }
                    }
                }
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(5))
                await fixture.store.close()
            }
        }
        // Every call returned (none hangs); each acknowledged send is in the file, nothing else.
        let reopened = try SQLiteChatStore(path: fixture.path)
        let service = ChatService(store: reopened)
        let stored = try await service.fetchPrevious(
            MessagesRequest(guid: "g", categories: [.message], limit: 100), as: "bob"
        ).messages
        var all = stored
        var cursor = stored.first?.id
        while let before = cursor {
            let older = try await service.fetchPrevious(
                MessagesRequest(guid: "g", categories: [.message], limit: 100, messageId: before), as: "bob"
            ).messages
            all += older
            cursor = older.isEmpty ? nil : older.first?.id
        }
        #expect(Set(all.map(\.id)) == succeeded.withLock { $0 })
        await reopened.close()
        try? FileManager.default.removeItem(atPath: fixture.directory)
    }

    @Test func aCallAfterTheStoreClosesIsUnavailableAndLogsNothing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "perch-closed-\(UUID().uuidString)"
        )
        .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteChatStore(path: directory + "/perch.sqlite")
        let logged = Locked<[String]>([])
        let service = ChatService(store: store, logger: RecordingLogger(lines: logged))
        _ = try await service.createUser(uid: "alice", name: "Alice")
        _ = try await service.createGroup(guid: "g", name: "G", owner: "alice")
        await store.close()
        await expectRefusal(.serviceUnavailable) {
            _ = try await service.send(MessageDraft(to: .group("g"), text: "late"), as: "alice")
        }
        await expectRefusal(.serviceUnavailable) {
            _ = try await service.queueSend(MessageDraft(to: .group("g"), text: "queued late"), as: "alice").message
        }
        await expectRefusal(.serviceUnavailable) { _ = try await service.users(limit: 10) }
        await expectRefusal(.serviceUnavailable) { _ = try await service.events(for: "alice", after: 0) }
        #expect(logged.withLock { $0 } == [])
        // A real failure is still logged, with the id the caller is given.
        let failure = service.wireSafeError(CocoaError(.fileReadCorruptFile))
        #expect(failure.code == .internalError)
        #expect(logged.withLock { $0 }.count == 1)
        #expect(logged.withLock { $0 }.first?.contains("\(failure.params["id"] ?? "")") == true)
    }

    @Test func eventsReadThroughTheCacheEqualEventsDecodedFromTheFile() async throws {
        try await withChat { chat in
            let root = try await chat.say("root ünïcødé 🐦 \"quoted\" \\ <@uid:bob>")
            _ = try await chat.say("in the thread", as: "bob", parent: root.id)
            _ = try await chat.service.send(
                MessageDraft(
                    to: .group("g"), text: "with metadata", metadata: .object(["a": .number(1.5), "b": .null]),
                    tags: ["t"], quotedMessageId: root.id), as: "carol")
            _ = try await chat.service.pin(root.id, as: "alice")
            try await chat.service.addMembers(to: "g", [("erin", .participant)], by: "alice")
            let cached = try await chat.service.events(for: "bob", after: 0, limit: 100)
            let other = try SQLiteChatStore(path: chat.path)
            let decoded = try await ChatService(store: other).events(for: "bob", after: 0, limit: 100)
            #expect(cached.events.count >= 5)
            #expect(cached.events == decoded.events)
            await other.close()
        }
    }

    @Test func aShortPageIsScannedThroughTheNewestEventAndAFullOneThroughItsLast() async throws {
        try await withChat { chat in
            for index in 0..<5 { try await chat.say("m\(index)") }
            let latest = try await chat.store.latestEventSequence()
            // erin is in no group: nothing for her, and the stream is scanned to the newest event.
            let empty = try await chat.service.events(for: "erin", after: 0, limit: 10)
            #expect(empty.events.isEmpty)
            #expect(empty.scannedThrough == latest)
            // A full page stops at its own last event: later events are not skipped.
            let full = try await chat.service.events(for: "bob", after: 0, limit: 2)
            #expect(full.events.count == 2)
            #expect(full.scannedThrough == full.events.last?.seq)
            #expect(full.scannedThrough < latest)
        }
    }
}

/// A value shared by concurrent test tasks: the project's pthread lock (ThreadSanitizer reported
/// races inside `Synchronization.Mutex`'s closures here that the lock itself excludes).
typealias Locked<Value> = Lock<Value>

/// Keeps the service's log lines.
struct RecordingLogger: ChatLogger {
    let lines: Locked<[String]>
    func error(_ message: String) { lines.withLock { $0.append(message) } }
}
