import Foundation
import PerchChat
import PerchService

/// The store's typed reads and writes over one connection, inside a transaction the store opened.
final class SQLiteTransaction: ChatWriteTransaction {
    let db: SQLiteConnection
    let coder: JSONCoder
    /// The highest event sequence this transaction appended.
    var lastEventSequence: Int64 = 0
    /// The events this (write) transaction appended, with their sequences and audiences, for the
    /// event cache.
    var appended: [CachedEvent] = []
    /// The last event this (write) transaction pruned (0: none), for the cache to forget after the
    /// commit: a reader after a pruned event is then told what it missed, from memory too.
    var prunedEvents: Int64 = 0
    /// The outbox rows this (write) transaction appended, per message (its recipients, and a
    /// sequence at or above their rows), for the live streams' ``NotificationWatermarks``.
    var notified: [(recipients: [NotificationRecipient], through: Int64)] = []
    /// Whether this (write) transaction added, changed or removed a group member.
    var changedMembers = false
    /// Decoded recent events (read transactions).
    let cache: EventCache?
    /// The writer's remembered users, groups, members, bans and preferences (write transactions).
    let reference: ReferenceCache?

    init(_ db: SQLiteConnection, coder: JSONCoder, cache: EventCache?, reference: ReferenceCache? = nil) {
        self.db = db
        self.coder = coder
        self.cache = cache
        self.reference = reference
    }

    /// `key`'s value in one of the writer's remembered tables, else `read` (and remembered).
    func remembered<Key: Hashable, Value>(
        _ key: Key, in table: ReferenceWritableKeyPath<ReferenceCache, [Key: Value]>, _ read: () throws -> Value
    ) rethrows -> Value {
        if let known = reference?[keyPath: table][key] { return known }
        let value = try read()
        reference?.remember(value, of: key, in: table)
        return value
    }

}
