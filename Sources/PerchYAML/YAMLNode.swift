/// A YAML node with the position it was written at.
///
/// Aliases are already resolved (an alias is a copy of its anchor's node, located at the anchor),
/// merge keys (`<<`) are already applied and `${VAR}` substitutions already made.
public struct YAMLNode: Sendable, Hashable {
    public enum Content: Sendable, Hashable {
        /// A scalar; `isPlain` is false for quoted and block scalars, which are always strings.
        case scalar(String, isPlain: Bool)
        case sequence([YAMLNode])
        case mapping([YAMLPair])
    }

    public var content: Content
    public var location: SourceLocation

    public init(_ content: Content, at location: SourceLocation) {
        self.content = content
        self.location = location
    }

    /// The scalar's text, or nil for a collection.
    public var scalar: String? {
        if case .scalar(let text, _) = content { return text }
        return nil
    }

    /// True for `~`, `null`, `Null`, `NULL` and the empty plain scalar (YAML 1.2 core schema).
    public var isNull: Bool {
        guard case .scalar(let text, let isPlain) = content, isPlain else { return false }
        return text.isEmpty || text == "~" || text == "null" || text == "Null" || text == "NULL"
    }

    /// The value of `key` in a mapping, or nil.
    public subscript(key: String) -> YAMLNode? {
        guard case .mapping(let pairs) = content else { return nil }
        return pairs.first { $0.key.scalar == key }?.value
    }

    /// How a type mismatch names this node: "a string", "a list", "a mapping", "null", ...
    public var kindDescription: String {
        switch content {
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        case .scalar(let text, let isPlain):
            if isNull { return "null" }
            guard isPlain else { return "a string" }
            if YAMLScalar.bool(text) != nil { return "a boolean" }
            if YAMLScalar.integer(text) != nil || YAMLScalar.double(text) != nil { return "a number" }
            return "a string"
        }
    }

    /// The number of nodes in this subtree, counting itself.
    var weight: Int {
        switch content {
        case .scalar: return 1
        case .sequence(let items): return items.reduce(1) { $0 + $1.weight }
        case .mapping(let pairs): return pairs.reduce(1) { $0 + $1.key.weight + $1.value.weight }
        }
    }
}

/// A key and its value in a mapping, both located.
public struct YAMLPair: Sendable, Hashable {
    public var key: YAMLNode
    public var value: YAMLNode

    public init(key: YAMLNode, value: YAMLNode) {
        self.key = key
        self.value = value
    }
}

/// Resolution of plain scalars by the YAML 1.2 core schema: `yes`/`no`/`on`/`off` are strings.
public enum YAMLScalar {
    public static func bool(_ text: String) -> Bool? {
        switch text {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default: return nil
        }
    }

    public static func integer(_ text: String) -> Int64? {
        var body = Substring(text)
        var negative = false
        if body.first == "-" || body.first == "+" {
            negative = body.first == "-"
            body = body.dropFirst()
        }
        guard !body.isEmpty else { return nil }
        let magnitude: Int64?
        if body.hasPrefix("0x") {
            magnitude = Int64(body.dropFirst(2), radix: 16)
        } else if body.hasPrefix("0o") {
            magnitude = Int64(body.dropFirst(2), radix: 8)
        } else if body.allSatisfy({ $0.isASCII && $0.isNumber }) {
            magnitude = Int64(body)
        } else {
            magnitude = nil
        }
        guard let magnitude else { return nil }
        return negative ? -magnitude : magnitude
    }

    public static func double(_ text: String) -> Double? {
        switch text {
        case ".inf", ".Inf", ".INF", "+.inf": return .infinity
        case "-.inf", "-.Inf", "-.INF": return -.infinity
        case ".nan", ".NaN", ".NAN": return .nan
        default: break
        }
        guard let first = text.first, first.isNumber || first == "-" || first == "+" || first == "." else {
            return nil
        }
        return Double(text)
    }
}
