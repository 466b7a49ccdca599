import Foundation
import PerchChat
import PerchService
import PerchTestSupport
import Testing

@testable import PerchSQLite

/// A full disk: SQLite's `SQLITE_FULL`, made here by capping the database at its current size
/// (`PRAGMA max_page_count` on the writer's connection), as a full filesystem gives it.
@Suite struct StorageFullTests {
    @Test func aFullDiskRefusesWritesAsUnavailableLosesNothingAndLogsOnceAMinute() async throws {
        let logged = Locked<[String]>([])
        try await withChat(logger: RecordingLogger(lines: logged)) { chat in
            let (store, service, clock) = (chat.store, chat.service, chat.clock)
            let kept = try await chat.say("before", as: "bob")

            func capPages(_ pages: Int) async throws {
                try await store.write { tx in
                    try (tx as! SQLiteTransaction).db.execute("PRAGMA max_page_count = \(pages)")
                }
            }
            // SQLite keeps the cap at least the file's current size: 1 means "no growth".
            try await capPages(1)
            let long = String(repeating: "a long message that needs pages of its own ", count: 400)
            let unavailable: [String: ChatError.ParamValue] = [
                "reason": "storage_full", "retryAfter": .int(30),
            ]
            for _ in 0..<3 {
                let refusal = await expectRefusal(.serviceUnavailable, params: unavailable) {
                    _ = try await service.send(MessageDraft(to: .group("g"), text: long), as: "bob")
                }
                #expect(
                    refusal?.message
                        == "The service cannot store anything now: its disk is full; try again in 30 seconds.")
            }
            // Three refusals, one line; a minute later the next one says how many it held back.
            #expect(logged.withLock { $0.count } == 1)
            #expect(logged.withLock { $0.first?.contains("disk is full") } == true)
            clock.advance(by: 61)
            await expectRefusal(.serviceUnavailable, params: unavailable) {
                _ = try await service.send(MessageDraft(to: .group("g"), text: long), as: "bob")
            }
            #expect(logged.withLock { $0.count } == 2)
            #expect(
                logged.withLock { $0.last?.contains("(2 more like it since the last such line, not logged)") } == true)

            // Room again: the same call succeeds, and the refused ones left nothing behind.
            try await capPages(1_000_000)
            let after = try await service.send(MessageDraft(to: .group("g"), text: long), as: "bob")
            let stored = try await store.read { tx in
                try (tx as! SQLiteTransaction).db.query("SELECT id FROM messages WHERE sender = 'bob' ORDER BY id") {
                    $0.int(0)
                }
            }
            #expect(stored == [kept.id, after.id])
        }
    }
}
