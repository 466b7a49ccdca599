import PerchChat

/// Each fact, applied as the embedded operation applies its effects.
extension Mirror {
    func user(_ uid: String, _ name: String) throws {
        let display = name.isEmpty ? uid : String(name.prefix(100))
        if var user = try tx.user(uid) {
            guard user.name != display else { return }
            user.name = display
            user.updatedAt = now
            try tx.updateUser(user)
        } else {
            try tx.insertUser(User(uid: uid, name: display, createdAt: now, updatedAt: now))
        }
    }

    func group(_ guid: String, _ name: String, _ type: GroupType, _ owner: String) throws {
        let title = name.isEmpty ? guid : String(name.prefix(100))
        if var group = try tx.group(guid) {
            guard group.name != title || group.type != type else { return }
            group.name = title
            group.type = type
            group.updatedAt = now
            try tx.updateGroup(group)
            return
        }
        if try tx.user(owner) == nil { try user(owner, owner) }
        try tx.insertGroup(
            Group(guid: guid, name: title, type: type, owner: owner, membersCount: 0, createdAt: now, updatedAt: now))
    }

    func membership(_ guid: String, _ uid: String, _ state: MembershipState, _ by: String) throws {
        guard let group = try tx.group(guid) else { return }
        if try tx.user(uid) == nil { try user(uid, uid) }
        let existing = try tx.member(guid: guid, uid: uid)
        func announce(_ name: EventName, scope: GroupMemberScope? = nil, old: GroupMemberScope? = nil) throws {
            guard announcing else { return }
            let alsoTo: String? = name == .groupMemberJoined || name == .memberAddedToGroup ? nil : uid
            try ChatService.memberEvent(
                tx, name, group: group, uid: uid, actor: by, scope: scope, oldScope: old, at: now, alsoTo: alsoTo,
                excludedSession: ChatService.relaySession(of: by))
        }
        switch state {
        case .member(let scope):
            if let existing {
                guard existing.scope != scope else { return }
                try tx.upsertMember(GroupMember(guid: guid, uid: uid, scope: scope, joinedAt: existing.joinedAt))
                try announce(.groupMemberScopeChanged, scope: scope, old: existing.scope)
            } else {
                if try tx.isBanned(guid: guid, uid: uid) {
                    try tx.setBanned(guid: guid, uid: uid, banned: false, at: now)
                }
                try tx.upsertMember(GroupMember(guid: guid, uid: uid, scope: scope, joinedAt: now))
                try announce(by == uid ? .groupMemberJoined : .memberAddedToGroup, scope: scope)
            }
        case .left, .kicked:
            guard existing != nil else { return }
            try tx.removeMember(guid: guid, uid: uid)
            try announce(state == .left || by == uid ? .groupMemberLeft : .groupMemberKicked)
        case .banned:
            guard try !tx.isBanned(guid: guid, uid: uid) else { return }
            if existing != nil { try tx.removeMember(guid: guid, uid: uid) }
            try tx.setBanned(guid: guid, uid: uid, banned: true, at: now)
            try announce(.groupMemberBanned)
        case .unbanned:
            guard try tx.isBanned(guid: guid, uid: uid) else { return }
            try tx.setBanned(guid: guid, uid: uid, banned: false, at: now)
            try announce(.groupMemberUnbanned)
        }
    }

    /// A new message: placed in its thread and under its quote when the store knows them, with
    /// the mentions of people who can read it; then, unless it is history, subscribed, routed and
    /// announced as a sent message is.
    mutating func insert(_ mirrored: MirroredMessage) throws {
        guard try Self.localId(tx, namespace, external: mirrored.id) == nil else { return }
        if try tx.user(mirrored.sender) == nil { try user(mirrored.sender, mirrored.sender) }
        if case .user(let other) = mirrored.receiver, try tx.user(other) == nil { try user(other, other) }
        if case .group(let guid) = mirrored.receiver, try tx.group(guid) == nil { return }
        let conversationId = mirrored.receiver.conversationId(sender: mirrored.sender)
        // A thread's replies hang from its root (a server may name a reply as the thread: its root).
        var parent = try message(external: mirrored.threadRoot)
        if let reply = parent, reply.isReply { parent = try tx.message(reply.parentMessageId) }
        if let root = parent, root.conversationId != conversationId { parent = nil }
        var quoted = try message(external: mirrored.quoted)
        if let original = quoted, original.conversationId != conversationId { quoted = nil }
        var mentioned: [String] = []
        for uid in mirrored.mentions where !mentioned.contains(uid) {
            guard try tx.user(uid) != nil,
                try ChatService.participation(tx, uid: uid, in: mirrored.receiver, sender: mirrored.sender).canRead
            else { continue }
            mentioned.append(uid)
        }
        var message = Message(
            conversationId: conversationId, sender: mirrored.sender, receiverType: mirrored.receiver.type,
            receiverUid: mirrored.receiver.id, type: mirrored.type, category: .message, text: mirrored.text,
            attachments: mirrored.attachments, mentionedUids: mentioned, parentMessageId: parent?.id ?? 0,
            quotedMessageId: quoted?.id ?? 0, sentAt: mirrored.sentAt, updatedAt: now)
        message.id = try tx.insertMessage(message)
        try map(mirrored.id, to: message.id)
        created[mirrored.id] = message.id
        var subscribers: Set<String> = []
        if let parent {
            try tx.adjustReplyCount(of: parent.id, by: 1, updatedAt: now)
            if !mirrored.history {
                subscribers = try ChatService.subscribeOnReply(tx, parent: parent, reply: message, at: now)
            }
        }
        guard !mirrored.history, announcing else { return }
        try ChatService.route(tx, message, subscribers: subscribers, defaults: defaults, at: now)
        let live = try ChatService.decorateLive(tx, message, reactions: false)
        let event = ChatEvent(
            name: EventName.received(message), conversationId: conversationId, createdAt: now, message: live)
        _ = try tx.appendEvent(event, audience: audience(ChatService.audience(of: message), actor: message.sender))
    }

    func edit(_ external: String, _ text: String, _ mentions: [String], _ by: String) throws {
        guard var message = try message(external: external), !message.isDeleted, message.text != text else { return }
        message.text = text
        message.mentionedUids = try mentions.filter { uid in
            try tx.user(uid) != nil
                && ChatService.participation(tx, uid: uid, in: message.receiver, sender: message.sender).canRead
        }
        message.editedAt = now
        message.editedBy = by
        message.updatedAt = now
        try tx.updateMessage(message)
        guard announcing else { return }
        let event = ChatEvent(
            name: .messageEdited, conversationId: message.conversationId, createdAt: now,
            message: try ChatService.decorateLive(tx, message), actor: by)
        _ = try tx.appendEvent(event, audience: audience(ChatService.audience(of: message), actor: by))
    }

    func delete(_ external: String, _ by: String) throws {
        guard var message = try message(external: external), !message.isDeleted else { return }
        ChatService.clearForDelete(&message, by: by, at: now)
        try tx.updateMessage(message)
        if message.isReply { try tx.adjustReplyCount(of: message.parentMessageId, by: -1, updatedAt: now) }
        try ChatService.afterDelete(tx, message, at: now)
        guard announcing else { return }
        let event = ChatEvent(
            name: .messageDeleted, conversationId: message.conversationId, createdAt: now,
            message: try ChatService.decorateLive(tx, message), actor: by)
        _ = try tx.appendEvent(event, audience: audience(ChatService.audience(of: message), actor: by))
    }

    func react(_ id: String, _ external: String, _ reaction: String, _ by: String) throws {
        guard let message = try message(external: external), !message.isDeleted,
            (try? ReactionRules.checkText(reaction)) != nil
        else { return }
        try tx.setPluginValue(
            bot: namespace, key: "e:\(id)",
            value: "r:" + [String(message.id), by, reaction].joined(separator: String(Self.separator)))
        let counts = try tx.reactionCounts(messageIds: [message.id], viewer: by)[message.id] ?? []
        guard !counts.contains(where: { $0.reaction == reaction && $0.reactedByMe }) else { return }
        if try tx.user(by) == nil { try user(by, by) }
        var added = Reaction(messageId: message.id, reaction: reaction, uid: by, reactedAt: now)
        added.id = try tx.setReaction(added, added: true) ?? 0
        guard announcing else { return }
        try ChatService.announce(
            tx, .messageReactionAdded, message, reaction: added, at: now,
            excludedSession: ChatService.relaySession(of: by))
    }

    func unreact(_ id: String, _ by: String) throws {
        guard let value = try tx.pluginValue(bot: namespace, key: "e:\(id)"), value.hasPrefix("r:") else { return }
        let parts = value.dropFirst(2).split(separator: Self.separator, omittingEmptySubsequences: false)
        guard parts.count == 3, let messageId = Int64(parts[0]), let message = try tx.message(messageId) else { return }
        try tx.setPluginValue(bot: namespace, key: "e:\(id)", value: nil)
        var removed = Reaction(messageId: messageId, reaction: String(parts[2]), uid: String(parts[1]), reactedAt: now)
        guard let row = try tx.setReaction(removed, added: false) else { return }
        removed.id = row
        guard announcing else { return }
        try ChatService.announce(
            tx, .messageReactionRemoved, message, reaction: removed, at: now,
            excludedSession: ChatService.relaySession(of: by))
    }

    /// Between the parts of a mirrored reaction's record (message, reactor, reaction): a character
    /// neither a Matrix id nor a reaction holds.
    static let separator: Character = "\u{1F}"

    func pins(_ guid: String, _ pinned: [String], _ by: String) throws {
        guard let group = try tx.group(guid) else { return }
        var wanted: Set<Int64> = []
        for external in pinned {
            if let message = try message(external: external), !message.isDeleted,
                message.conversationId == group.conversationId
            {
                wanted.insert(message.id)
            }
        }
        var current = try tx.pinnedMessages(
            conversationId: group.conversationId, matching: MessageFilter(), limit: 100_000, after: nil)
        for var old in current where !wanted.contains(old.id) {
            old.pinnedAt = 0
            old.pinnedBy = ""
            try tx.updateMessage(old)
            if announcing {
                try ChatService.announce(
                    tx, .messageUnpinned, old, by: by, at: now, excludedSession: ChatService.relaySession(of: by))
            }
        }
        current.removeAll { !wanted.contains($0.id) }
        let already = Set(current.map(\.id))
        for id in wanted.subtracting(already).sorted() {
            guard var message = try tx.message(id) else { continue }
            message.pinnedAt = now
            message.pinnedBy = by
            try tx.updateMessage(message)
            if announcing {
                try ChatService.announce(
                    tx, .messagePinned, message, by: by, at: now, excludedSession: ChatService.relaySession(of: by))
            }
        }
    }
}
