import PerchTestSupport
import Testing

@testable import PerchHost

/// A command is the prefix, a name, and the rest trimmed of surrounding whitespace.
@Suite struct CommandParsingTests {
    @Test(arguments: [
        ("!ping 123", "!", "ping", "123"),
        ("!ping   a b  ", "!", "ping", "a b"),
        ("!ping", "!", "ping", ""),
        ("!ping \t x\n", "!", "ping", "x"),
        ("bot: ask  what now? ", "bot: ", "ask", "what now?"),
        ("!say 👍🏽 ", "!", "say", "👍🏽"),
        // The name in lower case, the arguments as written; whitespace before the prefix skipped.
        ("!Follow 42", "!", "follow", "42"),
        ("!DEPLOY Main", "!", "deploy", "Main"),
        ("  !ping x", "!", "ping", "x"),
    ])
    func aCommandsNameAndArguments(text: String, prefix: String, name: String, args: String) {
        let command = BotRuntime.command(in: text, prefix: prefix)
        #expect(command?.name == name)
        #expect(command?.args == args)
    }

    @Test(arguments: [("hello", "!"), ("!", "!"), ("! ping", "!"), ("", "!")])
    func noCommand(text: String, prefix: String) {
        #expect(BotRuntime.command(in: text, prefix: prefix) == nil)
    }

    /// The byte path for ASCII gives the character path's answer: every pair of a few prefixes and
    /// texts made of the characters that matter (ASCII whitespace of each kind, capitals, a CRLF,
    /// a prefix's own characters).
    @Test func theASCIIPathAgreesWithTheCharacterPath() {
        let pieces = ["", " ", "\t", "\n", "\r\n", "\u{0B}", "\u{0C}", "!", "!!", "bot:", "Ping", "ping", "x", "A b"]
        var texts: [String] = []
        for first in pieces {
            for second in pieces {
                for third in pieces { texts.append(first + second + third) }
            }
        }
        for prefix in ["!", "bot: ", "!!", " "] {
            for text in texts {
                let ascii = BotRuntime.asciiCommand(in: text, prefix: prefix)
                let characters = BotRuntime.characterCommand(in: text, prefix: prefix)
                #expect(ascii?.name == characters?.name, "\(text.debugDescription) with \(prefix.debugDescription)")
                #expect(ascii?.args == characters?.args, "\(text.debugDescription) with \(prefix.debugDescription)")
            }
        }
    }
}
