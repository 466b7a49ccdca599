/// A hand-written JSON reader for the event log's payloads, the counterpart of ``JSONWriter``.
///
/// Every bot and every live session decodes each event it reads, and Foundation's `JSONDecoder`
/// spends most of that in generic `Codable` machinery.
/// This reads the bytes once, front to back, straight into the model's fields. It accepts what
/// `Codable` accepts for these types: keys in any order, unknown keys skipped, optional keys absent
/// or `null`; a required key missing or a value of the wrong kind throws ``JSONReader/Failure``.
public struct JSONReader {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        /// The byte offset where reading stopped.
        public var offset: Int
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    /// Objects and arrays open around the current byte.
    private var depth = 0
    /// The deepest nesting read (as Foundation's `JSONDecoder`): deeper input is refused, never
    /// read by recursion until the stack runs out.
    public static let maximumDepth = 512

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// Reads one value of `text` with `body`, and checks nothing but whitespace follows it.
    public static func read<T>(_ text: String, _ body: (inout JSONReader) throws -> T) throws -> T {
        var text = text
        return try text.withUTF8 { buffer in
            var reader = JSONReader(buffer)
            let value = try body(&reader)
            reader.skipWhitespace()
            guard reader.index == buffer.count else { throw reader.failure("text after the value") }
            return value
        }
    }

    // MARK: Scalars

    public mutating func string() throws -> String {
        try expect(UInt8(ascii: "\""))
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
            if byte < 0x20 { throw failure("a control character in a string") }
            index += 1
        }
        throw failure("an unterminated string")
    }

    /// The rest of a string that holds escapes, from its first byte at `start`.
    private mutating func escapedString(from start: Int) throws -> String {
        var scalars = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: scalars, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { throw failure("an unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escape)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code), index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                        bytes[index + 1] == UInt8(ascii: "u")
                    {
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw failure("an unpaired surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw failure("an unpaired surrogate") }
                    scalars.append(contentsOf: UTF8.encode(scalar)!)
                default:
                    throw failure("an unknown escape")
                }
            case 0..<0x20:
                throw failure("a control character in a string")
            default:
                scalars.append(byte)
            }
        }
        throw failure("an unterminated string")
    }

    private mutating func hex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("a short \\u escape") }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            index += 1
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("a bad \\u escape")
            }
            code = code << 4 | UInt32(digit)
        }
        return code
    }

    /// A whole number; like `JSONDecoder`, `3.0` and `3e2` are whole numbers too.
    public mutating func int64() throws -> Int64 {
        skipWhitespace()
        let start = index
        guard numberEnd(from: index) != nil else { throw failure("a number") }
        var negative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        var value: Int64 = 0
        var digits = 0
        while index < bytes.count, case let byte = bytes[index], byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            if overflow1 || overflow2 {
                index = start
                return try wholeDouble()
            }
            value = sum
            digits += 1
            index += 1
        }
        guard digits > 0 else { throw failure("a number") }
        if index < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index]) {
            index = start
            return try wholeDouble()
        }
        return negative ? -value : value
    }

    private mutating func wholeDouble() throws -> Int64 {
        let number = try double()
        guard number == number.rounded(), let whole = Int64(exactly: number) else {
            throw failure("a whole number")
        }
        return whole
    }

    public mutating func double() throws -> Double {
        skipWhitespace()
        let start = index
        guard let end = numberEnd(from: index) else {
            throw failure(peek.map(Self.startsNumber) == true ? "a number" : "a value")
        }
        index = end
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let number = Double(text), number.isFinite else {
            index = start
            throw failure("a number")
        }
        return number
    }

    private static func startsNumber(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "-") || isDigit(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// Where the number starting at `start` ends, by JSON's grammar (RFC 8259: `-? (0 | [1-9]
    /// digits) (. digits)? ([eE] [+-]? digits)?`, so no `+1`, `.5`, `1.`, `01` or `1e`); nil when
    /// no number starts there.
    private func numberEnd(from start: Int) -> Int? {
        var at = start
        func digits() -> Int {
            let first = at
            while at < bytes.count, Self.isDigit(bytes[at]) { at += 1 }
            return at - first
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
        guard at < bytes.count, Self.isDigit(bytes[at]) else { return nil }
        if bytes[at] == UInt8(ascii: "0") {
            at += 1
        } else {
            _ = digits()
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            at += 1
            guard digits() > 0 else { return nil }
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            at += 1
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard digits() > 0 else { return nil }
        }
        return at
    }

    public mutating func bool() throws -> Bool {
        if consume("true") { return true }
        if consume("false") { return false }
        throw failure("true or false")
    }

    /// Consumes `null` and answers true, or answers false and consumes nothing.
    public mutating func null() -> Bool { consume("null") }

    public mutating func optionalString() throws -> String? { null() ? nil : try string() }

    /// A string that must be one of `T`'s raw values.
    public mutating func `enum`<T: RawRepresentable>(_ type: T.Type) throws -> T where T.RawValue == String {
        let start = index
        guard let value = T(rawValue: try string()) else {
            index = start
            throw failure("one of \(T.self)'s values")
        }
        return value
    }

    // MARK: Containers

    /// Reads an object, calling `field` with each key; `field` reads (or ``skip()``s) the value.
    public mutating func object(_ field: (inout JSONReader, String) throws -> Void) throws {
        try items(from: UInt8(ascii: "{"), to: UInt8(ascii: "}"), in: "object") { reader in
            let key = try reader.string()
            try reader.expect(UInt8(ascii: ":"))
            reader.skipWhitespace()
            try field(&reader, key)
        }
    }

    /// Reads an array, calling `element` once per element.
    public mutating func array(_ element: (inout JSONReader) throws -> Void) throws {
        try items(from: UInt8(ascii: "["), to: UInt8(ascii: "]"), in: "array", element)
    }

    /// The comma-separated items between `open` and `close`, each read by `item`.
    private mutating func items(
        from open: UInt8, to close: UInt8, in container: String, _ item: (inout JSONReader) throws -> Void
    ) throws {
        try expect(open)
        guard depth < Self.maximumDepth else { throw failure("at most \(Self.maximumDepth) nested objects and arrays") }
        depth += 1
        defer { depth -= 1 }
        skipWhitespace()
        if peek == close {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            try item(&self)
            skipWhitespace()
            guard index < bytes.count else { throw failure("an unterminated \(container)") }
            let byte = bytes[index]
            index += 1
            if byte == close { return }
            guard byte == UInt8(ascii: ",") else {
                index -= 1
                throw failure("a comma or the end of the \(container)")
            }
        }
    }

    public mutating func strings() throws -> [String] {
        var list: [String] = []
        try array { list.append(try $0.string()) }
        return list
    }

    /// Any value, as ``JSONValue``. An object with one key twice is refused: which of the two a
    /// reader keeps differs from one JSON library to the next, so a body that two of them read
    /// could mean two things (RFC 8259 leaves it open).
    public mutating func value() throws -> JSONValue {
        skipWhitespace()
        switch peek {
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "{"):
            var object: [String: JSONValue] = [:]
            try self.object { reader, key in
                let start = reader.index
                guard object.updateValue(try reader.value(), forKey: key) == nil else {
                    throw Failure(description: "JSON: the key \"\(key)\" twice in one object", offset: start)
                }
            }
            return .object(object)
        case UInt8(ascii: "["):
            var items: [JSONValue] = []
            try array { items.append(try $0.value()) }
            return .array(items)
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool(try bool())
        case UInt8(ascii: "n"):
            guard null() else { throw failure("a value") }
            return .null
        default: return .number(try double())
        }
    }

    /// Reads past one value of any kind, checking it as ``value()`` does without building it.
    public mutating func skip() throws {
        skipWhitespace()
        switch peek {
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "{"): try object { reader, _ in try reader.skip() }
        case UInt8(ascii: "["): try array { try $0.skip() }
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try bool()
        case UInt8(ascii: "n"):
            guard null() else { throw failure("a value") }
        default: _ = try double()
        }
    }

    /// Reads past one value of any kind and answers where its bytes are (offsets into the UTF-8
    /// of the text read), to hand them on as they are.
    public mutating func skipValue() throws -> Range<Int> {
        skipWhitespace()
        let start = index
        try skip()
        return start..<index
    }

    // MARK: Bytes

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    private mutating func expect(_ byte: UInt8) throws {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else {
            throw failure("'\(Character(Unicode.Scalar(byte)))'")
        }
        index += 1
    }

    private mutating func consume(_ word: StaticString) -> Bool {
        skipWhitespace()
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        let start = word.utf8Start
        for offset in 0..<count where bytes[index + offset] != start[offset] { return false }
        index += count
        return true
    }

    func failure(_ expected: String) -> Failure {
        Failure(description: "JSON: expected \(expected) at byte \(index)", offset: index)
    }
}

extension JSONValue {
    /// Parses one JSON text with ``JSONReader`` (a fifth of the time Foundation's `JSONDecoder`
    /// takes for a message's event).
    /// - Throws: ``JSONReader/Failure`` when `text` is not one JSON value.
    public init(parsing text: String) throws {
        self = try JSONReader.read(text) { try $0.value() }
    }
}
