import CPCRE2

/// A compiled PCRE2 regular expression (JIT when available), UTF-8 and Unicode-aware.
///
/// A compiled pattern is immutable and PCRE2 allows matching it from several threads at once as
/// long as each match has its own match data, which ``firstMatch(in:)`` allocates per call; that
/// is why the class may be `@unchecked Sendable`.
public final class Pattern: @unchecked Sendable {
    public let source: String
    public let captureNames: [Int: String]
    private let code: OpaquePointer

    /// A pattern that failed to compile: PCRE2's own message and the offset (in UTF-8 bytes).
    public struct CompileError: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var offset: Int
        public var description: String { "\(message) at offset \(offset)" }
    }

    /// Compiles `source`.
    /// - Throws: ``CompileError`` with PCRE2's message and where in the pattern it stopped.
    public init(_ source: String, caseInsensitive: Bool = false) throws(CompileError) {
        var errorCode: Int32 = 0
        var errorOffset: Int = 0
        var options = UInt32(PCRE2_UTF | PCRE2_UCP)
        if caseInsensitive { options |= UInt32(PCRE2_CASELESS) }
        let compiled = source.utf8CString.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UInt8.self, capacity: buffer.count) { bytes in
                pcre2_compile_8(bytes, buffer.count - 1, options, &errorCode, &errorOffset, nil)
            }
        }
        guard let compiled else {
            var message = [UInt8](repeating: 0, count: 256)
            let length = pcre2_get_error_message_8(errorCode, &message, message.count)
            let text = length > 0 ? String(decoding: message.prefix(Int(length)), as: UTF8.self) : "invalid pattern"
            throw CompileError(message: text, offset: errorOffset)
        }
        pcre2_jit_compile_8(compiled, UInt32(PCRE2_JIT_COMPLETE))
        self.code = compiled
        self.source = source
        self.captureNames = Self.names(of: compiled)
    }

    deinit { pcre2_code_free_8(code) }

    /// One match: the whole match and each capture group, as ranges of the subject's UTF-8 bytes.
    public struct Match: Sendable {
        public var groups: [Range<Int>?]
        public var named: [String: String]
        public var text: String
    }

    /// The first match in `text`, or nil.
    public func firstMatch(in text: String) -> Match? {
        guard let data = pcre2_match_data_create_from_pattern_8(code, nil) else { return nil }
        defer { pcre2_match_data_free_8(data) }
        var copy = text
        return copy.withUTF8 { utf8 -> Match? in
            let result = pcre2_match_8(code, utf8.baseAddress, utf8.count, 0, 0, data, nil)
            guard result > 0 else { return nil }
            let vector = pcre2_get_ovector_pointer_8(data)!
            let unset = perch_pcre2_unset()
            var groups: [Range<Int>?] = []
            groups.reserveCapacity(Int(result))
            for index in 0..<Int(result) {
                let start = vector[2 * index]
                let end = vector[2 * index + 1]
                groups.append(start == unset ? nil : Int(start)..<Int(end))
            }
            var named: [String: String] = [:]
            for (index, name) in captureNames where index < groups.count {
                if let range = groups[index] {
                    named[name] = String(decoding: UnsafeBufferPointer(rebasing: utf8[range]), as: UTF8.self)
                }
            }
            let whole = groups[0].map { String(decoding: UnsafeBufferPointer(rebasing: utf8[$0]), as: UTF8.self) }
            return Match(groups: groups, named: named, text: whole ?? "")
        }
    }

    /// True when `text` contains a match.
    public func matches(_ text: String) -> Bool { firstMatch(in: text) != nil }

    private static func names(of code: OpaquePointer) -> [Int: String] {
        var count: UInt32 = 0
        var entrySize: UInt32 = 0
        var table: UnsafePointer<UInt8>? = nil
        pcre2_pattern_info_8(code, UInt32(PCRE2_INFO_NAMECOUNT), &count)
        guard count > 0 else { return [:] }
        pcre2_pattern_info_8(code, UInt32(PCRE2_INFO_NAMEENTRYSIZE), &entrySize)
        pcre2_pattern_info_8(code, UInt32(PCRE2_INFO_NAMETABLE), &table)
        guard let table else { return [:] }
        var names: [Int: String] = [:]
        for entry in 0..<Int(count) {
            let base = table + entry * Int(entrySize)
            let index = Int(base[0]) << 8 | Int(base[1])
            names[index] = String(cString: base + 2)
        }
        return names
    }
}
