import Foundation
import Testing

@testable import PerchSQLite

/// Reads run on pooled reader connections: a burst opens as many as it needs at once, and once it
/// has passed only ``SQLiteChatStore/idleReaderLimit`` stay open (each holds a page cache).
@Suite struct ReaderPoolTests {
    @Test func aBurstOfConcurrentReadsLeavesAtMostTheIdleLimitOpen() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-readers-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteChatStore(path: directory + "/perch.sqlite")
        let concurrent = SQLiteChatStore.idleReaderLimit * 3
        // Every read waits inside its transaction until all have started, so each holds a
        // connection of its own at the same time.
        let started = DispatchGroup()
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchGroup()
        for _ in 0..<concurrent {
            started.enter()
            finished.enter()
            Thread.detachNewThread {
                _ = try? store.reading { tx in
                    started.leave()
                    release.wait()
                    return try tx.latestSequence()
                }
                finished.leave()
            }
        }
        #expect(started.wait(timeout: .now() + 30) == .success)
        #expect(store.idleReaders == 0)
        for _ in 0..<concurrent { release.signal() }
        #expect(finished.wait(timeout: .now() + 30) == .success)
        #expect(store.idleReaders == SQLiteChatStore.idleReaderLimit)
        // The kept ones serve the next reads.
        _ = try await store.read { _ in 1 }
        #expect(store.idleReaders == SQLiteChatStore.idleReaderLimit)
        await store.close()
    }
}
