/// A command rule's `usage`: the arguments it takes, each named and typed, as Hubot's and errbot's
/// commands declare theirs (`usage: "<when:duration> <text:rest>"`).
///
/// An argument is `<name:kind>` (required) or `[name:kind]` (optional, after the required ones);
/// `<name>` alone is a `word`. Each takes one word of the command's text but `rest`, which takes
/// the rest of it (last only). The host parses and checks them before the rule runs: a call that
/// does not fit is answered with the usage, and the rule does not run; the values are the rule's
/// captures, `{name}` in templates and `captures[name]` for plugins.
public struct CommandUsage: Sendable, Hashable, Decodable {
    /// What an argument may be, and the value it gives.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A person or bot, as a mention, `@uid` or `uid`: the user's uid (they must exist).
        case user
        /// A group, as `#guid` or `guid`: its guid (it must exist).
        case group
        /// A message id (`42` or `#42`).
        case message
        /// A length of time, `90s`, `10m`, `2h`, `1d`, `1w` or a sum such as `1h30m`: as written;
        /// `{name.seconds}` has it in seconds.
        case duration
        /// A whole number, with an optional sign.
        case integer
        /// One word.
        case word
        /// The rest of the text, at least one word of it.
        case rest

        /// What an argument of this kind is, for the help and for a call that does not fit.
        public var explanation: String {
            switch self {
            case .user: return "a person (@name)"
            case .group: return "a group"
            case .message: return "a message id"
            case .duration: return "a duration, such as 10m, 2h or 1d"
            case .integer: return "a whole number"
            case .word: return "a word"
            case .rest: return "some text"
            }
        }
    }

    /// One declared argument.
    public struct Parameter: Sendable, Hashable {
        public var name: String
        public var kind: Kind
        public var isOptional: Bool

        /// As the usage writes it: `<when:duration>`, `[count:integer]`.
        public var written: String {
            let inner = kind == .word ? name : "\(name):\(kind.rawValue)"
            return isOptional ? "[\(inner)]" : "<\(inner)>"
        }
    }

    public var parameters: [Parameter]

    /// The usage as a person reads it: `<when:duration> <text:rest>`.
    public var text: String { parameters.map(\.written).joined(separator: " ") }

    /// The placeholders the arguments give a template: each name, and `NAME.seconds` for durations.
    public var placeholders: Set<String> {
        Set(parameters.flatMap { $0.kind == .duration ? [$0.name, $0.name + ".seconds"] : [$0.name] })
    }

    public init(parameters: [Parameter]) { self.parameters = parameters }

    /// - Throws: ``ConfigValueError`` naming what is wrong: a token that is no argument, an unknown
    ///   kind, a name used twice or reserved, `rest` before the end, a required one after an optional.
    public init(parsing source: String) throws(ConfigValueError) {
        var parameters: [Parameter] = []
        for token in source.split(whereSeparator: \.isWhitespace).map(String.init) {
            let optional: Bool
            switch (token.first, token.last) {
            case ("<", ">"): optional = false
            case ("[", "]"): optional = true
            default:
                throw ConfigValueError("'\(token)' is not an argument; write <name:kind> or [name:kind]")
            }
            let inner = token.dropFirst().dropLast()
            let parts = inner.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts.count <= 2, let name = parts.first, Self.isName(name) else {
                throw ConfigValueError("'\(token)': an argument's name is a lower-case word (letters, digits, _)")
            }
            guard !Self.reserved.contains(name) else {
                throw ConfigValueError("'\(name)' is a placeholder of its own; name the argument otherwise")
            }
            let kindName = parts.count == 2 ? parts[1] : "word"
            guard let kind = Kind(rawValue: kindName) else {
                let kinds = Kind.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigValueError("'\(kindName)' is no argument kind; one of \(kinds)")
            }
            guard !parameters.contains(where: { $0.name == name }) else {
                throw ConfigValueError("the argument '\(name)' is named twice")
            }
            if let last = parameters.last {
                if last.kind == .rest { throw ConfigValueError("a rest argument takes the rest: it comes last") }
                if last.isOptional, !optional {
                    throw ConfigValueError("the required '\(name)' comes after an optional one")
                }
            }
            parameters.append(Parameter(name: name, kind: kind, isOptional: optional))
        }
        guard !parameters.isEmpty else { throw ConfigValueError("a usage names at least one argument") }
        self.parameters = parameters
    }

    public init(from decoder: any Decoder) throws {
        self = try CommandUsage(parsing: try decoder.singleValueContainer().decode(String.self))
    }

    /// The names templates use for themselves.
    static let reserved: Set<String> = [
        "args", "sender", "message", "parent", "group", "actor", "reaction", "strings", "webhook",
    ]

    private static func isName(_ name: String) -> Bool {
        guard let first = name.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) || first == 95
        else { return false }
        return name.utf8.allSatisfy {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || $0 == 95
        }
    }

    /// `text` as a duration in seconds: a sum of numbers each with a unit (`s`, `m`, `h`, `d`, `w`),
    /// such as `1h30m`; nil when it is not one (or is zero, or absurdly long).
    public static func seconds(in text: String) -> Int64? {
        var total: Int64 = 0
        var number: Int64?
        for character in text.lowercased() {
            if let digit = character.wholeNumberValue, character.isASCII {
                let (product, overflow) = (number ?? 0).multipliedReportingOverflow(by: 10)
                guard !overflow, product < 1_000_000_000 else { return nil }
                number = product + Int64(digit)
                continue
            }
            let unit: Int64
            switch character {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            case "d": unit = 86_400
            case "w": unit = 604_800
            default: return nil
            }
            guard let value = number else { return nil }
            total += value * unit
            number = nil
        }
        guard number == nil, total > 0, total <= 10 * 365 * 86_400 else { return nil }
        return total
    }
}
