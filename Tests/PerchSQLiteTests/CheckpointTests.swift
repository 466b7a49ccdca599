import CSQLite
import Foundation
import PerchChat
import PerchService
import PerchTestSupport
import Testing

@testable import PerchSQLite

/// The checkpointer copies the log back once enough new frames are waiting, not once per commit,
/// even while a reader keeps the log from being restarted.
@Suite struct CheckpointTests {
    @Test func aReaderHoldingTheLogDoesNotTurnEveryCommitIntoACheckpoint() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-ckpt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("t.sqlite").path
        let writer = try SQLiteConnection(path: path, readOnly: false)
        try writer.execute(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t(x)")
        let checkpointer = try Checkpointer(path: path, synchronous: .normal, threshold: 100)
        checkpointer.watch(writer)
        let padding = String(repeating: "x", count: 3_000)
        func commit(_ count: Int) throws {
            for _ in 0..<count { try writer.execute("INSERT INTO t VALUES ('\(padding)')") }
        }
        try commit(5)
        // A reader on an old snapshot: no checkpoint can copy what was written after it.
        let reader = try SQLiteConnection(path: path, readOnly: true)
        try reader.execute("BEGIN")
        #expect(try reader.scalar("SELECT count(*) FROM t") == 5)
        // Each commit writes about one frame; 600 commits while the reader holds the log.
        for _ in 0..<60 {
            try commit(10)
            try await Task.sleep(for: .milliseconds(2))
        }
        let held = checkpointer.checkpoints
        // At most one per quarter threshold of frames written (a frame is a page, 4 KiB and a
        // 24-byte header, after the log's 32-byte header), not one per commit.
        let size = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int ?? 0
        let frames = (size - 32) / (4_096 + 24)
        #expect(held >= 1)
        #expect(held <= frames / 25 + 1)
        #expect(held < 200)
        try reader.execute("COMMIT")
        // Released: the next checkpoint copies everything and the log starts over.
        try commit(200)
        try await waitUntil { checkpointer.checkpoints > held }
        checkpointer.close()
        #expect(try writer.scalar("SELECT count(*) FROM t") == 805)
    }

    /// Under steady load a checkpoint on another thread never finds every frame copied (commits land
    /// while it copies), and SQLite starts the log over only then: without the writer's catch-up the
    /// log grew by every commit, without end.
    @Test func theLogStartsOverUnderSteadyLoad() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-ckpt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("perch.sqlite").path
        let store = try SQLiteChatStore(path: path, checkpointFrames: 100)
        let service = ChatService(store: store)
        _ = try await service.createUser(uid: "a", name: "A")
        _ = try await service.createGroup(guid: "g", name: "G", owner: "a")
        // Two senders back to back: the writer is never idle long enough for the log to drain.
        // Rounds of 1,200 sends (about 10,000 frames), until the log has started over twice.
        let padding = String(repeating: "x", count: 2_000)
        var rounds = 0
        while store.checkpointer.restarts < 2, rounds < 5 {
            let round = rounds
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<2 {
                    group.addTask {
                        for index in 0..<600 {
                            let draft = MessageDraft(to: .group("g"), text: "\(round) \(lane) \(index) \(padding)")
                            _ = try await service.send(draft, as: "a")
                        }
                    }
                }
                try await group.waitForAll()
            }
            rounds += 1
        }
        // Without the catch-up every frame stayed in the log: it never started over, in any number
        // of rounds. With it, the log starts over once it is 4 thresholds long, or a few quarter
        // thresholds later when a checkpoint was running: 23 to 30 times in one round alone or
        // beside four busy loops. A checkpoint held up on a loaded machine delays the next
        // restart (a round beside two busy loops on this 2-CPU machine counted 1), so the test
        // sends more rounds, up to five, rather than count on one.
        #expect(store.checkpointer.restarts >= 2)
        let newest = try await service.fetchPrevious(MessagesRequest(guid: "g", limit: 1), as: "a")
        #expect(newest.messages.first?.text?.hasPrefix("\(rounds - 1) ") == true)
        #expect(newest.messages.first?.text?.contains(" 599 ") == true)
        await store.close()
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<500 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        #expect(condition())
    }
}
