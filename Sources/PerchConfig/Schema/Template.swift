/// A reply text with placeholders, parsed once at load time: `Hi {sender.name}`.
///
/// Placeholders: `{sender.uid}`, `{sender.name}`, `{message.id}`, `{message.text}`,
/// `{parent.id}`, `{parent.text}`, `{group.guid}`, `{strings.KEY}`, `{args}` (a command's
/// arguments), `{webhook.FIELD}` (a webhook's JSON body), `{reaction}` (a reaction trigger's
/// reaction), `{actor.uid}`, `{actor.name}` (who pinned, unpinned, edited or deleted), and
/// `{NAME}` for a named capture of
/// `text_matches`. `{{` and `}}` are literal braces.
public struct Template: Sendable, Equatable, Decodable, ConfigPlaceholder {
    public enum Part: Sendable, Equatable {
        case literal(String)
        case variable([String])
    }

    public var source: String
    public var parts: [Part]

    public static var placeholder: Template { Template(source: "", parts: []) }

    /// The roots a placeholder may start with; any other single name is a capture.
    public static let roots: Set<String> = [
        "sender", "message", "parent", "group", "strings", "webhook", "args", "reaction", "actor",
    ]

    /// A text written out as it is: no placeholders read in it.
    public static func literal(_ text: String) -> Template { Template(source: text, parts: [.literal(text)]) }

    init(source: String, parts: [Part]) {
        self.source = source
        self.parts = parts
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        self = try Template.parse(text)
        // Every template is a message's text, which the chat service refuses when blank.
        if variables.isEmpty, text.allSatisfy(\.isWhitespace) {
            throw ConfigValueError("the text is empty, and a message needs text (ERR_EMPTY_MESSAGE_TEXT)")
        }
    }

    /// Parses `text`.
    /// - Throws: ``ConfigValueError`` for an unclosed or empty placeholder.
    public static func parse(_ text: String) throws(ConfigValueError) -> Template {
        var parts: [Part] = []
        var literal = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            let next = text.index(after: index)
            if character == "{" || character == "}", next < text.endIndex, text[next] == character {
                literal.append(character)
                index = text.index(after: next)
                continue
            }
            if character == "{" {
                guard let close = text[next...].firstIndex(of: "}") else {
                    throw ConfigValueError("unclosed '{' in template (write '{{' for a literal brace)")
                }
                let name = text[next..<close].trimmingSpaces
                guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." }) else {
                    throw ConfigValueError("'{\(name)}' is not a placeholder (write '{{' for a literal brace)")
                }
                if !literal.isEmpty { parts.append(.literal(literal)) }
                literal = ""
                parts.append(.variable(name.split(separator: ".").map(String.init)))
                index = text.index(after: close)
                continue
            }
            if character == "}" { throw ConfigValueError("unmatched '}' in template (write '}}' for a literal brace)") }
            literal.append(character)
            index = next
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        return Template(source: text, parts: parts)
    }

    /// The placeholders, as dotted names.
    public var variables: [[String]] {
        parts.compactMap { part in
            if case .variable(let path) = part { return path }
            return nil
        }
    }

    /// Renders with `lookup` giving each placeholder's value (nil renders as empty).
    public func render(_ lookup: ([String]) -> String?) -> String {
        var output = ""
        for part in parts {
            switch part {
            case .literal(let text): output += text
            case .variable(let path): output += lookup(path) ?? ""
            }
        }
        return output
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
