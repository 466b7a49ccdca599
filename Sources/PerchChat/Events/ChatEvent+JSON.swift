/// A hand-written JSON writer for the event log's payloads.
///
/// The single writer thread encodes one payload per change, on every send's path, where
/// Foundation's `JSONEncoder` and its generic `Codable` machinery cost more than the rest of the
/// encoding. This writes the same keys `Codable` does, so
/// `JSONDecoder` reads it back into the same value (a test checks the round trip).
public struct JSONWriter {
    /// The buffer, zero-filled past `length`: writing through an index into an array kept at full
    /// size is several times cheaper than `append(contentsOf:)`, whose generic path runs for every
    /// key and comma.
    private var storage: [UInt8]
    private var length = 0

    /// The UTF-8 bytes written so far.
    public var bytes: [UInt8] { Array(storage[..<length]) }

    /// The JSON written so far, as text.
    public var output: String { String(decoding: storage[..<length], as: UTF8.self) }

    /// `capacity`: bytes reserved up front (a message event is about 600; the buffer doubles when
    /// full).
    public init(capacity: Int = 1_024) { storage = Array(repeating: 0, count: max(capacity, 16)) }

    public mutating func raw(_ text: String) { append(text) }

    @inline(__always)
    private mutating func reserve(_ count: Int) {
        if length + count > storage.count {
            storage.append(contentsOf: repeatElement(0, count: max(length + count, storage.count * 2) - storage.count))
        }
    }

    @inline(__always)
    private mutating func append(byte: UInt8) {
        reserve(1)
        storage[length] = byte
        length += 1
    }

    @inline(__always)
    private mutating func append(_ buffer: UnsafeBufferPointer<UInt8>) {
        guard let source = buffer.baseAddress, buffer.count > 0 else { return }
        reserve(buffer.count)
        let at = length
        storage.withUnsafeMutableBufferPointer { target in
            let start = target.baseAddress! + at
            if buffer.count <= 16 {
                // Keys and punctuation: a call to memmove costs more than the copy.
                for index in 0..<buffer.count { start[index] = source[index] }
            } else {
                start.update(from: source, count: buffer.count)
            }
        }
        length += buffer.count
    }

    /// Punctuation, keys and other fixed text, copied from the program's own bytes.
    @inline(__always)
    mutating func put(_ text: StaticString) {
        text.withUTF8Buffer { append($0) }
    }

    /// A string's UTF-8, copied at once from its contiguous storage (a native Swift string's always
    /// is).
    @inline(__always)
    private mutating func append(_ text: String) {
        if text.utf8.withContiguousStorageIfAvailable({ append($0) }) == nil {
            for byte in text.utf8 { append(byte: byte) }
        }
    }

    /// A whole number, its digits written right to left straight into the buffer.
    public mutating func int(_ number: Int64) {
        var magnitude = number.magnitude
        var digits = 1
        var bound: UInt64 = 10
        while digits < 20 && magnitude >= bound {
            digits += 1
            bound = bound &* 10
        }
        let count = digits + (number < 0 ? 1 : 0)
        reserve(count)
        let at = length
        storage.withUnsafeMutableBufferPointer { target in
            var index = at + count
            repeat {
                index -= 1
                target[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if number < 0 { target[at] = UInt8(ascii: "-") }
        }
        length += count
    }

    /// `value` as a JSON string: the runs between the characters that need escaping copied whole.
    public mutating func string(_ value: String) {
        append(byte: UInt8(ascii: "\""))
        let copied: Void? = value.utf8.withContiguousStorageIfAvailable { utf8 in
            var run = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C else { continue }
                append(UnsafeBufferPointer(rebasing: utf8[run..<index]))
                escape(byte)
                run = index + 1
            }
            append(UnsafeBufferPointer(rebasing: utf8[run...]))
        }
        if copied == nil {
            for byte in value.utf8 {
                if byte < 0x20 || byte == 0x22 || byte == 0x5C { escape(byte) } else { append(byte: byte) }
            }
        }
        append(byte: UInt8(ascii: "\""))
    }

    private mutating func escape(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): put("\\\"")
        case UInt8(ascii: "\\"): put("\\\\")
        case 0x0A: put("\\n")
        case 0x0D: put("\\r")
        case 0x09: put("\\t")
        default:
            let hex: StaticString = "0123456789abcdef"
            put("\\u00")
            hex.withUTF8Buffer { digits in
                append(byte: digits[Int(byte >> 4)])
                append(byte: digits[Int(byte & 0x0F)])
            }
        }
    }

    /// `"name":`, after a comma unless it is the object's first key.
    @inline(__always)
    mutating func key(_ name: StaticString, first: inout Bool) {
        if first {
            first = false
            append(byte: UInt8(ascii: "\""))
        } else {
            put(",\"")
        }
        put(name)
        put("\":")
    }

    public mutating func value(_ json: JSONValue) {
        switch json {
        case .null: put("null")
        case .bool(let flag): put(flag ? "true" : "false")
        case .number(let number):
            if number == number.rounded(), abs(number) < 1e15 {
                int(Int64(number))
            } else if number.isFinite {
                raw("\(number)")
            } else {
                put("null")
            }
        case .string(let text): string(text)
        case .array(let items):
            put("[")
            for (index, item) in items.enumerated() {
                if index > 0 { put(",") }
                value(item)
            }
            put("]")
        case .object(let object):
            put("{")
            var first = true
            for (name, item) in object.sorted(by: { $0.key < $1.key }) {
                if !first { put(",") }
                first = false
                string(name)
                put(":")
                value(item)
            }
            put("}")
        }
    }

    public mutating func strings(_ list: [String]) {
        put("[")
        for (index, item) in list.enumerated() {
            if index > 0 { put(",") }
            string(item)
        }
        put("]")
    }

    mutating func attachments(_ list: [Attachment]) {
        put("[")
        for (index, item) in list.enumerated() {
            if index > 0 { put(",") }
            var first = true
            put("{")
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
            put("}")
        }
        put("]")
    }

    mutating func preview(_ preview: MessagePreview) {
        var first = true
        put("{")
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
        put("}")
    }

    public mutating func message(_ m: Message) {
        var first = true
        put("{")
        func int(_ name: StaticString, _ number: Int64) {
            key(name, first: &first)
            self.int(number)
        }
        func text(_ name: StaticString, _ value: String) {
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
        put(m.hasMentionedMe ? "true" : "false")
        key("threadSubscribed", first: &first)
        put(m.threadSubscribed ? "true" : "false")
        put("}")
    }

    public mutating func event(_ e: ChatEvent) {
        var first = true
        put("{")
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
            put("{")
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
            put("}")
        }
        if let reaction = e.reaction {
            key("reaction", first: &first)
            self.reaction(reaction)
        }
        if let actor = e.actor {
            key("actor", first: &first)
            string(actor)
        }
        if let read = e.read {
            key("read", first: &first)
            var inner = true
            put("{")
            key("seqs", first: &inner)
            put("[")
            for (index, seq) in read.seqs.enumerated() {
                if index > 0 { put(",") }
                int(seq)
            }
            put("]")
            key("through", first: &inner)
            int(read.through)
            key("unreadCount", first: &inner)
            int(Int64(read.unreadCount))
            put("}")
        }
        put("}")
    }

    public mutating func reaction(_ r: Reaction) {
        var first = true
        put("{")
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
        put("}")
    }

    mutating func reactionCounts(_ list: [ReactionCount]) {
        put("[")
        for (index, item) in list.enumerated() {
            if index > 0 { put(",") }
            var first = true
            put("{")
            key("reaction", first: &first)
            string(item.reaction)
            key("count", first: &first)
            int(Int64(item.count))
            key("reactedByMe", first: &first)
            put(item.reactedByMe ? "true" : "false")
            put("}")
        }
        put("]")
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
