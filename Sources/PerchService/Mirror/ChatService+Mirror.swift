import PerchChat

/// The embedded store as the mirror of another chat server: its facts recorded with the embedded
/// operations' effects, the map between its ids and the local ones, and a connector's own values.
extension ChatService {
    /// The session a connector's relay of `uid`'s actions reads events as: what the mirror records
    /// of `uid`'s doing is left out of it, so the relay never sends back what came from the server.
    public static func relaySession(of uid: String) -> String { "relay:\(uid)" }

    /// Records `facts` in one transaction, in order: all of them or, when one cannot be stored,
    /// none. `announcing` false records state without events (a connector bringing its mirror up
    /// to date at start); messages say for themselves (``MirroredMessage/history``). Returns the
    /// local messages the facts created, by their server ids.
    /// - Throws: a store failure only; a fact about something unknown here is skipped.
    @discardableResult
    public func mirror(_ facts: [MirroredFact], connector: String, announcing: Bool = true) async throws(ChatError)
        -> [String: Int64]
    {
        let now = clock.now()
        let defaults = settings.notificationDefaults
        let namespace = Self.namespace(connector)
        return try await writing { tx in
            var mirror = Mirror(tx: tx, namespace: namespace, now: now, defaults: defaults, announcing: announcing)
            for fact in facts { try mirror.apply(fact) }
            return mirror.created
        }
    }

    /// The local message a server's message stands for, as `viewer` sees it (nil: not mirrored).
    public func localMessage(external id: String, connector: String) async throws(ChatError) -> Message? {
        let namespace = Self.namespace(connector)
        return try await reading { tx in
            guard let local = try Mirror.localId(tx, namespace, external: id) else { return nil }
            return try tx.message(local)
        }
    }

    /// A local message as the store has it (no viewer's fields), for a connector.
    public func storedMessage(_ id: Int64) async throws(ChatError) -> Message? {
        try await reading { tx in try tx.message(id) }
    }

    /// Who is subscribed to the thread of `root` now (a connector delivers its replies to them).
    public func threadSubscribers(of root: Int64) async throws(ChatError) -> [String] {
        try await reading { tx in try tx.threadSubscribers(of: root) }
    }

    /// The server's id of a local message (mirrored, or sent there by a relay), if it has one.
    public func externalId(ofMessage id: Int64, connector: String) async throws(ChatError) -> String? {
        let namespace = Self.namespace(connector)
        return try await reading { tx in try tx.pluginValue(bot: namespace, key: "m:\(id)") }
    }

    /// Records that the local message `id` is the server's `external` (a relay sent it there).
    public func recordExternalId(_ external: String, ofMessage id: Int64, connector: String) async throws(ChatError) {
        let namespace = Self.namespace(connector)
        try await writing { tx in
            try tx.setPluginValue(bot: namespace, key: "m:\(id)", value: external)
            try tx.setPluginValue(bot: namespace, key: "e:\(external)", value: "m:\(id)")
        }
    }

    /// A value a connector keeps (``MirroredFact/connectorValue(key:value:)``).
    public func connectorValue(_ key: String, connector: String) async throws(ChatError) -> String? {
        let namespace = Self.namespace(connector)
        return try await reading { tx in try tx.pluginValue(bot: namespace, key: "v:\(key)") }
    }

    /// Sets (nil: removes) a value a connector keeps, on its own.
    public func setConnectorValue(_ value: String?, for key: String, connector: String) async throws(ChatError) {
        let namespace = Self.namespace(connector)
        try await writing { tx in try tx.setPluginValue(bot: namespace, key: "v:\(key)", value: value) }
    }

    /// Where a connector's map and values live among the plugin values: a name no bot can have.
    static func namespace(_ connector: String) -> String { "~\(connector)" }
}

/// One ``ChatService/mirror(_:connector:announcing:)`` transaction.
struct Mirror {
    let tx: any ChatWriteTransaction
    let namespace: String
    let now: Int64
    let defaults: NotificationPreferences
    let announcing: Bool
    var created: [String: Int64] = [:]

    init(
        tx: any ChatWriteTransaction, namespace: String, now: Int64, defaults: NotificationPreferences,
        announcing: Bool
    ) {
        self.tx = tx
        self.namespace = namespace
        self.now = now
        self.defaults = defaults
        self.announcing = announcing
    }

    static func localId(_ tx: any ChatReadTransaction, _ namespace: String, external: String) throws -> Int64? {
        guard let value = try tx.pluginValue(bot: namespace, key: "e:\(external)"), value.hasPrefix("m:") else {
            return nil
        }
        return Int64(value.dropFirst(2))
    }

    func message(external: String?) throws -> Message? {
        guard let external, let id = try Self.localId(tx, namespace, external: external) else { return nil }
        return try tx.message(id)
    }

    func map(_ external: String, to id: Int64) throws {
        try tx.setPluginValue(bot: namespace, key: "e:\(external)", value: "m:\(id)")
        try tx.setPluginValue(bot: namespace, key: "m:\(id)", value: external)
    }

    /// The audience of an event of `actor`'s doing: their relay does not read it.
    func audience(_ audience: EventAudience, actor: String) -> EventAudience {
        var audience = audience
        audience.excludedSession = ChatService.relaySession(of: actor)
        return audience
    }

    mutating func apply(_ fact: MirroredFact) throws {
        switch fact {
        case .user(let uid, let name): try user(uid, name)
        case .group(let guid, let name, let type, let owner): try group(guid, name, type, owner)
        case .membership(let guid, let uid, let state, let by): try membership(guid, uid, state, by)
        case .memberList(let guid, let members):
            for uid in try tx.memberUids(guid: guid) where members[uid] == nil {
                try membership(guid, uid, .left, uid)
            }
            for uid in members.keys.sorted() { try membership(guid, uid, .member(members[uid]!), uid) }
        case .message(let message): try insert(message)
        case .edit(let external, let text, let mentions, let by): try edit(external, text, mentions, by)
        case .delete(let external, let by): try delete(external, by)
        case .reaction(let id, let external, let reaction, let by): try react(id, external, reaction, by)
        case .reactionRemoved(let id, let by): try unreact(id, by)
        case .pins(let guid, let pinned, let by): try pins(guid, pinned, by)
        case .sameAs(let external, let local):
            if try tx.message(local) != nil { try map(external, to: local) }
        case .connectorValue(let key, let value): try tx.setPluginValue(bot: namespace, key: "v:\(key)", value: value)
        }
    }
}
