import Foundation

/// The parsed words of a command line: a subcommand, `--option value` options and arguments.
public struct ParsedArguments: Sendable {
    public var command: String?
    public var options: [String: String] = [:]
    /// `--help` or `-h` was given: the command prints its usage and does nothing else.
    public var wantsHelp = false
    public var positional: [String] = []
    /// The options given that take no value (`--notifications`).
    public var flags: Set<String> = []

    /// Parses `arguments` (without the program name). `valued` lists the options, each taking a
    /// value, and `flags` those that take none; any other `--word` is refused, and so are more than
    /// `positional` arguments after the command (a word that would otherwise be ignored, such as a
    /// config path given without `--config`).
    public init(_ arguments: [String], valued: Set<String>, flags known: Set<String> = [], positional allowed: Int = 0)
        throws(UsageError)
    {
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            if word == "--" {
                positional += arguments[(index + 1)...]
                break
            }
            if word == "--help" || word == "-h" {
                wantsHelp = true
            } else if word.hasPrefix("--") {
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
                } else if known.contains(name), value == nil {
                    flags.insert(name)
                } else {
                    throw UsageError("unknown option --\(name)")
                }
            } else if command == nil {
                command = word
            } else {
                positional.append(word)
            }
            index += 1
        }
        if positional.count > allowed, !wantsHelp {
            let hint = allowed == 1 ? " (quote a text with spaces: \"hello there\")" : ""
            throw UsageError("unexpected argument '\(positional[allowed])'\(hint)")
        }
    }
}

extension ParsedArguments {
    /// A command's words parsed, or nil once they were answered: `--help` prints the usage (exit
    /// 0), a mistake is printed with it (exit 64). What every entry point of `perch` does first.
    static func forCommand(
        _ arguments: [String], valued: Set<String>, flags: Set<String> = [], positional: Int = 0,
        exitCode: inout Int32,
        print write: (String) -> Void = { print($0) },
        printError: (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
    ) -> ParsedArguments? {
        do {
            let parsed = try ParsedArguments(arguments, valued: valued, flags: flags, positional: positional)
            guard parsed.wantsHelp else { return parsed }
            write(parsed.command.flatMap(Perch.usage(of:)) ?? Perch.usage)
            exitCode = 0
        } catch {
            printError("perch: \(error)\n\n\(Perch.usage)")
            exitCode = 64
        }
        return nil
    }
}

/// A mistake on the command line: printed with the usage, exit code 64.
public struct UsageError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
