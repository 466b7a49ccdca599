import CSQLite
import Foundation
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

    private func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<500 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        #expect(condition())
    }
}
