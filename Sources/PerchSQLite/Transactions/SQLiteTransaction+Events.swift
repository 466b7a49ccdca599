import Foundation
import PerchChat
import PerchService

/// The event log, read per user, and the consumers' cursors.
extension SQLiteTransaction {
    func appendEvent(_ event: ChatEvent, audience: EventAudience) throws -> Int64 {
        var stored = event
        stored.seq = 0
        let json = stored.jsonBytes
        try db.run(
            "INSERT INTO events (name, audience_group, excluded_session, payload) VALUES (?, ?, ?, ?)",
            [
                .text(event.name.rawValue), audience.group.map(SQLValue.text) ?? .null,
                audience.excludedSession.map(SQLValue.text) ?? .null, .utf8(json),
            ])
        let seq = db.lastInsertRowID
        for uid in Set(audience.users) {
            try db.run("INSERT OR IGNORE INTO event_users (uid, seq) VALUES (?, ?)", [.text(uid), .int(seq)])
        }
        lastEventSequence = max(lastEventSequence, seq)
        stored.seq = seq
        appended.append(CachedEvent(event: stored, audience: audience, size: json.count))
        return seq
    }

    func events(for uid: String, session: String?, after requested: Int64, limit: Int) throws -> EventPage {
        // Events the retention pruned are skipped, and the reader told (their audience rows may
        // outlive them a while: they are never read).
        let start = try logStart("events")
        let seq = max(requested, start)
        var page = EventPage(events: [], scannedThrough: seq, missed: requested < start ? (requested + 1)...start : nil)
        let rows = try db.query(
            """
            SELECT e.seq, e.payload, e.excluded_session FROM events e
            JOIN (
                SELECT seq FROM (
                    SELECT e2.seq FROM events e2 JOIN members m ON m.guid = e2.audience_group
                    WHERE m.uid = ?1 AND e2.audience_group IS NOT NULL AND e2.seq > ?2
                    ORDER BY e2.seq LIMIT ?3
                )
                UNION
                SELECT seq FROM (SELECT seq FROM event_users WHERE uid = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3)
            ) picked ON picked.seq = e.seq
            ORDER BY e.seq LIMIT ?3
            """, [.text(uid), .int(seq), .int(Int64(limit))]
        ) { row -> (Int64, ChatEvent?, String?, String?) in
            // A cached event's payload is not copied out of SQLite.
            let number = row.int(0)
            if let cached = cache?.event(number) { return (number, cached, nil, row.optionalText(2)) }
            return (number, nil, row.text(1), row.optionalText(2))
        }
        for (number, cached, payload, excluded) in rows {
            page.scannedThrough = number
            if let excluded, excluded == session { continue }
            if let cached {
                page.events.append(cached)
                continue
            }
            var event = try ChatEvent(json: payload ?? "")
            event.seq = number
            cache?.insert([CachedEvent(event: event, audience: nil, size: payload?.utf8.count ?? 0)])
            page.events.append(event)
        }
        // A short page holds every event of this user up to the snapshot's newest: the stream is
        // scanned through it (same transaction, so nothing committed later is skipped).
        if rows.count < limit {
            page.scannedThrough = max(page.scannedThrough, try latestSequence())
        } else {
            page.isFull = true
        }
        return page
    }

    func latestSequence() throws -> Int64 {
        try db.scalar("SELECT coalesce(max(seq), 0) FROM events") ?? 0
    }

    func cursor(consumer: String) throws -> Int64? {
        try db.scalar("SELECT seq FROM cursors WHERE consumer = ?", [.text(consumer)])
    }

    func setCursor(consumer: String, seq: Int64, at time: Int64) throws {
        try db.run(
            """
            INSERT INTO cursors (consumer, seq, saved_at) VALUES (?, ?, ?)
            ON CONFLICT (consumer) DO UPDATE SET seq = excluded.seq, saved_at = excluded.saved_at
            """, [.text(consumer), .int(seq), .int(time)])
    }

    func keepCursors(_ consumers: [String], at time: Int64) throws {
        for consumer in consumers {
            try db.run("UPDATE cursors SET saved_at = ? WHERE consumer = ?", [.int(time), .text(consumer)])
        }
    }

    func oldestCursor(savedSince time: Int64) throws -> Int64? {
        try db.scalar("SELECT min(seq) FROM cursors WHERE saved_at >= ?", [.int(time)])
    }

    /// The groups `uid` is a member of.
    func groups(of uid: String) throws -> Set<String> {
        Set(try db.query("SELECT guid FROM members WHERE uid = ?", [.text(uid)]) { $0.text(0) })
    }
}
