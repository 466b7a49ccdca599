import PerchChat
import PerchService

/// Each action's Matrix call.
extension Relay {
    /// Sends a bot's message: in its room (or the bot's direct chat with the person), in its thread
    /// with the thread's fallback for clients without threads, quoting what it quotes, mentioning
    /// whom it mentions. Bots speak in `m.notice`, which Matrix's bots do not answer.
    func send(_ message: Message) async throws {
        let room = try await room(of: message)
        var content: [String: JSONValue] = [
            "msgtype": .string("m.notice"), "body": .string(Self.body(of: message)),
        ]
        var mentions = message.mentionedUids.map(matrixID)
        let root =
            message.parentMessageId == 0
            ? nil : try await service.externalId(ofMessage: message.parentMessageId, connector: Self.connector)
        var quoted: String?
        if message.quotedMessageId != 0 {
            quoted = try await service.externalId(ofMessage: message.quotedMessageId, connector: Self.connector)
            if let original = message.quotedMessage { mentions.append(matrixID(original.sender)) }
        }
        if let root {
            // In a thread, a quote is a real `m.in_reply_to`; without one, the root stands in it as
            // the fallback for clients without threads (`is_falling_back`).
            content["m.relates_to"] = .object([
                "rel_type": .string("m.thread"), "event_id": .string(root),
                "is_falling_back": .bool(quoted == nil),
                "m.in_reply_to": .object(["event_id": .string(quoted ?? root)]),
            ])
        } else if let quoted {
            content["m.relates_to"] = .object(["m.in_reply_to": .object(["event_id": .string(quoted)])])
        }
        var seen: Set<String> = []
        content["m.mentions"] = .object([
            "user_ids": .array(
                mentions.filter { $0 != account.matrixID && seen.insert($0).inserted }.map(JSONValue.string))
        ])
        let event = try await account.client.send(
            "m.room.message", .object(content), in: room, transaction: RelayTransaction.message(message.id))
        try await service.recordExternalId(event, ofMessage: message.id, connector: Self.connector)
        relayed.insert(event)
        metrics.increment("perch_matrix_relayed_total", ["bot": uid, "action": "send"])
    }

    /// A message's text as Matrix shows it: a file's address when it has no text.
    static func body(of message: Message) -> String {
        if let text = message.text, !text.isEmpty { return text }
        return message.attachments.map { "\($0.name): \($0.url)" }.joined(separator: "\n")
    }

    /// An edit of the bot's message (`m.replace`), with the `* ` fallback body clients without edits show.
    func edit(_ message: Message, seq: Int64) async throws {
        guard message.sender == uid, let target = try await externalId(message), let room = try? await room(of: message)
        else { return }
        let body = Self.body(of: message)
        let content: JSONValue = .object([
            "msgtype": .string("m.notice"), "body": .string("* " + body),
            "m.new_content": .object(["msgtype": .string("m.notice"), "body": .string(body)]),
            "m.relates_to": .object(["rel_type": .string("m.replace"), "event_id": .string(target)]),
        ])
        _ = try await account.client.send(
            "m.room.message", content, in: room, transaction: RelayTransaction.action("e", event: seq))
        metrics.increment("perch_matrix_relayed_total", ["bot": uid, "action": "edit"])
    }

    /// A redaction of the deleted message, with its reason.
    func redact(_ message: Message, seq: Int64) async throws {
        guard let target = try await externalId(message), let room = try? await room(of: message) else { return }
        try await account.client.redact(
            target, in: room, reason: "removed by the bot \(uid)", transaction: RelayTransaction.action("d", event: seq)
        )
        metrics.increment("perch_matrix_relayed_total", ["bot": uid, "action": "delete"])
    }

    /// Pins or unpins by rewriting the room's `m.room.pinned_events`: read, change, write, then read
    /// again, until the change stands (another writer may have written between the read and the
    /// write, and Matrix keeps the last write). A pin as `app_system` is made by the bot's own account.
    func setPinned(_ message: Message, _ pinned: Bool) async throws {
        guard message.receiverType == .group, let room = directory.room(ofGroup: message.receiverUid),
            let target = try await externalId(message)
        else { return }
        for _ in 0..<5 {
            var list =
                try await account.client.state("m.room.pinned_events", in: room)?["pinned"]?.arrayValue?
                .compactMap(\.stringValue) ?? []
            guard list.contains(target) != pinned else { break }
            if pinned { list.append(target) } else { list.removeAll { $0 == target } }
            _ = try await account.client.setState(
                "m.room.pinned_events", .object(["pinned": .array(list.map(JSONValue.string))]), in: room)
        }
        metrics.increment("perch_matrix_relayed_total", ["bot": uid, "action": pinned ? "pin" : "unpin"])
    }

    /// A reaction (`m.annotation`), or the redaction of the bot's reaction it takes back.
    func react(_ reaction: Reaction, on message: Message, added: Bool, seq: Int64) async throws {
        guard let target = try await externalId(message), let room = try? await room(of: message) else { return }
        let key = "reaction:\(uid)\u{1F}\(message.id)\u{1F}\(reaction.reaction)"
        if added {
            let content: JSONValue = .object([
                "m.relates_to": .object([
                    "rel_type": .string("m.annotation"), "event_id": .string(target), "key": .string(reaction.reaction),
                ])
            ])
            let event = try await account.client.send(
                "m.reaction", content, in: room, transaction: RelayTransaction.action("r", event: seq))
            try await service.setConnectorValue(event, for: key, connector: Self.connector)
        } else if let event = try await service.connectorValue(key, connector: Self.connector) {
            try await account.client.redact(
                event, in: room, reason: nil, transaction: RelayTransaction.action("u", event: seq))
            try await service.setConnectorValue(nil, for: key, connector: Self.connector)
        }
        metrics.increment("perch_matrix_relayed_total", ["bot": uid, "action": added ? "react" : "unreact"])
    }

    /// The Matrix event a local message is, nil when it never reached Matrix (logged).
    func externalId(_ message: Message) async throws -> String? {
        if let id = try await service.externalId(ofMessage: message.id, connector: Self.connector) { return id }
        logger.warning(
            "matrix: message \(message.id) is not on the homeserver; bot \(uid) cannot act on it", ["bot": uid])
        return nil
    }

    /// The room of a message: its group's, or the bot's direct chat with the person (made the first
    /// time, and remembered).
    func room(of message: Message) async throws -> String {
        switch message.receiver {
        case .group(let guid):
            guard let room = directory.room(ofGroup: guid) else {
                throw MatrixError(
                    .refused(status: 404, errcode: "M_NOT_FOUND", message: "group \(guid) is not in matrix.rooms"),
                    call: "send")
            }
            return room
        case .user(let other):
            let person = message.sender == uid ? other : message.sender
            return try await directRoom(with: person)
        }
    }

    /// The bot's direct chat with `person` (a uid: a Matrix id, or another bot's uid).
    func directRoom(with person: String) async throws -> String {
        let id = matrixID(person)
        if let room = directory.directRoom(bot: uid, person: person) { return room }
        let key = "direct:\(uid)\u{1F}\(person)"
        if let room = try await service.connectorValue(key, connector: Self.connector) {
            directory.mapDirect(room, bot: uid, person: person)
            return room
        }
        let room = try await account.client.createDirectRoom(with: id)
        try await service.setConnectorValue(room, for: key, connector: Self.connector)
        var directs =
            try await service.connectorValue("directs:\(uid)", connector: Self.connector)
            .map { $0.split(separator: "\n").map(String.init) } ?? []
        directs.append(person)
        try await service.setConnectorValue(
            directs.joined(separator: "\n"), for: "directs:\(uid)", connector: Self.connector)
        directory.mapDirect(room, bot: uid, person: person)
        // Clients list direct chats from the account's `m.direct`.
        var direct = (try? await account.client.accountData("m.direct", for: account.matrixID))?.objectValue ?? [:]
        direct[id] = .array((direct[id]?.arrayValue ?? []) + [.string(room)])
        try? await account.client.setAccountData("m.direct", .object(direct), for: account.matrixID)
        logger.info("matrix: made a direct chat", ["bot": uid, "with": id, "room": room])
        return room
    }
}
