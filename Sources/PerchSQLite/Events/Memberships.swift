import Foundation
import PerchLock

/// The groups of recent readers of events, valid for one generation: a commit that adds, changes
/// or removes a member starts a new one (and so does another process, whose commits the poll
/// finds: pages then come from the database until the cache holds every event again).
final class Memberships: Sendable {
    private let state = Lock((generation: 0, groups: [String: (generation: Int, groups: Set<String>)]()))

    var generation: Int { state.withLock { $0.generation } }

    func groups(of uid: String, generation: Int) -> Set<String>? {
        state.withLock { state in
            guard state.generation == generation, let known = state.groups[uid], known.generation == generation
            else { return nil }
            return known.groups
        }
    }

    /// Keeps `groups`, read in a transaction that began after `generation` was current.
    func remember(_ groups: Set<String>, of uid: String, generation: Int) {
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.groups.count >= 4_096 { state.groups.removeAll(keepingCapacity: true) }
            state.groups[uid] = (generation, groups)
        }
    }

    func invalidate() {
        state.withLock { state in
            state.generation += 1
            state.groups.removeAll(keepingCapacity: true)
        }
    }
}
