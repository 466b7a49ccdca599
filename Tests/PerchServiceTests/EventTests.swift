import Foundation
import PerchChat
import PerchService
import PerchTestSupport
import Testing

@testable import PerchSQLite

@Suite struct EventTests {
    @Test func aUserSessionReceivesExactlyWhatTheUserMaySeeInOrder() async throws {
        try await withChat { chat in
            let base = try await chat.service.cursor(consumer: "none")
            #expect(base == 0)
            try await chat.say("group message", as: "bob")
            try await chat.say("to erin", as: "dave", to: .user("erin"))
            try await chat.say("between alice and bob", as: "alice", to: .user("bob"))
            try await chat.service.kick("dave", from: "g", by: "carol")
            try await chat.say("after dave left", as: "bob")

            let dave = try await chat.service.events(for: "dave", after: 0).events
            // Group events follow membership at read time: once kicked, dave sees his own kick and
            // his one-on-one conversations only.
            #expect(dave.map(\.name) == [.textMessageReceived, .groupMemberKicked])
            #expect(dave.compactMap(\.message?.text) == ["to erin"])
            #expect(dave.last?.name == .groupMemberKicked)

            let erin = try await chat.service.events(for: "erin", after: 0).events
            #expect(erin.compactMap(\.message?.text) == ["to erin"])
            #expect(erin.count == 1)

            let bob = try await chat.service.events(for: "bob", after: 0).events
            #expect(bob.compactMap(\.message?.text) == ["group message", "between alice and bob", "after dave left"])
            #expect(bob.map(\.seq) == bob.map(\.seq).sorted())
        }
    }

    @Test func livePayloadsReportNoViewerFields() async throws {
        try await withChat { chat in
            let root = try await chat.say("root <@uid:bob>", as: "dave")
            _ = try await chat.service.save(root.id, as: "bob")
            let events = try await chat.service.events(for: "bob", after: 0).events
            let live = try #require(events.first { $0.name == .textMessageReceived }?.message)
            #expect(live.mentionedUids == ["bob"])
            #expect(!live.hasMentionedMe && live.savedAt == 0 && !live.threadSubscribed)
            #expect(try await chat.service.message(root.id, as: "bob").hasMentionedMe)
        }
    }

    @Test func aConsumerResumesAfterARestartFromItsAcknowledgedSequence() async throws {
        let fixture = try await ChatFixture.make()
        defer { try? FileManager.default.removeItem(atPath: fixture.directory) }
        try await fixture.say("one", as: "bob")
        try await fixture.say("two", as: "bob")
        let page = try await fixture.service.events(for: "dave", after: 0)
        let two = try #require(page.events.last { $0.message?.text == "two" })
        try await fixture.service.acknowledge(consumer: "bot:dave", seq: two.seq)
        try await fixture.say("three", as: "bob")
        await fixture.store.close()

        let reopened = try SQLiteChatStore(path: fixture.path)
        let service = ChatService(store: reopened)
        let cursor = try await service.cursor(consumer: "bot:dave")
        #expect(cursor == two.seq)
        let resumed = try await service.events(for: "dave", after: cursor).events
        #expect(resumed.compactMap(\.message?.text) == ["three"])
        await reopened.close()
    }

    @Test func theStreamDeliversLiveEventsAndSkipsOthersTraffic() async throws {
        try await withChat { chat in
            let stream = chat.service.eventStream(for: "erin", after: 0)
            let reader = Task { () -> [String] in
                var texts: [String] = []
                for try await event in stream {
                    if let text = event.message?.text { texts.append(text) }
                    if texts.count == 2 { break }
                }
                return texts
            }
            try await chat.say("not for erin", as: "bob")
            try await chat.say("first", as: "dave", to: .user("erin"))
            try await chat.say("also not for erin", as: "bob")
            try await chat.say("second", as: "alice", to: .user("erin"))
            #expect(try await reader.value == ["first", "second"])
        }
    }
}

@Suite struct StoreTests {
    func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("perch-store-\(UUID().uuidString).sqlite").path
    }

    @Test func refusesADatabaseFromANewerPerchWithoutTouchingIt() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try SQLiteChatStore(path: path)
        await store.close()
        _ = try runSQLite(path, "PRAGMA user_version = 99")
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect {
            _ = try SQLiteChatStore(path: path)
        } throws: { error in
            "\(error)".contains(
                "written by a newer Perch (schema 99; this Perch reads up to \(SQLiteChatStore.schemaVersion))")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func refusesAnotherSQLiteFileAndADamagedFile() throws {
        let other = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: other) }
        _ = try runSQLite(other, "CREATE TABLE notes (x); INSERT INTO notes VALUES (1)")
        #expect { _ = try SQLiteChatStore(path: other) } throws: { "\($0)".contains("not a Perch database") }

        let garbage = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: garbage) }
        let bytes = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: URL(fileURLWithPath: garbage))
        #expect { _ = try SQLiteChatStore(path: garbage) } throws: { "\($0)".contains("is damaged") }
        #expect(try Data(contentsOf: URL(fileURLWithPath: garbage)) == bytes)
    }

    /// A Perch database with one damaged page in the middle (a disk error, a bad copy): refused at
    /// open, read ahead or not, and not written to.
    @Test func refusesAPerchDatabaseWithADamagedPage() async throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try SQLiteChatStore(path: path)
        let service = ChatService(store: store)
        _ = try await service.createUser(uid: "a", name: "A")
        _ = try await service.createGroup(guid: "g", name: "G", owner: "a")
        for index in 0..<400 { _ = try await service.send(MessageDraft(to: .group("g"), text: "m \(index)"), as: "a") }
        await store.close()
        _ = try runSQLite(path, "PRAGMA wal_checkpoint(TRUNCATE)")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        // The middle page's b-tree header becomes an invalid page type.
        let page = bytes.count / 2 / 2048 * 2048
        bytes.replaceSubrange(page..<page + 16, with: [UInt8](repeating: 0xFF, count: 16))
        try bytes.write(to: URL(fileURLWithPath: path))
        for readAhead in [true, false] {
            #expect {
                _ = try SQLiteChatStore(path: path, readAhead: readAhead)
            } throws: { "\($0)".contains("is damaged") }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
    }

    /// A file exactly as its last store left it at a clean close opens without the check of every
    /// page; any change since (by anything: here the times set by hand, as a copy or a restore
    /// would change them) or a store that never closed (a crash) brings the check back.
    @Test func aCleanlyClosedDatabaseOpensWithoutTheCheckAndAnyChangeBringsItBack() async throws {
        let path = temporaryPath()
        let record = path + "-closed"
        defer {
            for suffix in ["", "-closed", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        func post(_ store: SQLiteChatStore, _ text: String) async throws {
            _ = try await ChatService(store: store).send(MessageDraft(to: .group("g"), text: text), as: "a")
        }
        var store = try SQLiteChatStore(path: path)
        let service = ChatService(store: store)
        _ = try await service.createUser(uid: "a", name: "A")
        _ = try await service.createGroup(guid: "g", name: "G", owner: "a")
        try await post(store, "one")
        await store.close()
        #expect(FileManager.default.fileExists(atPath: record))

        store = try SQLiteChatStore(path: path)
        #expect(!store.checkedAtOpen)
        // Taken away at open, before anything is written: a crash from here on leaves none.
        #expect(!FileManager.default.fileExists(atPath: record))
        try await post(store, "two")
        // A second store while the first is open (and, for it, a first that never closes).
        let second = try SQLiteChatStore(path: path)
        #expect(second.checkedAtOpen)
        await second.close()
        await store.close()

        // The file changed by something else since its clean close.
        store = try SQLiteChatStore(path: path)
        await store.close()
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        store = try SQLiteChatStore(path: path)
        #expect(store.checkedAtOpen)
        #expect(try await store.latestEventSequence() > 0)
        await store.close()
    }

    @Test func aFailedBodyLeavesNothingWhileItsBatchmatesCommit() async throws {
        try await withChat { chat in
            // Many concurrent sends, some invalid: the invalid ones roll back alone.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<60 {
                    group.addTask {
                        if index % 3 == 0 {
                            _ = try? await chat.say("reply", parent: 999_999)
                        } else {
                            try await chat.say("ok \(index)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let page = try await chat.service.fetchPrevious(
                MessagesRequest(guid: "g", categories: [.message], limit: 100), as: "bob")
            #expect(page.messages.count == 40)
        }
    }

    /// Writes to a database file behind the store's back.
    func runSQLite(_ path: String, _ sql: String) throws -> String {
        let connection = try SQLiteConnection(path: path, readOnly: false)
        try connection.execute(sql)
        return ""
    }
}

@Suite struct ConcurrentOpenTests {
    /// Several processes may open one database at once (hosts, `perch send --local`): migrations
    /// must not run twice.
    @Test func storesOpeningTogetherMigrateOnce() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "perch-open-\(UUID().uuidString).sqlite"
        ).path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let results = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    await withCheckedContinuation { continuation in
                        Thread {
                            do {
                                let store = try SQLiteChatStore(path: path)
                                Task {
                                    await store.close()
                                    continuation.resume(returning: nil)
                                }
                            } catch {
                                continuation.resume(returning: "\(error)")
                            }
                        }.start()
                    }
                }
            }
            var errors: [String] = []
            for await result in group { if let result { errors.append(result) } }
            return errors
        }
        #expect(results.isEmpty, "\(results)")
    }
}
