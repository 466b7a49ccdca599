import Foundation
import PerchChat
import PerchLock
import PerchService

/// Committed events by sequence, decoded (a ring: slot `seq % capacity`, so it holds at most the
/// last `capacity`). Only committed events enter it (from the writer after the commit, or from a
/// reader that decoded one), and an event never changes once written, so a hit is always right.
final class EventCache: Sendable {
    /// The slots, each entry's parts (event, sequence, audience, size) in arrays of their own: a page
    /// looks at thousands of slots' sequences and audiences, and reading them from whole entries
    /// copied each event (its message and all), about a microsecond a slot; and it copies only the
    /// events it returns, not their audiences too.
    private struct Ring {
        var events: [ChatEvent?]
        var seqs: [Int64]
        var audiences: [EventAudience?]
        var sizes: [Int]
        /// The sizes of the entries held.
        var bytes = 0
        /// Where the budget's sweep goes on from: slots follow sequences, so going round from the
        /// slot after the last one it cleared takes the oldest first.
        var hand = 0

        /// The slot of event `seq` (sequences start at 1, and slot follows slot).
        func slot(of seq: Int64) -> Int { Int(seq % Int64(seqs.count)) }

        /// The slot holding event `seq`, if it is here.
        func slot(holding seq: Int64) -> Int? {
            let slot = slot(of: seq)
            return seqs[slot] == seq ? slot : nil
        }

        mutating func clear(_ slot: Int) {
            bytes -= sizes[slot]
            events[slot] = nil
            seqs[slot] = 0
            audiences[slot] = nil
            sizes[slot] = 0
        }
    }

    private let ring: Lock<Ring>
    let capacity: Int
    /// The bytes of events held at most (``CachedEvent/size``): past it the oldest go, as if the
    /// ring were shorter. Events of a few hundred bytes never reach it; large messages (a text of
    /// 64 KiB, the default limit) would otherwise hold a gigabyte in 16,384 slots.
    let budget: Int

    init(capacity: Int, budget: Int = 32 << 20) {
        self.capacity = capacity
        self.budget = budget
        ring = Lock(
            Ring(
                events: Array(repeating: nil, count: capacity), seqs: Array(repeating: 0, count: capacity),
                audiences: Array(repeating: nil, count: capacity), sizes: Array(repeating: 0, count: capacity)))
    }

    /// Keeps `entries`; an entry never replaces one of the same event that knows its audience.
    func insert(_ entries: [CachedEvent]) {
        guard !entries.isEmpty else { return }
        ring.withLock { ring in
            for entry in entries {
                let seq = entry.event.seq
                let slot = ring.slot(of: seq)
                if entry.audience == nil, ring.seqs[slot] == seq { continue }
                // An empty slot's size is 0; a taken one gives its bytes back.
                ring.bytes += entry.size - ring.sizes[slot]
                ring.events[slot] = entry.event
                ring.seqs[slot] = seq
                ring.audiences[slot] = entry.audience
                ring.sizes[slot] = entry.size
            }
            // Over the budget, the oldest go first, as if the ring were shorter.
            while ring.bytes > budget {
                if ring.seqs[ring.hand] != 0 { ring.clear(ring.hand) }
                ring.hand = (ring.hand + 1) % capacity
            }
        }
    }

    /// The bytes of the events held (tests).
    var bytes: Int { ring.withLock { $0.bytes } }

    /// Forgets the events up to `seq` (the retention pruned them): a page after one of them then
    /// comes from the database, which says what the reader missed.
    func forget(through seq: Int64) {
        ring.withLock { ring in
            for slot in ring.seqs.indices where ring.seqs[slot] != 0 && ring.seqs[slot] <= seq { ring.clear(slot) }
        }
    }

    func entry(_ seq: Int64) -> CachedEvent? {
        ring.withLock { ring in
            guard let slot = ring.slot(holding: seq), let event = ring.events[slot] else { return nil }
            return CachedEvent(event: event, audience: ring.audiences[slot], size: ring.sizes[slot])
        }
    }

    func event(_ seq: Int64) -> ChatEvent? {
        ring.withLock { ring in ring.slot(holding: seq).flatMap { ring.events[$0] } }
    }

    /// The page of `uid`'s events after `seq` through `latest` (`uid` in `groups`, leaving out those
    /// excluded for `session`), read under one lock, looking only at each slot's sequence and
    /// audience; only the page's events are copied. nil when an event of the range is not here or
    /// has no audience (another process's).
    func page(
        for uid: String, groups: Set<String>, session: String?, after seq: Int64, through latest: Int64, limit: Int
    ) -> EventPage? {
        ring.withLock { ring in
            var page = EventPage(events: [], scannedThrough: seq)
            var visible = 0
            var next = seq + 1
            while next <= latest {
                let slot = ring.slot(of: next)
                // A slot's sequence is set only with its entry (sequences start at 1).
                guard ring.seqs[slot] == next, let audience = ring.audiences[slot] else { return nil }
                if audience.group.map(groups.contains) ?? false || audience.users.contains(uid) {
                    visible += 1
                    if audience.excludedSession == nil || audience.excludedSession != session,
                        let event = ring.events[slot]
                    {
                        page.events.append(event)
                    }
                    if visible == limit {
                        page.scannedThrough = next
                        page.isFull = true
                        return page
                    }
                }
                next += 1
            }
            page.scannedThrough = latest
            return page
        }
    }
}

/// A committed event with its audience; the audience is known when this process committed it.
struct CachedEvent: Sendable {
    var event: ChatEvent
    var audience: EventAudience?
    /// The bytes of its JSON: about what the decoded event holds in memory (its text, its data).
    var size = 0
}
