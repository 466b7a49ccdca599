import PerchChat

/// Reading a command (`!follow 42`) out of a message's text.
extension BotRuntime {
    /// The command `text` gives, its name in lower case: `!Follow` (a phone's keyboard capitalizes
    /// the first letter) is `!follow`, and whitespace before the prefix is not the text's start.
    static func command(in text: String, prefix: String) -> (name: String, args: String)? {
        if text.utf8.allSatisfy({ $0 < 0x80 }), prefix.utf8.allSatisfy({ $0 < 0x80 }) {
            return asciiCommand(in: text, prefix: prefix)
        }
        return characterCommand(in: text, prefix: prefix)
    }

    /// ``command(in:prefix:)`` on UTF-8 bytes, for a text and prefix in ASCII, where a byte is a
    /// character and ASCII's whitespace (tab to carriage return, space) is `Character.isWhitespace`'s:
    /// the same answer without breaking the text into grapheme clusters, which every message would
    /// otherwise pay on the bots' thread.
    static func asciiCommand(in text: String, prefix: String) -> (name: String, args: String)? {
        let utf8 = text.utf8
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
        var index = utf8.startIndex
        while index != utf8.endIndex, isSpace(utf8[index]) { utf8.formIndex(after: &index) }
        guard utf8[index...].starts(with: prefix.utf8) else { return nil }
        index = utf8.index(index, offsetBy: prefix.utf8.count)
        let nameStart = index
        while index != utf8.endIndex, !isSpace(utf8[index]) { utf8.formIndex(after: &index) }
        guard index != nameStart else { return nil }
        let name = text[nameStart..<index]
        while index != utf8.endIndex, isSpace(utf8[index]) { utf8.formIndex(after: &index) }
        var end = utf8.endIndex
        while end != index, isSpace(utf8[utf8.index(before: end)]) { utf8.formIndex(before: &end) }
        return (commandName(name), String(text[index..<end]))
    }

    /// ``command(in:prefix:)`` character by character, for any text.
    static func characterCommand(in text: String, prefix: String) -> (name: String, args: String)? {
        let start = text.drop { $0.isWhitespace }
        guard start.hasPrefix(prefix) else { return nil }
        let body = start.dropFirst(prefix.count)
        let name = body.prefix { !$0.isWhitespace }
        guard !name.isEmpty else { return nil }
        // The arguments without surrounding whitespace, sliced in place (no reversed copies).
        let rest = body[name.endIndex...].drop { $0.isWhitespace }
        let end = rest.lastIndex { !$0.isWhitespace }.map { rest.index(after: $0) } ?? rest.startIndex
        return (commandName(name), String(rest[..<end]))
    }

    /// A command's name in lower case, lowered only when it has to be (a copy and Unicode's
    /// tables, at every message).
    private static func commandName(_ name: Substring) -> String {
        let lower = name.utf8.allSatisfy { $0 < 0x80 && !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
        return lower ? String(name) : name.lowercased()
    }
}
