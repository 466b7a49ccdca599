import Foundation
import PerchService

/// The retention of the event log and the outbox: marks, pruning, and the audiences of pruned events.
extension SQLiteTransaction {
    /// The last sequence the retention pruned from `log`, `events` or `outbox` (0: none).
    func logStart(_ log: String) throws -> Int64 {
        try db.scalar("SELECT pruned_through FROM log_starts WHERE log = ?", [.text(log)]) ?? 0
    }

    func logMark(atOrBefore time: Int64) throws -> LogMark? {
        try db.query("SELECT at, events, outbox FROM log_marks WHERE at <= ? ORDER BY at DESC LIMIT 1", [.int(time)]) {
            LogMark(at: $0.int(0), events: $0.int(1), outbox: $0.int(2))
        }.first
    }

    func markLogs(at time: Int64, keepingFrom cutoff: Int64) throws {
        try db.run(
            """
            INSERT OR REPLACE INTO log_marks (at, events, outbox) VALUES (
                ?, (SELECT coalesce(max(seq), 0) FROM events), (SELECT coalesce(max(seq), 0) FROM outbox))
            """, [.int(time)])
        try db.run("DELETE FROM log_marks WHERE at < (SELECT max(at) FROM log_marks WHERE at <= ?)", [.int(cutoff)])
    }

    func pruneLogs(events: Int64, outbox: Int64, limit: Int) throws -> LogPruning {
        LogPruning(
            events: try prune("events", through: events, limit: limit),
            outbox: try prune("outbox", through: outbox, limit: limit))
    }

    /// Deletes the rows of `log` (`events` or `outbox`) after its last pruned sequence, up to
    /// `through` and at most `limit`, keeping the newest; records how far it got.
    private func prune(_ log: String, through: Int64, limit: Int) throws -> Int {
        let start = try logStart(log)
        let newest = try db.scalar("SELECT coalesce(max(seq), 0) FROM \(log)") ?? 0
        let end = min(through, newest - 1, start + Int64(limit))
        guard end > start else { return 0 }
        let deleted = try db.run("DELETE FROM \(log) WHERE seq > ? AND seq <= ?", [.int(start), .int(end)])
        try db.run(
            """
            INSERT INTO log_starts (log, pruned_through) VALUES (?, ?)
            ON CONFLICT (log) DO UPDATE SET pruned_through = excluded.pruned_through
            """, [.text(log), .int(end)])
        if log == "events" { prunedEvents = end }
        return deleted
    }

    func pruneEventAudiences(after uid: String, limit: Int) throws -> String? {
        let events = try logStart("events")
        var last = uid
        for _ in 0..<limit {
            guard
                let next = try db.query(
                    "SELECT uid FROM event_users WHERE uid > ? ORDER BY uid LIMIT 1", [.text(last)], row: { $0.text(0) }
                ).first
            else { return nil }
            try db.run("DELETE FROM event_users WHERE uid = ? AND seq <= ?", [.text(next), .int(events)])
            last = next
        }
        return last
    }
}
