import Foundation
import PerchChat

/// The embedded chat service: CometChat's rules (from PerchChat) applied over a ``ChatStore``.
///
/// The host, the HTTP API and the tests all use this one API. Every call is one transaction:
/// a refusal is a ``ChatError`` and leaves nothing behind; any other failure is logged with an id
/// and surfaces as `ERR_INTERNAL {id}`.
public final class ChatService: Sendable {
    public let store: any ChatStore
    public let clock: any ChatClock
    public let settings: ChatSettings
    let logger: any ChatLogger
    /// Users read recently: every authenticated request and every bot action reads one.
    let recentUsers = RecentUsers()
    /// A full disk refuses every write: one log line a minute says so, not one a call.
    let storageFull = RepeatedWarnings(burst: 1)
    /// How long a caller refused for a full disk is asked to wait (`Retry-After`, seconds).
    public static let storageFullRetryAfter: Int64 = 30

    public init(
        store: any ChatStore, clock: any ChatClock = SystemClock(), settings: ChatSettings = ChatSettings(),
        logger: any ChatLogger = StandardErrorLogger()
    ) {
        self.store = store
        self.clock = clock
        self.settings = settings
        self.logger = logger
    }

    /// Runs `body` in a write transaction, with errors made wire-safe.
    func writing<T: Sendable>(_ body: @escaping @Sendable (any ChatWriteTransaction) throws -> T)
        async throws(ChatError)
        -> T
    {
        try await wireSafely { try await store.write(body) }
    }

    /// Runs `body` in a read transaction, with errors made wire-safe.
    func reading<T: Sendable>(_ body: @escaping @Sendable (any ChatReadTransaction) throws -> T) async throws(ChatError)
        -> T
    {
        try await wireSafely { try await store.read(body) }
    }

    /// Runs a store call, with errors made wire-safe.
    func wireSafely<T>(_ call: () async throws -> T) async throws(ChatError) -> T {
        do {
            return try await call()
        } catch {
            throw wireSafe(error)
        }
    }

    /// Any error as a wire-safe one: a `ChatError` as it is, anything else logged with an id.
    public func wireSafeError(_ error: any Error) -> ChatError { wireSafe(error) }

    func wireSafe(_ error: any Error) -> ChatError {
        if let chat = error as? ChatError { return chat }
        // Shutting down is not a failure: the caller is told to come back, nothing is logged.
        if error is StoreClosedError { return ChatError(.serviceUnavailable) }
        // A full disk is the operator's to fix, and nothing was written: the caller is told to
        // come back, and the log says it once a minute with how many calls it refused meanwhile.
        if let failure = error as? any StoreFailure, failure.isStorageFull {
            if let more = storageFull.suffix("full", at: Double(clock.now())) {
                logger.error("the store's disk is full: writes are refused until there is room: \(error)\(more)")
            }
            return ChatError(
                .serviceUnavailable, ["reason": "storage_full", "retryAfter": .int(Self.storageFullRetryAfter)])
        }
        let id = UUID().uuidString.prefix(8).lowercased()
        logger.error("internal error \(id): \(error)")
        return ChatError(.internalError, ["id": .string(String(id))])
    }
}

extension ChatService {
    /// The standing of `uid` in the conversation of `message` (or of a receiver).
    static func participation(_ tx: any ChatReadTransaction, uid: String, in receiver: Receiver, sender: String? = nil)
        throws -> Participation
    {
        if uid == User.system { return Participation(uid: uid, receiverType: receiver.type, standing: .system) }
        switch receiver {
        case .group(let guid):
            if let member = try tx.member(guid: guid, uid: uid) {
                return Participation(uid: uid, receiverType: .group, standing: .member(member.scope))
            }
            let banned = try tx.isBanned(guid: guid, uid: uid)
            return Participation(uid: uid, receiverType: .group, standing: banned ? .banned : .outsider)
        case .user(let other):
            let inside = uid == other || uid == sender
            return Participation(uid: uid, receiverType: .user, standing: inside ? .oneOnOneParticipant : .outsider)
        }
    }

    /// A message (nil when missing) and `uid`'s standing towards it (an outsider's when missing), for
    /// the rules that check both.
    static func lookup(_ tx: any ChatReadTransaction, _ id: Int64, by uid: String) throws -> (Message?, Participation) {
        guard let message = try tx.message(id) else {
            return (nil, Participation(uid: uid, receiverType: .user, standing: .outsider))
        }
        return (message, try participation(tx, uid: uid, towards: message))
    }

    /// The standing of `uid` towards an existing message.
    static func participation(_ tx: any ChatReadTransaction, uid: String, towards message: Message) throws
        -> Participation
    {
        try participation(tx, uid: uid, in: message.receiver, sender: message.sender)
    }

    /// The users who can see a conversation now: the group's members, or the two participants.
    static func audienceUids(_ tx: any ChatReadTransaction, of message: Message) throws -> [String] {
        switch message.receiver {
        case .group(let guid): return try tx.memberUids(guid: guid)
        case .user(let uid): return message.sender == uid ? [uid] : [message.sender, uid]
        }
    }

    static func audience(of message: Message) -> EventAudience {
        switch message.receiver {
        case .group(let guid): return EventAudience(group: guid)
        case .user(let uid): return EventAudience(users: [message.sender, uid])
        }
    }

    static func requireUser(_ tx: any ChatReadTransaction, _ uid: String) throws -> User {
        if uid == User.system { return User(uid: User.system, name: "System", role: "system") }
        guard let user = try tx.user(uid) else { throw ChatError.uidNotFound(uid) }
        return user
    }

    static func requireGroup(_ tx: any ChatReadTransaction, _ guid: String) throws -> Group {
        guard let group = try tx.group(guid) else { throw ChatError.guidNotFound(guid) }
        return group
    }
}
