/// Reading the event log's payloads with ``JSONReader``: the same keys ``JSONWriter`` writes and
/// `Codable` reads. Every non-optional field's key is required, as `Codable` requires it.
extension JSONReader {
    public mutating func event() throws -> ChatEvent {
        var event = ChatEvent(name: .textMessageReceived, conversationId: "", createdAt: 0)
        var seen = RequiredKeys(required: 4)
        try object { reader, key in
            switch key {
            case "seq": event.seq = seen.mark(0, try reader.int64())
            case "name": event.name = seen.mark(1, try reader.enum(EventName.self))
            case "conversationId": event.conversationId = seen.mark(2, try reader.string())
            case "createdAt": event.createdAt = seen.mark(3, try reader.int64())
            case "message": event.message = reader.null() ? nil : try reader.message()
            case "member": event.member = reader.null() ? nil : try reader.memberChange()
            case "reaction": event.reaction = reader.null() ? nil : try reader.reaction()
            case "actor": event.actor = reader.null() ? nil : try reader.string()
            case "read": event.read = reader.null() ? nil : try reader.notificationsRead()
            default: try reader.skip()
            }
        }
        try seen.check("an event", at: self)
        return event
    }

    public mutating func message() throws -> Message {
        var m = Message(conversationId: "", sender: "", receiverType: .user, receiverUid: "")
        var seen = RequiredKeys(required: 25)
        try object { reader, key in
            switch key {
            case "id": m.id = seen.mark(0, try reader.int64())
            case "muid": m.muid = seen.mark(1, try reader.string())
            case "conversationId": m.conversationId = seen.mark(2, try reader.string())
            case "sender": m.sender = seen.mark(3, try reader.string())
            case "receiverType": m.receiverType = seen.mark(4, try reader.enum(ReceiverType.self))
            case "receiverUid": m.receiverUid = seen.mark(5, try reader.string())
            case "type": m.type = seen.mark(6, try reader.string())
            case "category": m.category = seen.mark(7, try reader.enum(MessageCategory.self))
            case "attachments": m.attachments = seen.mark(8, try reader.attachments())
            case "tags": m.tags = seen.mark(9, try reader.strings())
            case "mentionedUids": m.mentionedUids = seen.mark(10, try reader.strings())
            case "parentMessageId": m.parentMessageId = seen.mark(11, try reader.int64())
            case "quotedMessageId": m.quotedMessageId = seen.mark(12, try reader.int64())
            case "replyCount": m.replyCount = Int(seen.mark(13, try reader.int64()))
            case "sentAt": m.sentAt = seen.mark(14, try reader.int64())
            case "editedAt": m.editedAt = seen.mark(15, try reader.int64())
            case "editedBy": m.editedBy = seen.mark(16, try reader.string())
            case "deletedAt": m.deletedAt = seen.mark(17, try reader.int64())
            case "deletedBy": m.deletedBy = seen.mark(18, try reader.string())
            case "updatedAt": m.updatedAt = seen.mark(19, try reader.int64())
            case "pinnedAt": m.pinnedAt = seen.mark(20, try reader.int64())
            case "pinnedBy": m.pinnedBy = seen.mark(21, try reader.string())
            case "savedAt": m.savedAt = seen.mark(22, try reader.int64())
            case "hasMentionedMe": m.hasMentionedMe = seen.mark(23, try reader.bool())
            case "threadSubscribed": m.threadSubscribed = seen.mark(24, try reader.bool())
            case "text": m.text = try reader.optionalString()
            case "data": m.data = reader.null() ? nil : try reader.value()
            case "metadata": m.metadata = reader.null() ? nil : try reader.value()
            case "quotedMessage": m.quotedMessage = reader.null() ? nil : try reader.preview()
            case "parentMessage": m.parentMessage = reader.null() ? nil : try reader.preview()
            // Payloads written before reactions existed have none.
            case "reactions": m.reactions = try reader.reactionCounts()
            default: try reader.skip()
            }
        }
        try seen.check("a message", at: self)
        return m
    }

    mutating func preview() throws -> MessagePreview {
        var preview = MessagePreview(Message(conversationId: "", sender: "", receiverType: .user, receiverUid: ""))
        var seen = RequiredKeys(required: 8)
        try object { reader, key in
            switch key {
            case "id": preview.id = seen.mark(0, try reader.int64())
            case "sender": preview.sender = seen.mark(1, try reader.string())
            case "type": preview.type = seen.mark(2, try reader.string())
            case "category": preview.category = seen.mark(3, try reader.enum(MessageCategory.self))
            case "attachments": preview.attachments = seen.mark(4, try reader.attachments())
            case "parentMessageId": preview.parentMessageId = seen.mark(5, try reader.int64())
            case "sentAt": preview.sentAt = seen.mark(6, try reader.int64())
            case "deletedAt": preview.deletedAt = seen.mark(7, try reader.int64())
            case "text": preview.text = try reader.optionalString()
            default: try reader.skip()
            }
        }
        try seen.check("a message preview", at: self)
        return preview
    }

    public mutating func attachments() throws -> [Attachment] {
        var list: [Attachment] = []
        try array { reader in
            var item = Attachment(name: "", size: 0, mimeType: "", extension: "", url: "")
            var seen = RequiredKeys(required: 5)
            try reader.object { reader, key in
                switch key {
                case "name": item.name = seen.mark(0, try reader.string())
                case "size": item.size = seen.mark(1, try reader.int64())
                case "mimeType": item.mimeType = seen.mark(2, try reader.string())
                case "extension": item.extension = seen.mark(3, try reader.string())
                case "url": item.url = seen.mark(4, try reader.string())
                default: try reader.skip()
                }
            }
            try seen.check("an attachment", at: reader)
            list.append(item)
        }
        return list
    }

    public mutating func reaction() throws -> Reaction {
        var reaction = Reaction(messageId: 0, reaction: "", uid: "", reactedAt: 0)
        var seen = RequiredKeys(required: 5)
        try object { reader, key in
            switch key {
            case "messageId": reaction.messageId = seen.mark(0, try reader.int64())
            case "reaction": reaction.reaction = seen.mark(1, try reader.string())
            case "uid": reaction.uid = seen.mark(2, try reader.string())
            case "reactedAt": reaction.reactedAt = seen.mark(3, try reader.int64())
            case "id": reaction.id = seen.mark(4, try reader.int64())
            default: try reader.skip()
            }
        }
        try seen.check("a reaction", at: self)
        return reaction
    }

    mutating func reactionCounts() throws -> [ReactionCount] {
        var list: [ReactionCount] = []
        try array { reader in
            var item = ReactionCount(reaction: "", count: 0)
            var seen = RequiredKeys(required: 3)
            try reader.object { reader, key in
                switch key {
                case "reaction": item.reaction = seen.mark(0, try reader.string())
                case "count": item.count = Int(seen.mark(1, try reader.int64()))
                case "reactedByMe": item.reactedByMe = seen.mark(2, try reader.bool())
                default: try reader.skip()
                }
            }
            try seen.check("a reaction count", at: reader)
            list.append(item)
        }
        return list
    }

    mutating func notificationsRead() throws -> NotificationsRead {
        var read = NotificationsRead(unreadCount: 0)
        var seen = RequiredKeys(required: 3)
        try object { reader, key in
            switch key {
            case "seqs":
                var seqs: [Int64] = []
                try reader.array { seqs.append(try $0.int64()) }
                read.seqs = seen.mark(0, seqs)
            case "through": read.through = seen.mark(1, try reader.int64())
            case "unreadCount": read.unreadCount = Int(seen.mark(2, try reader.int64()))
            default: try reader.skip()
            }
        }
        try seen.check("notifications read", at: self)
        return read
    }

    mutating func memberChange() throws -> MemberChange {
        var change = MemberChange(guid: "", uid: "", actor: "")
        var seen = RequiredKeys(required: 3)
        try object { reader, key in
            switch key {
            case "guid": change.guid = seen.mark(0, try reader.string())
            case "uid": change.uid = seen.mark(1, try reader.string())
            case "actor": change.actor = seen.mark(2, try reader.string())
            case "scope": change.scope = reader.null() ? nil : try reader.enum(GroupMemberScope.self)
            case "oldScope": change.oldScope = reader.null() ? nil : try reader.enum(GroupMemberScope.self)
            default: try reader.skip()
            }
        }
        try seen.check("a member change", at: self)
        return change
    }
}

/// Which of an object's required keys were read.
struct RequiredKeys {
    private var seen: UInt32 = 0
    private let all: UInt32

    init(required count: Int) { all = count == 32 ? .max : (1 << UInt32(count)) - 1 }

    mutating func mark<T>(_ bit: Int, _ value: T) -> T {
        seen |= 1 << UInt32(bit)
        return value
    }

    func check(_ what: String, at reader: borrowing JSONReader) throws {
        guard seen & all == all else { throw reader.failure("\(what) with every required key") }
    }
}

extension ChatEvent {
    /// Reads an event from its JSON payload (as ``JSONWriter/event(_:)`` writes it).
    public init(json: String) throws { self = try JSONReader.read(json) { try $0.event() } }
}
