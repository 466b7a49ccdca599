import Foundation
import PerchChat
import PerchLock

/// Wakes consumers when events are committed.
final class EventNotifier: Sendable {
    /// A consumer waiting for an event after `after`; `uid` is whose events it reads (nil: any), and
    /// `groups` the groups that user was in, as remembered in membership generation `generation`
    /// when the wait began (nil: not known). It reads them as `session` (events left out for that
    /// session are not its), and, when `ignoresOwnMessages` (a bot), never events whose message its
    /// user sent. `endsAtTick`: the poll tick wakes it too (always, for a wait for anyone).
    final class Waiter {
        let after: Int64
        let uid: String?
        let groups: Set<String>?
        let generation: Int
        let session: String?
        let ignoresOwnMessages: Bool
        let endsAtTick: Bool
        let continuation: CheckedContinuation<Void, Never>

        init(
            after: Int64, uid: String?, groups: Set<String>?, generation: Int, session: String? = nil,
            ignoresOwnMessages: Bool = false, endsAtTick: Bool = false, continuation: CheckedContinuation<Void, Never>
        ) {
            self.after = after
            self.uid = uid
            self.groups = groups
            self.generation = generation
            self.session = session
            self.ignoresOwnMessages = ignoresOwnMessages
            self.endsAtTick = endsAtTick || uid == nil
            self.continuation = continuation
        }

        /// Whether the waiter is found through the index (its user's events, its groups'), rather
        /// than looked at by every commit.
        var isIndexed: Bool { uid != nil && groups != nil }

        /// Whether some events of its user's or groups' are not the waiter's (its session's, its
        /// own messages): a commit then looks at the events themselves.
        var isFiltered: Bool { session != nil || ignoresOwnMessages }

        /// Whether the waiter reads `entry`, whose audience is `audience` (an unindexed waiter reads
        /// everything).
        func reads(_ entry: CachedEvent, audience: EventAudience) -> Bool {
            guard let uid, let groups else { return true }
            guard audience.users.contains(uid) || audience.group.map(groups.contains) == true else { return false }
            if let session, audience.excludedSession == session { return false }
            if ignoresOwnMessages, entry.event.author == uid { return false }
            return true
        }
    }

    /// The waiters under one key of the index: one held inline (the usual case: a user's one bot
    /// or stream), more in a set. A set for every key was made at every wait and freed at its
    /// wake: several allocations a round trip.
    enum WaiterIDs: Sequence {
        case one(Int)
        case many(Set<Int>)

        var count: Int {
            switch self {
            case .one: return 1
            case .many(let ids): return ids.count
            }
        }

        mutating func insert(_ id: Int) {
            switch self {
            case .one(let existing):
                if existing != id { self = .many([existing, id]) }
            case .many(var ids):
                self = .one(id)  // lets go of the set, so the insert does not copy it
                ids.insert(id)
                self = .many(ids)
            }
        }

        /// Removes `id`; false when no waiter is left under the key.
        mutating func remove(_ id: Int) -> Bool {
            switch self {
            case .one(let existing):
                return existing != id
            case .many(var ids):
                self = .one(id)
                ids.remove(id)
                if ids.count == 1, let last = ids.first {
                    self = .one(last)
                } else {
                    self = .many(ids)
                }
                return !ids.isEmpty
            }
        }

        struct Iterator: IteratorProtocol {
            var one: Int?
            var many: Set<Int>.Iterator?

            mutating func next() -> Int? {
                if let id = one {
                    one = nil
                    return id
                }
                return many?.next()
            }
        }

        func makeIterator() -> Iterator {
            switch self {
            case .one(let id): return Iterator(one: id, many: nil)
            case .many(let ids): return Iterator(one: nil, many: ids.makeIterator())
            }
        }
    }

    /// The waiters, and an index of them, so a commit looks only at those its events may concern.
    private struct State {
        var latest: Int64 = 0
        var closed = false
        var next = 0
        var waiters: [Int: Waiter] = [:]
        /// Indexed waiters by user and by group, and how many there are of each membership
        /// generation their groups are from (those of an older one are found by looking at every
        /// waiter, once after a membership change: ids by generation put every waiter of the host
        /// under one key, a set made and copied at every wait).
        var byUser: [String: WaiterIDs] = [:]
        var byGroup: [String: WaiterIDs] = [:]
        var generations: [Int: Int] = [:]
        /// Waits for anyone's events, and waiters whose groups are not known: every commit wakes them.
        var unindexed: Set<Int> = []
        /// Bounds of the waiters' `after`, kept loose: a removal does not tighten them; a look at
        /// every waiter does.
        var lowestAfter = Int64.max
        var highestAfter = Int64.min
        var passedOver = 0
        var sweeps = 0
        /// The newest sequence of a commit of this process's writer, once it is about to commit.
        var committing: Int64 = 0

        mutating func insert(_ waiter: Waiter, as id: Int) {
            waiters[id] = waiter
            lowestAfter = min(lowestAfter, waiter.after)
            highestAfter = max(highestAfter, waiter.after)
            guard waiter.isIndexed, let uid = waiter.uid, let groups = waiter.groups else {
                unindexed.insert(id)
                return
            }
            Self.add(id, under: uid, to: &byUser)
            for group in groups { Self.add(id, under: group, to: &byGroup) }
            generations[waiter.generation, default: 0] += 1
        }

        mutating func remove(_ id: Int) -> Waiter? {
            guard let waiter = waiters.removeValue(forKey: id) else { return nil }
            guard waiter.isIndexed, let uid = waiter.uid, let groups = waiter.groups else {
                unindexed.remove(id)
                return waiter
            }
            Self.remove(id, under: uid, from: &byUser)
            for group in groups { Self.remove(id, under: group, from: &byGroup) }
            if let count = generations[waiter.generation], count > 1 {
                generations[waiter.generation] = count - 1
            } else {
                generations.removeValue(forKey: waiter.generation)
            }
            return waiter
        }

        static func add<Key: Hashable>(_ id: Int, under key: Key, to index: inout [Key: WaiterIDs]) {
            // Not `index[key]?.insert(id)`: that copies the set out of the dictionary and back,
            // allocating at every wait (scripts/bench-allocations.py counts them).
            if index[key] == nil {
                index[key] = .one(id)
            } else {
                index[key]!.insert(id)
            }
        }

        static func remove<Key: Hashable>(_ id: Int, under key: Key, from index: inout [Key: WaiterIDs]) {
            guard var ids = index.removeValue(forKey: key) else { return }
            if ids.remove(id) { index[key] = ids }
        }

        /// Recomputes the bounds of `after` from every waiter.
        mutating func tightenBounds() {
            lowestAfter = waiters.values.lazy.map(\.after).min() ?? .max
            highestAfter = waiters.values.lazy.map(\.after).max() ?? .min
        }
    }

    private let state = Lock(State())

    var latest: Int64 { state.withLock { $0.latest } }

    /// How many times a commit left a waiter asleep because none of its events were the waiter's.
    var passedOver: Int { state.withLock { $0.passedOver } }

    /// How many times waiters were resumed by a rule other than a commit of this process (the poll
    /// tick, a commit of another process, close; tests).
    var sweeps: Int { state.withLock { $0.sweeps } }

    /// How many consumers are waiting.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// How many entries the index holds (tests: none once nobody waits).
    var indexed: Int {
        state.withLock { state in
            let named = [state.byUser, state.byGroup].reduce(0) { $0 + $1.values.reduce(0) { $0 + $1.count } }
            return state.unindexed.count + named + state.generations.values.reduce(0, +)
        }
    }

    /// Wakes every waiter behind `seq` (events whose audiences are not known here: another
    /// process's, or the newest at start).
    func advance(to seq: Int64) {
        resume(raisingLatestTo: seq) { waiter, latest in waiter.after < latest }
    }

    /// The newest sequence read from the database: when it is newer than this process knows, another
    /// process committed it (its audiences are not known here), so every waiter behind it is woken;
    /// otherwise nobody is. A sequence of this process's commit in flight (``willCommit(through:)``)
    /// is known: its waiters are woken by that commit, from its audiences, once it is published.
    /// (Taken for another process's, a commit read between SQLite's `COMMIT` and its publication woke
    /// every waiting consumer of the host, and made the remembered memberships look stale.)
    func found(newest seq: Int64) {
        guard state.withLock({ seq > max($0.latest, $0.committing) }) else { return }
        advance(to: seq)
    }

    /// This process's writer is about to commit events up to `seq` (their rows are visible to other
    /// connections from its `COMMIT` on, before the commit is published here).
    func willCommit(through seq: Int64) {
        state.withLock { $0.committing = max($0.committing, seq) }
    }

    /// The writer's commit failed: its sequences are not this process's (another may reuse them).
    func commitFailed() {
        state.withLock { $0.committing = $0.latest }
    }

    /// After this process committed `events` (in sequence order, each with its audience): wakes
    /// only the waiters some of those events are for, by the audience's users and the groups the
    /// waiter's user was in when it began waiting. Whoever cannot be ruled out is woken: a waiter
    /// for any user, one whose groups were not known, one whose groups are from an older membership
    /// `generation` (a commit that changed members starts a new one, before this), one already
    /// behind these events. A waiter left asleep reads past these events when something of its own
    /// comes, or once it is `maximumLag` events behind. With many consumers (a stream per connected
    /// person, a bot per room), a message wakes its conversation's, not all of them, and the commit
    /// looks only at those (through the index), not at every waiter.
    func advance(to seq: Int64, committed events: [CachedEvent], generation: Int) {
        guard let first = events.first?.event.seq else { return advance(to: seq) }
        var groups: Set<String> = []
        var users: Set<String> = []
        for entry in events {
            guard let audience = entry.audience else { return advance(to: seq) }
            if let group = audience.group { groups.insert(group) }
            users.formUnion(audience.users)
        }
        // A few events (a live conversation's commits) are looked at one by one for the waiters
        // that leave some of their user's events out; a large batch wakes them by user and group.
        let examined = events.count <= Self.examinedBatch
        /// Whether a waiter these events name (by user or group) is to be woken.
        func wakes(_ waiter: Waiter) -> Bool {
            guard examined, waiter.isFiltered else { return true }
            return events.contains { entry in entry.audience.map { waiter.reads(entry, audience: $0) } ?? true }
        }
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.latest = max(state.latest, seq)
            let latest = state.latest
            // The index answers when no waiter can be past the first of these events or too far
            // behind; otherwise every waiter is looked at (rare: a consumer ahead of this process's
            // newest event, or one asleep through `maximumLag` events), which tightens the bounds.
            guard state.highestAfter < first, latest - state.lowestAfter <= Self.maximumLag else {
                var passedOver = 0
                let ready = Self.take(from: &state) { waiter in
                    guard waiter.after < latest else { return false }
                    guard waiter.isIndexed, let uid = waiter.uid, let known = waiter.groups, waiter.after < first,
                        latest - waiter.after <= Self.maximumLag, waiter.generation == generation
                    else { return true }
                    if users.contains(uid) || groups.contains(where: known.contains), wakes(waiter) { return true }
                    passedOver += 1
                    return false
                }
                state.passedOver += passedOver
                state.tightenBounds()
                return ready
            }
            // Those who cannot be ruled out, then those the events name (by user and group), a
            // waiter already taken skipped: sets of ids gathered, filtered and joined were several
            // allocations a commit.
            var picked = Array(state.unindexed)
            if state.generations.keys.contains(where: { $0 != generation }) {
                picked += state.waiters.compactMap { id, waiter in
                    waiter.isIndexed && waiter.generation != generation ? id : nil
                }
            }
            let unconditional = picked.count
            for uid in users { if let ids = state.byUser[uid] { picked.append(contentsOf: ids) } }
            for group in groups { if let ids = state.byGroup[group] { picked.append(contentsOf: ids) } }
            let waiting = state.waiters.count
            var ready: [CheckedContinuation<Void, Never>] = []
            ready.reserveCapacity(picked.count)
            for (index, id) in picked.enumerated() {
                guard let waiter = state.waiters[id], index < unconditional || wakes(waiter) else { continue }
                _ = state.remove(id)
                ready.append(waiter.continuation)
            }
            state.passedOver += waiting - ready.count
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// The largest commit whose events are looked at one by one for the waiters that leave some of
    /// their user's events out.
    static let examinedBatch = 16

    /// Resumes the waiters for anyone's events and those that end at the poll tick.
    func tick() {
        resume { waiter, _ in waiter.endsAtTick }
    }

    /// How far behind the newest event a waiter may sleep: past this it is woken to move its cursor,
    /// so the events it slept through are still in the decoded-event cache (16,384) when it reads.
    static let maximumLag: Int64 = 4_096

    /// Resumes every waiter (they look again).
    func wakeAll() {
        resume { _, _ in true }
    }

    /// Raises the newest sequence to `seq` (when given), takes the waiters `wakes` picks (it sees
    /// each waiter and the newest sequence, under the lock) and resumes them outside the lock.
    private func resume(raisingLatestTo seq: Int64? = nil, where wakes: (Waiter, Int64) -> Bool) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.sweeps += 1
            if let seq { state.latest = max(state.latest, seq) }
            let latest = state.latest
            return Self.take(from: &state) { wakes($0, latest) }
        }
        for continuation in ready { continuation.resume() }
    }

    /// Removes the waiters `wakes` picks, looking at every one, and returns their continuations.
    private static func take(from state: inout State, where wakes: (Waiter) -> Bool)
        -> [CheckedContinuation<Void, Never>]
    {
        // Removed after the loop: removing while iterating would copy the whole table.
        let picked = state.waiters.compactMap { key, waiter in wakes(waiter) ? key : nil }
        return picked.compactMap { state.remove($0)?.continuation }
    }

    /// Resumes every waiter; later waits return at once.
    func close() {
        state.withLock { $0.closed = true }
        wakeAll()
    }

    /// Returns once an event after `seq` may be there for `uid` (nil: for anyone, and at every
    /// ``tick()`` too), at close, or when the task is cancelled. `groups`: the groups `uid` is in, as
    /// remembered in membership generation `generation` (nil when not known: every commit wakes it).
    /// `session` and `ignoringOwnMessages`: which of the user's events are not the waiter's;
    /// `endingAtTick`: the tick ends it too (``Waiter``).
    func wait(
        after seq: Int64, for uid: String? = nil, groups: Set<String>? = nil, generation: Int = 0,
        session: String? = nil, ignoringOwnMessages: Bool = false, endingAtTick: Bool = false
    ) async {
        let id = state.withLock { state -> Int in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.closed || state.latest > seq || Task.isCancelled { return true }
                    state.insert(
                        Waiter(
                            after: seq, uid: uid, groups: groups, generation: generation, session: session,
                            ignoresOwnMessages: ignoringOwnMessages, endsAtTick: endingAtTick,
                            continuation: continuation),
                        as: id)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.remove(id) }
            waiter?.continuation.resume()
        }
    }
}
