import PerchChat
import PerchService
import PerchTestSupport
import PerchTesting
import Testing

@testable import PerchSQLite

/// The decoded-event ring that pages are read from: a page looks at each slot's sequence and
/// audience and copies only its own events; it is nil whenever an event of the range is missing
/// (overwritten by a newer one) or has no audience (another process's), so the caller reads the
/// database instead.
@Suite struct EventCacheTests {
    static func entry(_ seq: Int64, group: String? = nil, users: [String] = [], excluded: String? = nil)
        -> CachedEvent
    {
        CachedEvent(
            event: ChatEvent(seq: seq, name: .textMessageReceived, conversationId: "c\(seq)", createdAt: seq),
            audience: EventAudience(group: group, users: users, excludedSession: excluded))
    }

    @Test func aPageIsTheUsersEventsOfTheRangeAndNilWhenTheRangeIsNotAllHere() {
        let cache = EventCache(capacity: 8)
        cache.insert((1...10).map { Self.entry($0, group: $0 % 2 == 0 ? "g" : "h", users: $0 == 7 ? ["erin"] : []) })
        // 1 and 2 were overwritten by 9 and 10: a range reaching back to them is not all here.
        #expect(cache.page(for: "erin", groups: ["g"], session: nil, after: 0, through: 10, limit: 100) == nil)
        #expect(cache.page(for: "erin", groups: ["g"], session: nil, after: 1, through: 10, limit: 100) == nil)
        let page = cache.page(for: "erin", groups: ["g"], session: nil, after: 2, through: 10, limit: 100)
        #expect(page?.events.map(\.seq) == [4, 6, 7, 8, 10])
        #expect(page?.scannedThrough == 10)
        #expect(page?.isFull == false)
        // A limit stops the page at its last event.
        let short = cache.page(for: "erin", groups: ["g"], session: nil, after: 2, through: 10, limit: 2)
        #expect(short?.events.map(\.seq) == [4, 6])
        #expect(short?.scannedThrough == 6)
        #expect(short?.isFull == true)
        #expect(cache.entry(2) == nil)
        #expect(cache.entry(10)?.event.conversationId == "c10")
    }

    /// Large events (long texts) are held up to a budget of bytes, oldest out first, so the ring's
    /// 16,384 slots cannot hold a gigabyte of 64 KiB messages; a page reaching back to one that went
    /// is not all here, and the database answers it.
    @Test func largeEventsAreHeldWithinTheBudgetOldestOutFirst() {
        func sized(_ seq: Int64, _ size: Int) -> CachedEvent {
            var entry = Self.entry(seq, group: "g")
            entry.size = size
            return entry
        }
        let cache = EventCache(capacity: 16, budget: 1_000)
        cache.insert((1...10).map { sized($0, 300) })
        #expect((1...7).allSatisfy { cache.entry($0) == nil })
        #expect((8...10).allSatisfy { cache.entry($0) != nil })
        #expect(cache.bytes == 900)
        #expect(cache.page(for: "bob", groups: ["g"], session: nil, after: 5, through: 10, limit: 100) == nil)
        #expect(
            cache.page(for: "bob", groups: ["g"], session: nil, after: 7, through: 10, limit: 100)?.events.map(\.seq)
                == [8, 9, 10])
        // Small events after them fit beside them; one more large one pushes the oldest out.
        cache.insert((11...14).map { sized($0, 10) })
        #expect(cache.entry(8) != nil && cache.bytes == 940)
        cache.insert([sized(15, 300)])
        #expect(cache.entry(8) == nil && cache.entry(9) != nil && cache.bytes == 940)
        // An old event read back from the database (no audience) counts too: the sweep goes on
        // round the slots (9 and 10 go; 3 would when the sweep comes round to it).
        cache.insert([CachedEvent(event: Self.entry(3).event, audience: nil, size: 500)])
        #expect(cache.entry(9) == nil && cache.entry(10) == nil && cache.entry(3) != nil)
        #expect(cache.bytes == 500 + 40 + 300)
        // Forgetting (the retention) gives the bytes back; so does a slot a newer event takes.
        cache.forget(through: 12)
        #expect(cache.bytes == 10 + 10 + 300)
        cache.insert([sized(29, 5)])  // slot 13
        #expect(cache.entry(13) == nil && cache.entry(29) != nil)
        #expect(cache.bytes == 10 + 300 + 5)
    }

    @Test func anEventWithoutAnAudienceOrExcludedForTheSessionIsHandledAsBefore() {
        let cache = EventCache(capacity: 16)
        cache.insert([
            Self.entry(1, group: "g"), Self.entry(2, group: "g", excluded: "phone"), Self.entry(3, group: "g"),
        ])
        // Excluded for its session, still counted as scanned.
        #expect(
            cache.page(for: "bob", groups: ["g"], session: "phone", after: 0, through: 3, limit: 10)?.events.map(\.seq)
                == [1, 3])
        #expect(
            cache.page(for: "bob", groups: ["g"], session: "laptop", after: 0, through: 3, limit: 10)?.events.map(
                \.seq) == [1, 2, 3])
        // An entry read back without its audience never replaces one that has it.
        cache.insert([CachedEvent(event: Self.entry(3).event, audience: nil)])
        #expect(cache.page(for: "bob", groups: ["g"], session: nil, after: 0, through: 3, limit: 10)?.events.count == 3)
        // Another process's event (no audience known): no page from memory.
        cache.insert([CachedEvent(event: Self.entry(4).event, audience: nil)])
        #expect(cache.page(for: "bob", groups: ["g"], session: nil, after: 0, through: 4, limit: 10) == nil)
        #expect(cache.entry(4) != nil)
    }

    /// Random rings against a plain list of the same events.
    @Test func randomRangesAgreeWithTheDefinition() {
        var random = SplitMix(seed: 7)
        for _ in 0..<200 {
            let capacity = Int.random(in: 1...12, using: &random)
            let cache = EventCache(capacity: capacity)
            let count = Int64.random(in: 0...30, using: &random)
            let entries = (1...max(1, count)).map { seq in
                Self.entry(
                    seq, group: Bool.random(using: &random) ? ["g", "h"].randomElement(using: &random) : nil,
                    users: Bool.random(using: &random) ? ["erin"] : [],
                    excluded: Int.random(in: 0..<4, using: &random) == 0 ? "phone" : nil)
            }
            cache.insert(entries)
            let latest = Int64(entries.count)
            let after = Int64.random(in: 0...latest, using: &random)
            let limit = Int.random(in: 1...5, using: &random)
            let page = cache.page(
                for: "erin", groups: ["g"], session: "phone", after: after, through: latest, limit: limit)
            let oldestHeld = max(1, latest - Int64(capacity) + 1)
            guard after + 1 >= oldestHeld || after == latest else {
                #expect(page == nil)
                continue
            }
            var expected: [Int64] = []
            var visible = 0
            var scanned = latest
            for entry in entries where entry.event.seq > after {
                let audience = entry.audience!
                guard audience.group == "g" || audience.users.contains("erin") else { continue }
                visible += 1
                if audience.excludedSession != "phone" { expected.append(entry.event.seq) }
                if visible == limit {
                    scanned = entry.event.seq
                    break
                }
            }
            #expect(page?.events.map(\.seq) == expected)
            #expect(page?.scannedThrough == scanned)
        }
    }
}
