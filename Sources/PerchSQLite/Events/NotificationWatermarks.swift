import PerchLock

/// Each user's newest outbox row committed by this process, so a live stream looks in the outbox
/// only when something new is there for its user. Updated after a commit and before its events
/// count as committed: a stream woken by a message sees its user's notification of it here.
/// A user this process never notified has none (0); another process's notifications are not
/// announced here (the stream finds them at its next look, as after a reconnection).
final class NotificationWatermarks: Sendable {
    private let newest = Lock([String: Int64]())

    func latest(for uid: String) -> Int64 { newest.withLock { $0[uid] ?? 0 } }

    /// Records rows a commit appended, `(uid, seq)` in any order.
    func advance(_ rows: [(uid: String, seq: Int64)]) {
        newest.withLock { newest in
            for row in rows where newest[row.uid, default: 0] < row.seq { newest[row.uid] = row.seq }
        }
    }
}
