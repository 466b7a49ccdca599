import CYAML

/// Loads one YAML document into a located node tree, on libyaml's event API.
///
/// Beyond what libyaml checks, the loader reports, each at its own position: an alias to an unknown
/// anchor, a duplicate key, a non-scalar key, a second document, nesting deeper than
/// ``maximumDepth``, aliases expanding past ``maximumExpandedNodes``, and `${VAR}` without a value
/// in ``environment``. Substitution happens in scalar values, not in keys: `${VAR}` takes the
/// variable, `${VAR:-default}` falls back to the default when it is unset or empty, `$$` is a
/// literal `$`.
public struct YAMLLoader: Sendable {
    public var environment: [String: String]
    public var maximumDepth: Int
    public var maximumExpandedNodes: Int

    public init(environment: [String: String] = [:], maximumDepth: Int = 128, maximumExpandedNodes: Int = 100_000) {
        self.environment = environment
        self.maximumDepth = maximumDepth
        self.maximumExpandedNodes = maximumExpandedNodes
    }

    /// The outcome of loading a file: the root node (nil when the syntax was broken) and every
    /// finding. An empty file yields a null root.
    public struct Result: Sendable {
        public var root: YAMLNode?
        public var findings: [Finding]
    }

    public func load(_ text: String, file: String) -> Result {
        load(Array(text.utf8), file: file)
    }

    public func load(_ bytes: [UInt8], file: String) -> Result {
        var builder = TreeBuilder(loader: self, file: file)
        // libyaml needs a stable parser address and input bytes alive for the whole parse.
        let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
        defer { parser.deallocate() }
        guard yaml_parser_initialize(parser) == 1 else {
            let here = SourceLocation(file: file, line: 1, column: 1)
            return Result(root: nil, findings: [Finding(location: here, message: "out of memory")])
        }
        defer { yaml_parser_delete(parser) }
        let padded = bytes + [0]
        return padded.withUnsafeBufferPointer { buffer in
            yaml_parser_set_input_string(parser, buffer.baseAddress, bytes.count)
            var event = yaml_event_t()
            while true {
                guard yaml_parser_parse(parser, &event) == 1 else {
                    builder.findings.append(Self.parserFinding(parser.pointee, file: file, bytes: bytes))
                    return Result(root: nil, findings: builder.findings)
                }
                let done = event.type == YAML_STREAM_END_EVENT
                let keepGoing = builder.handle(event)
                yaml_event_delete(&event)
                if done || !keepGoing { break }
            }
            // Duplicate keys and unset variables leave a usable tree, so the decoder can report more.
            let root = builder.aborted ? nil : (builder.root ?? builder.nullRoot)
            return Result(root: root, findings: builder.findings)
        }
    }

    static func parserFinding(_ parser: yaml_parser_t, file: String, bytes: [UInt8]) -> Finding {
        let problem = parser.problem.map { String(cString: $0) } ?? "invalid YAML"
        let mark = parser.problem_mark
        var message = problem
        if mark.index < bytes.count, bytes[Int(mark.index)] == UInt8(ascii: "\t") {
            message += " (a tab; YAML indents with spaces only)"
        } else if let context = parser.context,
            parser.context_mark.line != mark.line || parser.context_mark.column != mark.column
        {
            message +=
                " (\(String(cString: context)) at line \(parser.context_mark.line + 1), column "
                + "\(parser.context_mark.column + 1))"
        }
        let location = SourceLocation(file: file, line: Int(mark.line) + 1, column: Int(mark.column) + 1)
        return Finding(location: location, message: message)
    }
}

/// Builds the node tree from parser events with an explicit stack (no recursion on input depth).
private struct TreeBuilder {
    enum Frame {
        case sequence(start: SourceLocation, anchor: String?, items: [YAMLNode])
        case mapping(start: SourceLocation, anchor: String?, pairs: [YAMLPair], pendingKey: YAMLNode?)
    }

    let loader: YAMLLoader
    let file: String
    var stack: [Frame] = []
    var anchors: [String: YAMLNode] = [:]
    var root: YAMLNode?
    var findings: [Finding] = []
    var documents = 0
    var expanded = 0
    var aborted = false

    init(loader: YAMLLoader, file: String) {
        self.loader = loader
        self.file = file
    }

    var nullRoot: YAMLNode { YAMLNode(.scalar("", isPlain: true), at: SourceLocation(file: file, line: 1, column: 1)) }

    func location(_ mark: yaml_mark_t) -> SourceLocation {
        SourceLocation(file: file, line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }

    mutating func fail(_ message: String, at location: SourceLocation) -> Bool {
        findings.append(Finding(location: location, message: message))
        aborted = true
        return false
    }

    /// Handles one event; false stops the parse.
    mutating func handle(_ event: yaml_event_t) -> Bool {
        let start = location(event.start_mark)
        switch event.type {
        case YAML_DOCUMENT_START_EVENT:
            documents += 1
            if documents > 1 {
                return fail("a file holds one YAML document; a second one starts here", at: start)
            }
        case YAML_SCALAR_EVENT:
            let scalar = event.data.scalar
            let text = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
            let isPlain = scalar.style == YAML_PLAIN_SCALAR_STYLE
            let isKey = isExpectingKey
            var value = text
            if !isKey {
                value = substitute(text, at: start, end: location(event.end_mark), quoted: !isPlain && isQuoted(scalar))
            }
            let node = YAMLNode(.scalar(value, isPlain: isPlain), at: start)
            remember(anchor: scalar.anchor, node)
            return add(node)
        case YAML_ALIAS_EVENT:
            let name = String(cString: event.data.alias.anchor)
            guard let node = anchors[name] else {
                return fail("unknown alias '*\(name)': no anchor '&\(name)' is defined before it", at: start)
            }
            expanded += node.weight
            if expanded > loader.maximumExpandedNodes {
                return fail("aliases expand to more than \(loader.maximumExpandedNodes) nodes", at: start)
            }
            return add(node)
        case YAML_SEQUENCE_START_EVENT:
            guard stack.count < loader.maximumDepth else {
                return fail("nesting is deeper than \(loader.maximumDepth) levels", at: start)
            }
            stack.append(.sequence(start: start, anchor: anchorName(event.data.sequence_start.anchor), items: []))
        case YAML_MAPPING_START_EVENT:
            guard stack.count < loader.maximumDepth else {
                return fail("nesting is deeper than \(loader.maximumDepth) levels", at: start)
            }
            stack.append(
                .mapping(start: start, anchor: anchorName(event.data.mapping_start.anchor), pairs: [], pendingKey: nil)
            )
        case YAML_SEQUENCE_END_EVENT:
            guard case .sequence(let begin, let anchor, let items)? = stack.popLast() else { return true }
            let node = YAMLNode(.sequence(items), at: begin)
            if let anchor { anchors[anchor] = node }
            return add(node)
        case YAML_MAPPING_END_EVENT:
            guard case .mapping(let begin, let anchor, let pairs, _)? = stack.popLast() else { return true }
            guard let merged = merge(pairs) else { return false }
            let node = YAMLNode(.mapping(merged), at: begin)
            if let anchor { anchors[anchor] = node }
            return add(node)
        default:
            break
        }
        return true
    }

    var isExpectingKey: Bool {
        if case .mapping(_, _, _, let pendingKey)? = stack.last { return pendingKey == nil }
        return false
    }

    func isQuoted(_ scalar: yaml_event_t.__Unnamed_union_data.__Unnamed_struct_scalar) -> Bool {
        scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE || scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE
    }

    func anchorName(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        pointer.map { String(cString: $0) }
    }

    mutating func remember(anchor: UnsafeMutablePointer<yaml_char_t>?, _ node: YAMLNode) {
        if let name = anchorName(anchor) { anchors[name] = node }
    }

    mutating func add(_ node: YAMLNode) -> Bool {
        guard let top = stack.popLast() else {
            root = node
            return true
        }
        switch top {
        case .sequence(let start, let anchor, var items):
            items.append(node)
            stack.append(.sequence(start: start, anchor: anchor, items: items))
        case .mapping(let start, let anchor, var pairs, let pendingKey):
            if let key = pendingKey {
                pairs.append(YAMLPair(key: key, value: node))
                stack.append(.mapping(start: start, anchor: anchor, pairs: pairs, pendingKey: nil))
            } else {
                guard node.scalar != nil else {
                    stack.append(top)
                    return fail("a key must be a plain value, not \(node.kindDescription)", at: node.location)
                }
                if let first = pairs.first(where: { $0.key.scalar == node.scalar }) {
                    findings.append(
                        Finding(
                            location: node.location,
                            message:
                                "duplicate key '\(node.scalar!)' (first defined at line \(first.key.location.line), "
                                + "column \(first.key.location.column))"
                        )
                    )
                }
                stack.append(.mapping(start: start, anchor: anchor, pairs: pairs, pendingKey: node))
            }
        }
        return true
    }

    /// Applies merge keys: `<<: *base` or `<<: [*a, *b]`; keys written explicitly win, and among
    /// merged mappings the first one listed wins.
    mutating func merge(_ pairs: [YAMLPair]) -> [YAMLPair]? {
        guard pairs.contains(where: isMergeKey) else { return pairs }
        var explicit = pairs.filter { !isMergeKey($0) }
        var present = Set(explicit.compactMap { $0.key.scalar })
        for pair in pairs where isMergeKey(pair) {
            let sources: [YAMLNode]
            switch pair.value.content {
            case .mapping: sources = [pair.value]
            case .sequence(let items): sources = items
            case .scalar:
                _ = fail(
                    "'<<' merges a mapping or a list of mappings, not \(pair.value.kindDescription)",
                    at: pair.value.location)
                return nil
            }
            for source in sources {
                guard case .mapping(let merged) = source.content else {
                    _ = fail(
                        "'<<' merges a mapping or a list of mappings, not \(source.kindDescription)",
                        at: source.location)
                    return nil
                }
                for item in merged where !present.contains(item.key.scalar ?? "") {
                    present.insert(item.key.scalar ?? "")
                    explicit.append(item)
                }
            }
        }
        return explicit
    }

    func isMergeKey(_ pair: YAMLPair) -> Bool {
        if case .scalar("<<", true) = pair.key.content { return true }
        return false
    }

    /// Replaces `${VAR}` and `${VAR:-default}`; reports each unset variable at its own column when
    /// the scalar sits on one line.
    mutating func substitute(_ text: String, at start: SourceLocation, end: SourceLocation, quoted: Bool) -> String {
        guard text.contains("$") else { return text }
        var output = ""
        var index = text.startIndex
        var column = 0
        while index < text.endIndex {
            let character = text[index]
            if character == "$" {
                let next = text.index(after: index)
                if next < text.endIndex, text[next] == "$" {
                    output.append("$")
                    index = text.index(after: next)
                    column += 2
                    continue
                }
                if next < text.endIndex, text[next] == "{", let close = text[next...].firstIndex(of: "}") {
                    let body = String(text[text.index(after: next)..<close])
                    let (name, fallback) = split(body)
                    let width = text.distance(from: index, to: close) + 1
                    if let value = loader.environment[name], !(fallback != nil && value.isEmpty) {
                        output += value
                    } else if let fallback {
                        output += fallback
                    } else {
                        var here = start
                        if start.line == end.line { here.column += column + (quoted ? 1 : 0) }
                        let reason =
                            isValidName(name)
                            ? "environment variable '\(name)' is not set (write ${\(name):-default} to give a default)"
                            : "'${\(body)}' is not a valid variable reference"
                        findings.append(Finding(location: here, message: reason))
                    }
                    index = text.index(after: close)
                    column += width
                    continue
                }
            }
            output.append(character)
            index = text.index(after: index)
            column += 1
        }
        return output
    }

    func split(_ body: String) -> (String, String?) {
        var index = body.startIndex
        while index < body.endIndex {
            let next = body.index(after: index)
            if body[index] == ":", next < body.endIndex, body[next] == "-" {
                return (String(body[..<index]), String(body[body.index(after: next)...]))
            }
            index = next
        }
        return (body, nil)
    }

    func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic)
        else { return false }
        return name.unicodeScalars.allSatisfy {
            $0 == "_" || ($0.isASCII && $0.properties.isAlphabetic) || ("0"..."9").contains($0)
        }
    }
}
