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
}
