import CPCRE2

/// A compiled PCRE2 regular expression (JIT when available), UTF-8 and Unicode-aware, matched
/// within a budget.
///
/// A compiled pattern and its match context are immutable, and PCRE2 allows matching from several
/// threads at once as long as each match has its own match data, which ``search(_:)`` allocates per
/// call; that is why the class may be `@unchecked Sendable`.
///
/// The budget: a pattern that backtracks catastrophically (`^(a+)+$` against a long run of `a`s
/// and one `b`) would take PCRE2's default limits tens of milliseconds of CPU a message before
/// they stop it. Each match here stops after ``matchLimit`` steps of PCRE2's matcher (and
/// ``depthLimit`` nested backtracking points when the pattern runs without JIT), which an ordinary
/// pattern on the longest message never comes near, and ``search(_:)`` says when it did.
public final class Pattern: @unchecked Sendable {
    public let source: String
    public let captureNames: [Int: String]
    /// The steps of PCRE2's matcher a match may take (`pcre2_set_match_limit`).
    public let matchLimit: UInt32
    /// The nested backtracking points a match may hold without JIT (`pcre2_set_depth_limit`).
    public let depthLimit: UInt32
    private let code: OpaquePointer
    private let context: OpaquePointer

    /// ``matchLimit``'s default: about a millisecond of CPU for the worst pattern.
    public static let defaultMatchLimit: UInt32 = 100_000
    /// ``depthLimit``'s default.
    public static let defaultDepthLimit: UInt32 = 10_000

    /// A pattern that failed to compile: PCRE2's own message and the offset (in UTF-8 bytes).
    public struct CompileError: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var offset: Int
        public var description: String { "\(message) at offset \(offset)" }
    }

    /// Compiles `source`, to be matched within `matchLimit` and `depthLimit`.
    /// - Throws: ``CompileError`` with PCRE2's message and where in the pattern it stopped.
    public init(
        _ source: String, caseInsensitive: Bool = false, matchLimit: UInt32 = Pattern.defaultMatchLimit,
        depthLimit: UInt32 = Pattern.defaultDepthLimit
    ) throws(CompileError) {
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
        guard let context = pcre2_match_context_create_8(nil) else {
            pcre2_code_free_8(compiled)
            throw CompileError(message: "no memory for a match context", offset: 0)
        }
        pcre2_set_match_limit_8(context, matchLimit)
        pcre2_set_depth_limit_8(context, depthLimit)
        self.context = context
        self.matchLimit = matchLimit
        self.depthLimit = depthLimit
        self.code = compiled
        self.source = source
        self.captureNames = Self.names(of: compiled)
    }

    deinit {
        pcre2_match_context_free_8(context)
        pcre2_code_free_8(code)
    }

    /// What a search found.
    public enum SearchResult: Sendable {
        case match(Match)
        case noMatch
        /// The match ran out of its budget (``matchLimit``, ``depthLimit``, PCRE2's heap or JIT
        /// stack) before it could tell: taken as no match.
        case overBudget
    }

    /// One match: the whole match and each capture group, as ranges of the subject's UTF-8 bytes.
    public struct Match: Sendable {
        public var groups: [Range<Int>?]
        public var named: [String: String]
        public var text: String
    }

    /// The first match in `text`, or nil (over the budget too).
    public func firstMatch(in text: String) -> Match? {
        if case .match(let match) = search(text) { return match }
        return nil
    }

    /// The first match in `text`, no match, or a match that ran out of its budget.
    public func search(_ text: String) -> SearchResult {
        guard let data = pcre2_match_data_create_from_pattern_8(code, nil) else { return .overBudget }
        defer { pcre2_match_data_free_8(data) }
        var copy = text
        return copy.withUTF8 { utf8 -> SearchResult in
            let result = pcre2_match_8(code, utf8.baseAddress, utf8.count, 0, 0, data, context)
            guard result > 0 else {
                switch result {
                case PCRE2_ERROR_MATCHLIMIT, PCRE2_ERROR_DEPTHLIMIT, PCRE2_ERROR_HEAPLIMIT, PCRE2_ERROR_JIT_STACKLIMIT:
                    return .overBudget
                default:
                    return .noMatch
                }
            }
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
            return .match(Match(groups: groups, named: named, text: whole ?? ""))
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
