import Foundation
import PerchChat
import PerchService
import PerchTestSupport
import Testing

@testable import PerchSQLite

/// Opening a database an earlier Perch wrote migrates it in place, keeping every row and id.
@Suite struct MigrationTests {
    @Test func schema6KeepsItsRowsAndNewIdsFollowTheLargestAfterAutoincrementGoes() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("perch-v6-\(UUID().uuidString).sqlite")
            .path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        // A database as schema 6 left it, with rows whose ids an AUTOINCREMENT counter had moved past.
        do {
            let db = try SQLiteConnection(path: path, readOnly: false)
            try db.execute("PRAGMA journal_mode = WAL")
            for migration in Schema.migrations.prefix(6) { try db.execute(migration) }
            try db.execute(
                """
                PRAGMA user_version = 6;
                PRAGMA application_id = \(Schema.applicationID);
                INSERT INTO users VALUES ('ann', 'Ann', 'default', NULL, 1, 1), ('ben', 'Ben', 'default', NULL, 1, 1);
                INSERT INTO groups VALUES ('g', 'G', 'public', 'ann', NULL, 1, 1);
                INSERT INTO members VALUES ('g', 'ann', 'owner', 1), ('g', 'ben', 'participant', 1);
                INSERT INTO messages (id, muid, conversation_id, sender, receiver_type, receiver, type, category,
                    text, parent_id, quoted_id, reply_count, sent_at, edited_at, edited_by, deleted_at, deleted_by,
                    updated_at, pinned_at, pinned_by)
                    VALUES (41, '', 'group_g', 'ann', 'group', 'g', 'text', 'message', 'old', 0, 0, 0, 1, 0, '', 0, '',
                    1, 0, '');
                INSERT INTO events (seq, name, audience_group, payload) VALUES (7, 'onTextMessageReceived', 'g', '{}');
                INSERT INTO outbox (seq, uid, message_id, reason, created_at) VALUES (3, 'ben', 41, 'message', 1);
                UPDATE sqlite_sequence SET seq = 100;
                """)
        }
        let store = try SQLiteChatStore(path: path)
        let service = ChatService(store: store)
        #expect(try await service.message(41, as: "ben").text == "old")
        let sent = try await service.send(MessageDraft(to: .group("g"), text: "new"), as: "ann")
        #expect(sent.id == 42)
        let events = try await service.events(for: "ben", after: 7).events
        #expect(events.map(\.seq) == [8])
        #expect(try await service.notifications(for: "ben").records.map(\.seq) == [3, 4])
        let tables = try await store.read { tx in
            try (tx as! SQLiteTransaction).db.query(
                "SELECT sql FROM sqlite_master WHERE name IN ('messages', 'events', 'outbox')"
            ) { $0.text(0) }
        }
        #expect(tables.count == 3)
        #expect(tables.allSatisfy { !$0.contains("AUTOINCREMENT") })
        // Schema 10: every message is in one conversation index, the top level's or the replies'.
        let indexes = try await store.read { tx in
            try (tx as! SQLiteTransaction).db.query(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages' AND name LIKE '%conversation%' OR name = 'messages_top_level'"
            ) { $0.text(0) }
        }
        #expect(Set(indexes) == ["messages_top_level", "messages_replies_by_conversation"])
        let reply = try await service.send(MessageDraft(to: .group("g"), text: "reply", parentMessageId: 41), as: "ben")
        let page = try await service.fetchPrevious(MessagesRequest(guid: "g", categories: [.message]), as: "ben")
        #expect(page.messages.map(\.id) == [41, 42, reply.id])
        // The file keeps the page size it was made with (SQLite's default then).
        #expect(try await pageSize(of: store) == 4_096)
        await store.close()
    }

    /// A new file gets Perch's page size before its first write; reopened, it still has it, and an
    /// older file keeps its own (the check above).
    @Test func aNewFileIsMadeWithPerchsPageSize() async throws {
        let chat = try await ChatFixture.make()
        #expect(try await pageSize(of: chat.store) == Schema.pageSize)
        #expect(Schema.pageSize == 2_048)
        await chat.store.close()
        let reopened = try SQLiteChatStore(path: chat.path)
        #expect(try await pageSize(of: reopened) == Schema.pageSize)
        #expect(try await ChatService(store: reopened).user("alice").name == "Alice")
        await reopened.close()
        await chat.close()
    }

    private func pageSize(of store: SQLiteChatStore) async throws -> Int64 {
        try await store.read { tx in try (tx as! SQLiteTransaction).db.scalar("PRAGMA page_size") ?? 0 }
    }
}
