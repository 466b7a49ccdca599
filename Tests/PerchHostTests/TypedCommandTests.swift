import Foundation
import PerchChat
import PerchConfig
import PerchHost
import PerchLock
import PerchTestSupport
import PerchTesting
import Testing

/// A Swift plugin that writes down the typed arguments it is handed.
struct ArgumentReader: BotPlugin {
    static let name = "reader"
    static let seen = Lock<[String: String]>([:])
    init(configuration: NoConfiguration) {}

    func handle(_ context: BotContext) async throws {
        Self.seen.withLock { $0 = context.captures }
    }
}

/// Commands with typed arguments (`usage`): parsed and checked before the rule runs, by name in
/// templates and plugins; a wrong call is answered with the usage; `!help` says it.
@Suite(.serialized) struct TypedCommandTests {
    static let bot = botFile(
        """
          - on: { command: remind }
            usage: "<when:duration> <text:rest>"
            help: "reminds you"
            do: [{ quote_reply: "In {when} ({when.seconds} s): {text}" }]
          - on: { command: kudos }
            usage: "<who:user> [count:integer]"
            do: [{ reply: "{who} gets {count}" }, { plugin: reader }]
          - on: { command: where }
            usage: "<room:group> <id:message>"
            do: [{ reply: "{room} {id}" }]
          - on: { command: deploy }
            usage: "<target>"
            allow: { users: [alice] }
            do: [{ reply: "deploying {target}" }]
        """, extra: "plugins:\n  - name: reader")

    static var registry: PluginRegistry {
        var registry = PluginRegistry.standard
        registry.register(ArgumentReader.self)
        return registry
    }

    /// Posts `text` as carol in room and gives back the bot's answer to it.
    static func answer(to text: String, in chat: TestChat, as uid: String = "carol") async throws -> String? {
        let asked = try await chat.post(text, as: uid, to: .group("room"))
        try await chat.settle()
        let messages = try await chat.botMessages(in: .group("room"))
        return messages.last { $0.id > asked.id }?.text
    }

    /// Expects the bot's answer to `text`, posted as `uid` in room, to be `expected`.
    static func expect(
        _ text: String, _ expected: String, in chat: TestChat, as uid: String = "carol",
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let answer = try await answer(to: text, in: chat, as: uid)
        #expect(answer == expected, sourceLocation: sourceLocation)
    }

    @Test func argumentsAreParsedCheckedAndGivenByName() async throws {
        try await withTestHost(config: hostConfig, bots: ["b.yaml": Self.bot], registry: Self.registry) { chat in
            try await Self.expect(
                "!remind 1h30m take the bread out ", "In 1h30m (5400 s): take the bread out", in: chat)
            // A user as a mention, @uid or uid, and an optional integer.
            try await Self.expect("!kudos <@uid:bob> 3", "bob gets 3", in: chat)
            #expect(ArgumentReader.seen.withLock { $0["who"] == "bob" && $0["count"] == "3" })
            try await Self.expect("!Kudos @alice", "alice gets ", in: chat)
            try await Self.expect("!where #other #42", "other 42", in: chat)
        }
    }

    @Test func aCallThatDoesNotFitIsAnsweredWithTheUsage() async throws {
        try await withTestHost(config: hostConfig, bots: ["b.yaml": Self.bot], registry: Self.registry) { chat in
            let usage = "Usage: !remind <when:duration> <text:rest>"
            try await Self.expect("!remind", "<when:duration> is missing. " + usage, in: chat)
            try await Self.expect("!remind 10m", "<text:rest> is missing. " + usage, in: chat)
            try await Self.expect(
                "!remind soon buy milk", "'soon' is not a duration, such as 10m, 2h or 1d. " + usage, in: chat)
            let kudos = "Usage: !kudos <who:user> [count:integer]"
            try await Self.expect("!kudos @nobody", "There is no user 'nobody'. " + kudos, in: chat)
            try await Self.expect("!kudos bob many", "'many' is not a whole number. " + kudos, in: chat)
            try await Self.expect("!kudos bob 3 4", "'4' is one word too many. " + kudos, in: chat)
            try await Self.expect(
                "!where nowhere 1", "There is no group 'nowhere'. Usage: !where <room:group> <id:message>", in: chat)
            try await Self.expect(
                "!where room -3", "'-3' is not a message id. Usage: !where <room:group> <id:message>", in: chat)
            // The rule did not run: its plugin heard nothing of the wrong calls.
            ArgumentReader.seen.withLock { $0 = [:] }
            _ = try await Self.answer(to: "!kudos bob 3 4", in: chat)
            #expect(ArgumentReader.seen.withLock { $0.isEmpty })
            // Whom `allow` refuses hears the refusal, not the usage.
            try await chat.post("!deploy", as: "carol", to: .group("room"))
            let refused = try await chat.waitForMessage(in: .user("bot"), viewer: "carol") { $0.sender == "bot" }
            #expect(refused.text == "You may not use !deploy here.")
            try await Self.expect("!deploy", "<target> is missing. Usage: !deploy <target>", in: chat, as: "alice")
        }
    }

    @Test func helpIsMadeFromTheDeclarations() async throws {
        try await withTestHost(config: hostConfig, bots: ["b.yaml": Self.bot], registry: Self.registry) { chat in
            let allAnswer = try await Self.answer(to: "!help", in: chat)
            let all = try #require(allAnswer)
            #expect(all.contains("!remind <when:duration> <text:rest> — reminds you"), "\(all)")
            #expect(all.contains("!kudos <who:user> [count:integer]"), "\(all)")
            let oneAnswer = try await Self.answer(to: "!help remind", in: chat)
            let one = try #require(oneAnswer)
            #expect(
                one.hasSuffix(
                    "!remind <when:duration> <text:rest> — reminds you\n  when: a duration, such as 10m, 2h or 1d\n"
                        + "  text: some text"), "\(one)")
            let kudosAnswer = try await Self.answer(to: "!help kudos", in: chat)
            let kudos = try #require(kudosAnswer)
            #expect(kudos.hasSuffix("  who: a person (@name)\n  count: a whole number (optional)"), "\(kudos)")
        }
    }
}
