import PerchChat
import PerchHost
import PerchService
import PerchTestSupport
import PerchTesting
import Testing

/// A bot with commands answers `<prefix>help` with the commands it takes there, as errbot's
/// `!help` and Hubot's `help` do.
@Suite struct HelpCommandTests {
    static let rules = """
          - on: { command: ping }
            help: "answers pong"
            do: [{ reply: "pong" }]
          - on: { command: Echo }
            do: [{ reply: "{args}" }]
          - name: second-ping
            on: { command: ping }
            help: "never shown: the first rule's line is"
            do: [{ reply: "pong again" }]
          - on: { command: echo }
            help: "says it back, one-on-one"
            when: { one_on_one: true }
            do: [{ reply: "{args}!" }]
          - on: { command: tidy }
            help: "deletes the message, for the room's admins"
            when: { groups: [room], sender_scope: [owner, admin] }
            do: [delete]
          - on: { command: elsewhere }
            when: { groups: [other] }
            do: [{ reply: "here" }]
          - on: { command: inthread }
            help: "only in a thread"
            when: { threaded: true }
            do: [{ reply: "threaded" }]
          - on: message
            when: { text_matches: "^hello$" }
            do: [{ reply: "hi" }]
        """

    @Test func helpListsTheCommandsThatWorkWhereItIsAsked() async throws {
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(Self.rules)]) { chat in
            let asked = try await chat.post("!help", as: "carol", to: .group("room"))
            let answer = try await chat.waitForMessage(in: .group("room")) { $0.sender == "bot" }
            #expect(answer.text == "Bot's commands:\n!ping — answers pong\n!echo")
            #expect(answer.quotedMessageId == asked.id)
            #expect(answer.parentMessageId == 0)

            // An admin of the room is shown the admins' command; the other group has its own.
            _ = try await chat.post("!HELP", as: "bob", to: .group("room"))
            let admin = try await chat.waitForMessage(in: .group("room")) {
                $0.sender == "bot" && $0.text?.contains("tidy") == true
            }
            #expect(
                admin.text
                    == "Bot's commands:\n!ping — answers pong\n!echo\n!tidy — deletes the message, for the room's admins"
            )
            _ = try await chat.post("!help", as: "carol", to: .group("other"))
            let other = try await chat.waitForMessage(in: .group("other")) { $0.sender == "bot" }
            #expect(other.text == "Bot's commands:\n!ping — answers pong\n!echo\n!elsewhere")

            // Asked in a thread, it answers in the thread, with the thread's commands too.
            let root = try await chat.post("a thread", as: "alice", to: .group("room"))
            let inThread = try await chat.post("!help", as: "carol", to: .group("room"), thread: root.id)
            let threaded = try await chat.waitForMessage(in: .group("room")) {
                $0.sender == "bot" && $0.parentMessageId == root.id
            }
            #expect(threaded.quotedMessageId == inThread.id)
            #expect(threaded.text == "Bot's commands:\n!ping — answers pong\n!echo\n!inthread — only in a thread")
            // One-on-one, the group-only commands are left out, and a command listed without a
            // line takes the first line of a rule that holds here.
            _ = try await chat.post("!help", as: "carol", to: .user("bot"))
            let direct = try await chat.waitForMessage(in: .user("bot"), viewer: "carol") { $0.sender == "bot" }
            #expect(direct.text == "Bot's commands:\n!ping — answers pong\n!echo — says it back, one-on-one")
        }
    }

    /// `!help NAME` asks one bot (by uid, name or mention) or one command; a name the bot does not
    /// answer to is another bot's business, and it stays quiet.
    @Test func helpWithANameAsksOneBotOrOneCommand() async throws {
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(Self.rules)]) { chat in
            for asked in ["!help ping", "!help !Echo", "!help bot", "!help <@uid:bot>", "!help helper", "!help tidy"] {
                try await chat.post(asked, as: "carol", to: .group("room"))
            }
            let full = "Bot's commands:\n!ping — answers pong\n!echo"
            // `tidy` is the admins' command: carol is not shown it.
            #expect(
                try await chat.botMessages(in: .group("room")).compactMap(\.text) == [
                    "Bot's commands:\n!ping — answers pong", "Bot's commands:\n!echo", full, full,
                ])
        }
    }

    /// The heading is the strings table's `HELP_HEADING`, so a deployment can localize it.
    @Test func theHeadingIsAStringsKey() async throws {
        let config = hostConfig + "\nstrings:\n  HELP_HEADING: \"Befehle von {name}:\"\n"
        try await withTestHost(config: config, bots: ["b.yaml": botFile(Self.rules)]) { chat in
            try await chat.post("!help ping", as: "carol", to: .group("room"))
            #expect(
                try await chat.botMessages(in: .group("room")).compactMap(\.text) == [
                    "Befehle von Bot:\n!ping — answers pong"
                ])
        }
    }

    @Test func aBotsOwnHelpCommandOrHelpCommandFalseLeavesHelpAlone() async throws {
        let own = Self.rules + "\n  - on: { command: help }\n    do: [{ reply: \"my own help\" }]\n"
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(own)]) { chat in
            try await chat.post("!help", as: "carol", to: .group("room"))
            #expect(try await chat.botMessages(in: .group("room")).compactMap(\.text) == ["my own help"])
        }
        let off = botFile(Self.rules, extra: "help_command: false")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": off]) { chat in
            try await chat.post("!help", as: "carol", to: .group("room"))
            try await chat.post("hello", as: "carol", to: .group("room"))
            #expect(try await chat.botMessages(in: .group("room")).compactMap(\.text) == ["hi"])
        }
        // A bot without commands has no help to give.
        let plain = "  - on: message\n    when: { text_matches: \"^hello$\" }\n    do: [{ reply: \"hi\" }]\n"
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(plain)]) { chat in
            try await chat.post("!help", as: "carol", to: .group("room"))
            try await chat.post("hello", as: "carol", to: .group("room"))
            #expect(try await chat.botMessages(in: .group("room")).compactMap(\.text) == ["hi"])
        }
    }
}
