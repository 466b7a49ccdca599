import PerchChat
import PerchConfig

/// A command's typed arguments (a rule's `usage`), parsed and checked before its rule runs.
extension BotRuntime {
    /// Why a command's text does not fit its usage, in a person's words ("'soon' is not a duration").
    struct UsageProblem: Error, Sendable, Hashable {
        var text: String
    }

    /// Parses the command's arguments for every usage its rules declare, once each: only for a
    /// command that has a rule with a `usage`, so other messages pay nothing.
    func parseArguments(_ facts: inout Facts) async {
        guard let command = facts.command else { return }
        for rule in bot.rules {
            guard let usage = rule.usage, case .command(let name) = rule.trigger, name == command.name,
                facts.arguments[usage] == nil
            else { continue }
            do {
                facts.arguments[usage] = .success(
                    try await arguments(command.args, usage, asker: facts.event.senderUid ?? identity.uid))
            } catch {
                facts.arguments[usage] = .failure(error)
            }
        }
    }

    /// The values of `text`'s arguments by name (and `NAME.seconds` for a duration).
    /// - Throws: ``UsageProblem`` for a missing or unexpected word, a value not of its kind, or a
    ///   user or group that does not exist (a group `asker` may not see does not, for them).
    func arguments(_ text: String, _ usage: CommandUsage, asker: String) async throws(UsageProblem) -> [String: String]
    {
        var values: [String: String] = [:]
        var rest = Substring(text)
        func nextWord() -> Substring? {
            rest = rest.drop { $0.isWhitespace }
            guard !rest.isEmpty else { return nil }
            let word = rest.prefix { !$0.isWhitespace }
            rest = rest[word.endIndex...]
            return word
        }
        for parameter in usage.parameters {
            let value: Substring?
            if parameter.kind == .rest {
                let remaining = rest.drop { $0.isWhitespace }
                let end = remaining.lastIndex { !$0.isWhitespace }.map { remaining.index(after: $0) }
                value = end.map { remaining[..<$0] }
                rest = ""
            } else {
                value = nextWord()
            }
            guard let value else {
                if parameter.isOptional { continue }
                throw UsageProblem(text: "\(parameter.written) is missing")
            }
            values[parameter.name] = try await checked(String(value), parameter, asker: asker)
            if parameter.kind == .duration, let seconds = CommandUsage.seconds(in: String(value)) {
                values[parameter.name + ".seconds"] = String(seconds)
            }
        }
        if let extra = nextWord() { throw UsageProblem(text: "'\(extra)' is one word too many") }
        return values
    }

    /// `word` as the value of `parameter`: a uid, a guid, a message id, a number; as written else.
    private func checked(_ word: String, _ parameter: CommandUsage.Parameter, asker: String) async throws(UsageProblem)
        -> String
    {
        let explained = "'\(word)' is not \(parameter.kind.explanation)"
        switch parameter.kind {
        case .user:
            var uid = word
            if uid.hasPrefix("<@uid:"), uid.hasSuffix(">") {
                uid = String(uid.dropFirst(6).dropLast())
            } else if uid.hasPrefix("@") {
                uid.removeFirst()
            }
            guard !uid.isEmpty, (try? await service.user(uid)) != nil else {
                throw UsageProblem(text: "there is no user '\(uid)'")
            }
            return uid
        case .group:
            let guid = word.hasPrefix("#") ? String(word.dropFirst()) : word
            guard !guid.isEmpty, (try? await service.group(guid, as: asker)) != nil else {
                throw UsageProblem(text: "there is no group '\(guid)'")
            }
            return guid
        case .message:
            let digits = word.hasPrefix("#") ? String(word.dropFirst()) : word
            guard let id = Int64(digits), id > 0 else { throw UsageProblem(text: explained) }
            return String(id)
        case .duration:
            guard CommandUsage.seconds(in: word) != nil else { throw UsageProblem(text: explained) }
            return word
        case .integer:
            guard let number = Int64(word) else { throw UsageProblem(text: explained) }
            return String(number)
        case .word, .rest:
            return word
        }
    }

    /// The answer to a command that does not fit its usage: what is wrong, and the usage.
    func usageAnswer(_ problem: UsageProblem, _ usage: CommandUsage, command: String) -> String {
        let written = bot.configuration.commandPrefix + command + " " + usage.text
        let sentence = problem.text.prefix(1).uppercased() + problem.text.dropFirst()
        return strings.text("COMMAND_USAGE").replacingOccurrences(of: "{usage}", with: written)
            .replacingOccurrences(of: "{problem}", with: sentence)
    }
}
