import PerchChat
import PerchLock

/// Each watched user's newest outbox row committed by this process, so a live stream looks in the
/// outbox only when something new is there for its user. A user is watched while a stream of
/// theirs follows notifications (``watch(_:)``); a commit records rows of watched users only, and
/// while nobody watches it records nothing (a send into a large group pays nothing for streams
/// that are not there). Updated after a commit and before its events count as committed: a
/// stream woken by a message sees its user's notification of it here. Another process's
/// notifications are not announced here (the stream finds them at its next look, as after a
/// reconnection).
final class NotificationWatermarks: Sendable {
    private let state = Lock((watchers: [String: Int](), newest: [String: Int64]()))

    func latest(for uid: String) -> Int64 { state.withLock { $0.newest[uid] ?? 0 } }

    func watch(_ uid: String) { state.withLock { $0.watchers[uid, default: 0] += 1 } }

    func unwatch(_ uid: String) {
        state.withLock { state in
            guard let count = state.watchers[uid] else { return }
            if count > 1 {
                state.watchers[uid] = count - 1
            } else {
                state.watchers[uid] = nil
                state.newest[uid] = nil
            }
        }
    }

    /// Records what a commit appended: per message, its recipients and a sequence at or above each
    /// of their rows.
    func advance(_ appended: [(recipients: [NotificationRecipient], through: Int64)]) {
        state.withLock { state in
            guard !state.watchers.isEmpty else { return }
            for batch in appended {
                for recipient in batch.recipients where state.watchers[recipient.uid] != nil {
                    if state.newest[recipient.uid, default: 0] < batch.through {
                        state.newest[recipient.uid] = batch.through
                    }
                }
            }
        }
    }
}
