import PerchYAML

/// Decodes a located YAML tree into `Decodable` configuration types and collects every finding.
///
/// A wrong or missing value does not stop decoding: it becomes a finding at its position, a
/// placeholder takes its place (``ConfigPlaceholder``) and the decoder goes on, so one run reports
/// all the mistakes of a file. Keys a type never asked for are reported as unknown, with the
/// closest known key as a suggestion. The positions of all decoded values are kept in
/// ``Result/locations`` for the validation that follows decoding.
public struct ConfigDecoder {
    public init() {}

    public struct Result<Value> {
        public var value: Value?
        public var findings: [Finding]
        public var locations: LocationIndex
    }

    public func decode<T: Decodable>(_ type: T.Type, from root: YAMLNode) -> Result<T> {
        let session = DecodingSession(file: root.location.file)
        let value = try? session.decode(type, node: root, path: [], quiet: false)
        return Result(value: value, findings: session.findings, locations: session.locations)
    }
}

/// Where each decoded value was written, by key path (`rules[0].when.text_matches`).
public struct LocationIndex: Sendable {
    public var file: String
    var values: [String: SourceLocation] = [:]
    var keys: [String: SourceLocation] = [:]

    public init(file: String) { self.file = file }

    /// The position of the value at `path`, or of the closest ancestor that was written.
    public func location(of path: String) -> SourceLocation {
        var current = path
        while true {
            if let location = values[current] { return location }
            guard let cut = current.lastIndex(where: { $0 == "." || $0 == "[" }) else { break }
            current = String(current[..<cut])
        }
        return values[""] ?? SourceLocation(file: file, line: 1, column: 1)
    }

    /// The position of the key at `path` (where a mapping key was written), else of its value.
    public func keyLocation(of path: String) -> SourceLocation { keys[path] ?? location(of: path) }

    /// Whether a value was written at `path`.
    public func contains(_ path: String) -> Bool { values[path] != nil }

    /// The path of the value written at `location` (the last one to start on its line at or before
    /// its column, the innermost of those starting together), if a decoded value is there: where a
    /// finding of the YAML loader (an unset variable inside a value) belongs.
    func path(at location: SourceLocation) -> String? {
        values.filter {
            $0.value.file == location.file && $0.value.line == location.line && $0.value.column <= location.column
        }
        .max { ($0.value.column, $0.key.count) < ($1.value.column, $1.key.count) }?.key
    }
}

/// Thrown past a value whose finding is already recorded.
struct AlreadyReported: Error {}

/// A validation failure a configuration type throws from `init(from:)`; it becomes a finding at
/// the position of the value being decoded.
public struct ConfigValueError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

final class DecodingSession {
    let file: String
    var findings: [Finding] = []
    var locations: LocationIndex

    init(file: String) {
        self.file = file
        self.locations = LocationIndex(file: file)
    }

    func report(_ message: String, at location: SourceLocation, path: [any CodingKey]) {
        findings.append(Finding(location: location, path: renderKeyPath(path), message: message))
    }

    func decode<T: Decodable>(_ type: T.Type, node: YAMLNode?, path: [any CodingKey], quiet: Bool) throws -> T {
        if let node, !quiet { locations.values[renderKeyPath(path)] = node.location }
        if let primitive = try decodePrimitive(type, node: node, path: path, quiet: quiet) { return primitive }
        let decoder = NodeDecoder(session: self, node: node, codingPath: path, quiet: quiet)
        do {
            let value = try T(from: decoder)
            if !quiet, let node { reportUnknownKeys(decoder, node: node) }
            return value
        } catch is AlreadyReported {
            throw AlreadyReported()
        } catch {
            if !quiet {
                var message = Self.describe(error)
                if let choices = T.self as? any ConfigChoiceNames.Type, let text = node?.scalar {
                    message = "unknown value '\(text)'"
                    if let close = suggestion(for: text, among: choices.choiceNames) {
                        message += "; did you mean '\(close)'?"
                    }
                    message += " (expected one of: \(choices.choiceNames.joined(separator: ", ")))"
                }
                report(message, at: node?.location ?? fallbackLocation(path), path: path)
            }
            throw AlreadyReported()
        }
    }

    func fallbackLocation(_ path: [any CodingKey]) -> SourceLocation {
        locations.location(of: renderKeyPath(path))
    }

    /// A stand-in value after a finding, so decoding can go on.
    func placeholder<T: Decodable>(_ type: T.Type, path: [any CodingKey]) throws -> T {
        if let known = T.self as? any ConfigPlaceholder.Type, let value = known.placeholder as? T { return value }
        if let value = try? decode(type, node: nil, path: path, quiet: true) { return value }
        if let cases = T.self as? any CaseIterable.Type, let first = firstCase(of: cases) as? T { return first }
        throw AlreadyReported()
    }

    private func firstCase<C: CaseIterable>(of type: C.Type) -> Any? { C.allCases.first }

    func reportUnknownKeys(_ decoder: NodeDecoder, node: YAMLNode) {
        guard decoder.usedKeyedContainer, case .mapping(let pairs) = node.content else { return }
        let known = decoder.requestedKeys
        for pair in pairs {
            guard let key = pair.key.scalar, !known.contains(key) else { continue }
            var message = "unknown key '\(key)'"
            if let close = suggestion(for: key, among: known) {
                message += "; did you mean '\(close)'?"
            } else if !known.isEmpty, known.count <= 16 {
                message += " (known keys: \(known.sorted().joined(separator: ", ")))"
            }
            report(message, at: pair.key.location, path: decoder.codingPath + [PathKey(stringValue: key)])
        }
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as ConfigValueError: return error.description
        case DecodingError.dataCorrupted(let context): return context.debugDescription
        case DecodingError.typeMismatch(_, let context): return context.debugDescription
        case DecodingError.valueNotFound(_, let context): return context.debugDescription
        case DecodingError.keyNotFound(let key, _): return "missing required key '\(key.stringValue)'"
        default: return String(describing: error)
        }
    }

    /// Strings, numbers and booleans, read from scalars with YAML 1.2 core resolution.
    func decodePrimitive<T>(_ type: T.Type, node: YAMLNode?, path: [any CodingKey], quiet: Bool) throws -> T? {
        let expectation: String
        let converted: Any?
        switch type {
        case is String.Type:
            expectation = "a string"
            converted = node.flatMap { $0.isNull ? nil : $0.scalar }
        case is Bool.Type:
            expectation = "true or false"
            converted = node?.scalar.flatMap(YAMLScalar.bool)
        case is Int.Type:
            expectation = "an integer"
            converted = node?.scalar.flatMap(YAMLScalar.integer).flatMap { Int(exactly: $0) }
        case is Int64.Type:
            expectation = "an integer"
            converted = node?.scalar.flatMap(YAMLScalar.integer)
        case is UInt16.Type:
            expectation = "an integer from 0 to 65535"
            converted = node?.scalar.flatMap(YAMLScalar.integer).flatMap { UInt16(exactly: $0) }
        case is Double.Type:
            expectation = "a number"
            converted = node?.scalar.flatMap { YAMLScalar.integer($0).map(Double.init) ?? YAMLScalar.double($0) }
        default:
            return nil
        }
        if let converted = converted as? T { return converted }
        if quiet || node == nil { return (T.self as? any ConfigPlaceholder.Type)?.placeholder as? T }
        report("expected \(expectation), found \(Self.found(node!))", at: node!.location, path: path)
        throw AlreadyReported()
    }

    static func found(_ node: YAMLNode) -> String {
        guard case .scalar(let text, _) = node.content, !node.isNull else { return node.kindDescription }
        let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
        return "\(node.kindDescription) '\(shown)'"
    }
}

/// The `Decoder` over one node. A nil node is an absent value, decoded quietly into placeholders.
final class NodeDecoder: Decoder {
    let session: DecodingSession
    let node: YAMLNode?
    let codingPath: [any CodingKey]
    let quiet: Bool
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var requestedKeys: Set<String> = []
    var usedKeyedContainer = false

    init(session: DecodingSession, node: YAMLNode?, codingPath: [any CodingKey], quiet: Bool) {
        self.session = session
        self.node = node
        self.codingPath = codingPath
        self.quiet = quiet
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        var pairs: [YAMLPair] = []
        var quietHere = quiet
        if let node {
            switch node.content {
            case .mapping(let items):
                pairs = items
            default:
                if !node.isNull {
                    guard quiet else {
                        session.report(
                            "expected a mapping, found \(DecodingSession.found(node))", at: node.location,
                            path: codingPath)
                        throw AlreadyReported()
                    }
                }
                quietHere = quiet || !node.isNull ? true : quiet
            }
        }
        usedKeyedContainer = true
        return KeyedDecodingContainer(NodeKeyedContainer<Key>(decoder: self, pairs: pairs, quiet: quietHere))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        var items: [YAMLNode] = []
        if let node {
            switch node.content {
            case .sequence(let list):
                items = list
            default:
                if !node.isNull && !quiet {
                    session.report(
                        "expected a list, found \(DecodingSession.found(node))", at: node.location, path: codingPath)
                    throw AlreadyReported()
                }
            }
        }
        return NodeUnkeyedContainer(decoder: self, items: items)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { NodeSingleValueContainer(decoder: self) }
}

struct NodeKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: NodeDecoder
    let pairs: [YAMLPair]
    let quiet: Bool

    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        pairs.compactMap { pair in
            guard let name = pair.key.scalar else { return nil }
            decoder.requestedKeys.insert(name)
            return Key(stringValue: name)
        }
    }

    func pair(_ key: Key) -> YAMLPair? {
        decoder.requestedKeys.insert(key.stringValue)
        return pairs.first { $0.key.scalar == key.stringValue }
    }

    func contains(_ key: Key) -> Bool { pair(key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let found = pair(key) else { return true }
        // A null written here is a value written here (the standard library's `decodeIfPresent`
        // of a String or an Int asks this first): its findings, such as an unset variable, name it.
        if found.value.isNull, !quiet {
            let path = renderKeyPath(codingPath + [key])
            decoder.session.locations.keys[path] = found.key.location
            decoder.session.locations.values[path] = found.value.location
        }
        return found.value.isNull
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let path = codingPath + [key]
        guard let found = pair(key), !(found.value.isNull && !(T.self is any ConfigPlaceholder.Type)) else {
            if !quiet {
                let location = decoder.node?.location ?? decoder.session.fallbackLocation(codingPath)
                decoder.session.report("missing required key '\(key.stringValue)'", at: location, path: codingPath)
            }
            return try decoder.session.placeholder(type, path: path)
        }
        if !quiet { decoder.session.locations.keys[renderKeyPath(path)] = found.key.location }
        do {
            return try decoder.session.decode(type, node: found.value, path: path, quiet: quiet)
        } catch is AlreadyReported {
            return try decoder.session.placeholder(type, path: path)
        }
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        let path = codingPath + [key]
        guard let found = pair(key) else { return nil }
        if !quiet { decoder.session.locations.keys[renderKeyPath(path)] = found.key.location }
        if found.value.isNull {
            if !quiet { decoder.session.locations.values[renderKeyPath(path)] = found.value.location }
            return nil
        }
        do {
            return try decoder.session.decode(type, node: found.value, path: path, quiet: quiet)
        } catch is AlreadyReported {
            return nil
        }
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try NodeDecoder(session: decoder.session, node: pair(key)?.value, codingPath: codingPath + [key], quiet: quiet)
            .container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try NodeDecoder(session: decoder.session, node: pair(key)?.value, codingPath: codingPath + [key], quiet: quiet)
            .unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { decoder }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        NodeDecoder(session: decoder.session, node: pair(key)?.value, codingPath: codingPath + [key], quiet: quiet)
    }
}

struct NodeUnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: NodeDecoder
    let items: [YAMLNode]
    var currentIndex = 0

    init(decoder: NodeDecoder, items: [YAMLNode]) {
        self.decoder = decoder
        self.items = items
    }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        guard !isAtEnd else { throw AlreadyReported() }
        let path = codingPath + [PathKey(intValue: currentIndex)]
        let node = items[currentIndex]
        currentIndex += 1
        do {
            return try decoder.session.decode(type, node: node, path: path, quiet: decoder.quiet)
        } catch is AlreadyReported {
            return try decoder.session.placeholder(type, path: path)
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try nextDecoder().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try nextDecoder().unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try nextDecoder() }

    private mutating func nextDecoder() throws -> NodeDecoder {
        guard !isAtEnd else { throw AlreadyReported() }
        defer { currentIndex += 1 }
        return NodeDecoder(
            session: decoder.session, node: items[currentIndex],
            codingPath: codingPath + [PathKey(intValue: currentIndex)], quiet: decoder.quiet)
    }
}

struct NodeSingleValueContainer: SingleValueDecodingContainer {
    let decoder: NodeDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { decoder.node?.isNull ?? true }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if let value = try decoder.session.decodePrimitive(
            type, node: decoder.node, path: codingPath, quiet: decoder.quiet)
        {
            return value
        }
        // Through the session, so a wrapped value's mistake is told as its own (`sender_scope:
        // boss` is an unknown scope with the choices, not Swift's "Cannot initialize").
        return try decoder.session.decode(type, node: decoder.node, path: codingPath, quiet: decoder.quiet)
    }
}

extension Decoder {
    /// The YAML node being decoded, for types that accept more than one shape (a scalar or a
    /// mapping); nil outside the configuration decoder or for an absent value.
    public var configNode: YAMLNode? { (self as? NodeDecoder)?.node }
}

extension ConfigDecoder {
    /// Decodes `type` from an empty mapping: its defaults, or an error when it has required keys.
    public static func decodeEmpty<T: Decodable>(_ type: T.Type) throws -> T {
        let empty = YAMLNode(.mapping([]), at: SourceLocation(file: "", line: 1, column: 1))
        let result = ConfigDecoder().decode(type, from: empty)
        guard result.findings.isEmpty, let value = result.value else {
            throw ConfigValueError(result.findings.first?.message ?? "cannot decode")
        }
        return value
    }
}
