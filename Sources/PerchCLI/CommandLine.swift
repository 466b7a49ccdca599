/// The parsed words of a command line: a subcommand, `--flag value` options and arguments.
public struct ParsedArguments: Sendable {
    public var command: String?
    public var options: [String: String] = [:]
    public var flags: Set<String> = []
    public var positional: [String] = []

    /// Parses `arguments` (without the program name). `valued` lists the options that take a value.
    public init(_ arguments: [String], valued: Set<String>) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            if word == "--" {
                positional += arguments[(index + 1)...]
                break
            }
            if word.hasPrefix("--") {
                var name = String(word.dropFirst(2))
                var value: String?
                if let equals = name.firstIndex(of: "=") {
                    value = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
                if valued.contains(name) {
                    if value == nil {
                        index += 1
                        guard index < arguments.count else { throw UsageError("--\(name) needs a value") }
                        value = arguments[index]
                    }
                    options[name] = value
                } else {
                    guard value == nil else { throw UsageError("--\(name) takes no value") }
                    flags.insert(name)
                }
            } else if command == nil {
                command = word
            } else {
                positional.append(word)
            }
            index += 1
        }
    }
}

/// A mistake on the command line: printed with the usage, exit code 64.
public struct UsageError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
