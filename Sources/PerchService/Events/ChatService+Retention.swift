import PerchChat

extension ChatService {
    /// One pass of the event log's retention: writes a mark (the newest event and outbox row now),
    /// then deletes the events and outbox rows older than `retention` seconds, as the newest mark
    /// at least that old tells, except the events a consumer that saved its cursor within the
    /// retention has not handled yet (a running bot never misses an event to it; one gone for
    /// longer is told what it missed when it comes back, as is a stream resuming from before the
    /// log's start: ``EventPage/missed``), and the outbox rows a delivery consumer that saved its
    /// cursor within the retention has not handled (a webhook whose receiver is down loses nothing
    /// to the retention). Messages are never pruned.
    ///
    /// Rows go in writes of `batch` (and audience rows 100 users a write), so sends interleave with a
    /// long pass instead of waiting for it.
    /// A pass finds nothing to do until its first mark is `retention` old.
    public func pruneEventLog(olderThan retention: Int64, batch: Int = 500) async throws(ChatError) -> LogPruning {
        let now = clock.now()
        let cutoff = now - retention
        let (mark, oldestCursor, oldestDelivery) = try await writing { tx in
            try tx.markLogs(at: now, keepingFrom: cutoff)
            return (
                try tx.logMark(atOrBefore: cutoff), try tx.oldestCursor(savedSince: cutoff),
                try tx.oldestDeliveryCursor(savedSince: cutoff)
            )
        }
        guard let mark else { return LogPruning() }
        let events = min(mark.events, oldestCursor ?? .max)
        let outbox = min(mark.outbox, oldestDelivery ?? .max)
        var total = LogPruning()
        while true {
            let pass = try await writing { tx in
                try tx.pruneLogs(events: events, outbox: outbox, limit: batch)
            }
            total.events += pass.events
            total.outbox += pass.outbox
            if pass.events < batch, pass.outbox < batch { break }
        }
        guard total.events > 0 else { return total }
        var next: String? = ""
        while let uid = next { next = try await writing { tx in try tx.pruneEventAudiences(after: uid, limit: 100) } }
        return total
    }
}
