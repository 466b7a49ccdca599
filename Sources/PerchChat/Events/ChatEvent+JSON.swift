/// A hand-written JSON writer for the event log's payloads.
///
/// The single writer thread encodes one payload per change; Foundation's `JSONEncoder` spent a
/// quarter of a send there (measured with perf). This writes the same keys `Codable` does, so
/// `JSONDecoder` reads it back into the same value (a test checks the round trip).
public struct JSONWriter {
    /// The UTF-8 bytes written so far (appending bytes is several times cheaper than growing a
    /// `String`; the writer thread encodes every event it commits).
    public private(set) var bytes: [UInt8] = []

    /// The JSON written so far, as text.
    public var output: String { String(decoding: bytes, as: UTF8.self) }

    public init(capacity: Int = 512) { bytes.reserveCapacity(capacity) }

    public mutating func raw(_ text: String) { bytes.append(contentsOf: text.utf8) }

    /// A whole number, its digits made right to left on the stack and appended at once (no
    /// intermediate `String`; reversing them in `bytes` instead copied the whole buffer, since a
    /// slice of it is not uniquely referenced).
    public mutating func int(_ number: Int64) {
        // 19 digits and a sign: Int64.min is -9223372036854775808.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var magnitude = number.magnitude
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if number < 0 {
                start -= 1
                digits[start] = UInt8(ascii: "-")
            }
            bytes.append(contentsOf: UnsafeMutableBufferPointer(rebasing: digits[start...]))
        }
    }

    public mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var needsEscaping = false
        for byte in value.utf8 where byte < 0x20 || byte == 0x22 || byte == 0x5C {
            needsEscaping = true
            break
        }
        guard needsEscaping else {
            bytes.append(contentsOf: value.utf8)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case ..<0x20:
                let hex = String(byte, radix: 16)
                raw("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func key(_ name: String, first: inout Bool) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: name.utf8)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func value(_ json: JSONValue) {
        switch json {
        case .null: raw("null")
        case .bool(let flag): raw(flag ? "true" : "false")
        case .number(let number):
            if number == number.rounded(), abs(number) < 1e15 {
                int(Int64(number))
            } else if number.isFinite {
                raw("\(number)")
            } else {
                raw("null")
            }
        case .string(let text): string(text)
        case .array(let items):
            raw("[")
            for (index, item) in items.enumerated() {
                if index > 0 { raw(",") }
                value(item)
            }
            raw("]")
        case .object(let object):
            raw("{")
            var first = true
            for (name, item) in object.sorted(by: { $0.key < $1.key }) {
                if !first { raw(",") }
                first = false
                string(name)
                raw(":")
                value(item)
            }
            raw("}")
        }
    }

    public mutating func strings(_ list: [String]) {
        raw("[")
        for (index, item) in list.enumerated() {
            if index > 0 { raw(",") }
            string(item)
        }
        raw("]")
    }

    mutating func attachments(_ list: [Attachment]) {
        raw("[")
        for (index, item) in list.enumerated() {
            if index > 0 { raw(",") }
            var first = true
            raw("{")
            key("name", first: &first)
            string(item.name)
            key("size", first: &first)
            int(item.size)
            key("mimeType", first: &first)
            string(item.mimeType)
            key("extension", first: &first)
            string(item.extension)
            key("url", first: &first)
            string(item.url)
            raw("}")
        }
        raw("]")
    }

    mutating func preview(_ preview: MessagePreview) {
        var first = true
        raw("{")
        key("id", first: &first)
        int(preview.id)
        key("sender", first: &first)
        string(preview.sender)
        key("type", first: &first)
        string(preview.type)
        key("category", first: &first)
        string(preview.category.rawValue)
        if let text = preview.text {
            key("text", first: &first)
            string(text)
        }
        key("attachments", first: &first)
        attachments(preview.attachments)
        key("parentMessageId", first: &first)
        int(preview.parentMessageId)
        key("sentAt", first: &first)
        int(preview.sentAt)
        key("deletedAt", first: &first)
        int(preview.deletedAt)
        raw("}")
    }

    public mutating func message(_ m: Message) {
        var first = true
        raw("{")
        func int(_ name: String, _ number: Int64) {
            key(name, first: &first)
            self.int(number)
        }
        func text(_ name: String, _ value: String) {
            key(name, first: &first)
            string(value)
        }
        int("id", m.id)
        text("muid", m.muid)
        text("conversationId", m.conversationId)
        text("sender", m.sender)
        text("receiverType", m.receiverType.rawValue)
        text("receiverUid", m.receiverUid)
        text("type", m.type)
        text("category", m.category.rawValue)
        if let body = m.text { text("text", body) }
        if let data = m.data {
            key("data", first: &first)
            value(data)
        }
        key("attachments", first: &first)
        attachments(m.attachments)
        if let metadata = m.metadata {
            key("metadata", first: &first)
            value(metadata)
        }
        key("tags", first: &first)
        strings(m.tags)
        key("mentionedUids", first: &first)
        strings(m.mentionedUids)
        int("parentMessageId", m.parentMessageId)
        int("quotedMessageId", m.quotedMessageId)
        int("replyCount", Int64(m.replyCount))
        int("sentAt", m.sentAt)
        int("editedAt", m.editedAt)
        text("editedBy", m.editedBy)
        int("deletedAt", m.deletedAt)
        text("deletedBy", m.deletedBy)
        int("updatedAt", m.updatedAt)
        int("pinnedAt", m.pinnedAt)
        text("pinnedBy", m.pinnedBy)
        key("reactions", first: &first)
        reactionCounts(m.reactions)
        if let quoted = m.quotedMessage {
            key("quotedMessage", first: &first)
            preview(quoted)
        }
        if let parent = m.parentMessage {
            key("parentMessage", first: &first)
            preview(parent)
        }
        int("savedAt", m.savedAt)
        key("hasMentionedMe", first: &first)
        raw(m.hasMentionedMe ? "true" : "false")
        key("threadSubscribed", first: &first)
        raw(m.threadSubscribed ? "true" : "false")
        raw("}")
    }

    public mutating func event(_ e: ChatEvent) {
        var first = true
        raw("{")
        key("seq", first: &first)
        int(e.seq)
        key("name", first: &first)
        string(e.name.rawValue)
        key("conversationId", first: &first)
        string(e.conversationId)
        key("createdAt", first: &first)
        int(e.createdAt)
        if let m = e.message {
            key("message", first: &first)
            message(m)
        }
        if let change = e.member {
            key("member", first: &first)
            var inner = true
            raw("{")
            key("guid", first: &inner)
            string(change.guid)
            key("uid", first: &inner)
            string(change.uid)
            key("actor", first: &inner)
            string(change.actor)
            if let scope = change.scope {
                key("scope", first: &inner)
                string(scope.rawValue)
            }
            if let old = change.oldScope {
                key("oldScope", first: &inner)
                string(old.rawValue)
            }
            raw("}")
        }
        if let reaction = e.reaction {
            key("reaction", first: &first)
            self.reaction(reaction)
        }
        if let actor = e.actor {
            key("actor", first: &first)
            string(actor)
        }
        raw("}")
    }

    public mutating func reaction(_ r: Reaction) {
        var first = true
        raw("{")
        key("id", first: &first)
        int(r.id)
        key("messageId", first: &first)
        int(r.messageId)
        key("reaction", first: &first)
        string(r.reaction)
        key("uid", first: &first)
        string(r.uid)
        key("reactedAt", first: &first)
        int(r.reactedAt)
        raw("}")
    }

    mutating func reactionCounts(_ list: [ReactionCount]) {
        raw("[")
        for (index, item) in list.enumerated() {
            if index > 0 { raw(",") }
            var first = true
            raw("{")
            key("reaction", first: &first)
            string(item.reaction)
            key("count", first: &first)
            int(Int64(item.count))
            key("reactedByMe", first: &first)
            raw(item.reactedByMe ? "true" : "false")
            raw("}")
        }
        raw("]")
    }
}

extension JSONWriter {
    /// `text` as a JSON string literal.
    public static func quoted(_ text: String) -> String {
        var writer = JSONWriter(capacity: text.utf8.count + 2)
        writer.string(text)
        return writer.output
    }
}

extension ChatEvent {
    /// The event as JSON text's UTF-8 bytes (what the store writes).
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        writer.event(self)
        return writer.bytes
    }

    /// The event as JSON, with the keys its `Codable` conformance uses.
    public var json: String {
        var writer = JSONWriter()
        writer.event(self)
        return writer.output
    }
}

extension Reaction {
    /// The reaction as JSON, with the keys its `Codable` conformance uses.
    public var json: String {
        var writer = JSONWriter(capacity: 96)
        writer.reaction(self)
        return writer.output
    }
}

extension Message {
    /// The message as JSON, with the keys its `Codable` conformance uses.
    public var json: String {
        var writer = JSONWriter()
        writer.message(self)
        return writer.output
    }
}
