import Dispatch
import PerchChat
import PerchLock

extension ChatService {
    /// Registers a user.
    /// - Throws: `ERR_BAD_REQUEST` (malformed or reserved uid, empty name), `ERR_UID_ALREADY_EXISTS`.
    public func createUser(uid: String, name: String, role: String = User.defaultRole, metadata: JSONValue? = nil)
        async throws(ChatError) -> User
    {
        try User.validateNewUID(uid)
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty, name.utf8.count <= 100 else {
            throw .badRequest("name", "must be 1–100 characters")
        }
        let now = clock.now()
        return try await writing { tx in
            guard try tx.user(uid) == nil else { throw ChatError(.uidAlreadyExists, ["uid": .string(uid)]) }
            let user = User(uid: uid, name: name, role: role, metadata: metadata, createdAt: now, updatedAt: now)
            try tx.insertUser(user)
            return user
        }.remembered(in: recentUsers)
    }

    /// Creates the user or brings its name and role up to date (seeding, bot users). Idempotent.
    public func ensureUser(uid: String, name: String, role: String = User.defaultRole) async throws(ChatError) -> User {
        try User.validateNewUID(uid)
        let now = clock.now()
        return try await writing { tx in
            if var user = try tx.user(uid) {
                guard user.name != name || user.role != role else { return user }
                user.name = name
                user.role = role
                user.updatedAt = now
                try tx.updateUser(user)
                return user
            }
            let user = User(uid: uid, name: name, role: role, createdAt: now, updatedAt: now)
            try tx.insertUser(user)
            return user
        }.remembered(in: recentUsers)
    }

    /// Changes a user's name, role or metadata.
    /// - Throws: `ERR_UID_NOT_FOUND`, `ERR_BAD_REQUEST`.
    public func updateUser(uid: String, name: String? = nil, role: String? = nil, metadata: JSONValue? = nil)
        async throws(ChatError) -> User
    {
        if let name, name.trimmingCharacters(in: .whitespaces).isEmpty || name.utf8.count > 100 {
            throw .badRequest("name", "must be 1–100 characters")
        }
        let now = clock.now()
        return try await writing { tx in
            guard var user = try tx.user(uid) else { throw ChatError.uidNotFound(uid) }
            if let name { user.name = name }
            if let role { user.role = role }
            if let metadata { user.metadata = metadata }
            user.updatedAt = now
            try tx.updateUser(user)
            return user
        }.remembered(in: recentUsers)
    }

    /// One user. A user read in the last second is answered from memory (changes made through this
    /// service are seen at once; another process's, within that second).
    /// - Throws: `ERR_UID_NOT_FOUND`.
    public func user(_ uid: String) async throws(ChatError) -> User {
        if let user = recentUsers[uid] { return user }
        return try await reading { tx in try Self.requireUser(tx, uid) }.remembered(in: recentUsers)
    }

    /// Users in uid order, `limit` (1–100) after `after`.
    public func users(limit: Int = 100, after: String? = nil) async throws(ChatError) -> [User] {
        guard (1...100).contains(limit) else { throw .badRequest("limit", "must be 1–100") }
        return try await reading { tx in try tx.users(limit: limit, after: after) }
    }
}

extension ChatService {
    /// Records an auth token for `uid` by its hash (the token itself is never stored).
    /// - Throws: `ERR_UID_NOT_FOUND`.
    public func storeToken(hash: String, for uid: String) async throws(ChatError) {
        let now = clock.now()
        try await writing { tx in
            _ = try Self.requireUser(tx, uid)
            try tx.insertToken(hash: hash, uid: uid, at: now)
        }
    }

    /// The user a token hash belongs to, or nil.
    public func tokenOwner(hash: String) async throws(ChatError) -> String? {
        try await reading { tx in try tx.tokenOwner(hash: hash) }
    }
}

/// Users read in the last second, by uid. Users are never deleted, so a remembered user exists; at
/// worst its name or role is a second old when another process changed it.
final class RecentUsers: Sendable {
    private let entries = Lock<[String: (user: User, at: UInt64)]>([:])
    static let lifetime: UInt64 = 1_000_000_000

    subscript(uid: String) -> User? { user(uid, at: DispatchTime.now().uptimeNanoseconds) }

    /// The user remembered less than a second before `now`. `now` is read before the lock, so
    /// another thread may have remembered the user since, at a later time: that entry is fresh too.
    /// (`now - entry.at` overflowed there and stopped the process: a crash under concurrent
    /// requests for one user.)
    func user(_ uid: String, at now: UInt64) -> User? {
        entries.withLock { entries in
            guard let entry = entries[uid], now < entry.at + Self.lifetime else { return nil }
            return entry.user
        }
    }

    func remember(_ user: User, at now: UInt64 = DispatchTime.now().uptimeNanoseconds) {
        entries.withLock { entries in
            if entries.count >= 4_096 { entries.removeAll(keepingCapacity: true) }
            entries[user.uid] = (user, now)
        }
    }
}

extension User {
    fileprivate func remembered(in users: RecentUsers) -> User {
        users.remember(self)
        return self
    }
}
