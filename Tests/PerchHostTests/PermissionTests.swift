import Foundation
import PerchChat
import PerchConfig
import PerchHost
import PerchService
import PerchTestSupport
import PerchTesting
import Testing

/// Permissions in one place: config.yaml's `admins`, and each rule's `allow`/`deny`.
@Suite struct PermissionTests {
    static let config = hostConfig + "\nadmins: [alice]\n"
    static let bot = botFile(
        """
          - on: { command: deploy }
            allow: { admins: true }
            do: [{ reply: "deploying" }]
          - on: { command: purge }
            allow: { scopes: [admin] }
            refusal: silent
            do: [{ reply: "purged" }]
          - on: message
            when: { text_matches: "^hello" }
            deny: { users: [carol] }
            do: [{ reply: "hello to you" }]
        """, extra: "hears: all")

    @Test func aRefusedCommandIsAnsweredPrivatelyAndAllowedOnesRun() async throws {
        try await withTestHost(config: Self.config, bots: ["b.yaml": Self.bot]) { chat in
            try await chat.post("!deploy", as: "carol", to: .group("room"))
            let refused = try await chat.waitForMessage(in: .user("bot"), viewer: "carol") { $0.sender == "bot" }
            #expect(refused.text == "You may not use !deploy here.")
            try await chat.post("!deploy", as: "alice", to: .group("room"))
            _ = try await chat.waitForMessage(in: .group("room")) { $0.text == "deploying" }
            // A scope: bob is an admin of room, carol is not; a silent refusal answers nothing.
            try await chat.post("!purge", as: "carol", to: .group("room"))
            try await chat.post("!purge", as: "bob", to: .group("room"))
            _ = try await chat.waitForMessage(in: .group("room")) { $0.text == "purged" }
            // Denied: carol's hello fires nothing; bob's does.
            try await chat.post("hello all", as: "carol", to: .group("room"))
            try await chat.post("hello there", as: "bob", to: .group("room"))
            try await chat.settle()
            let room = try await chat.botMessages(in: .group("room")).compactMap(\.text)
            #expect(room == ["deploying", "purged", "hello to you"])
            let toCarol = try await chat.messages(in: .user("bot"), viewer: "carol").filter { $0.sender == "bot" }
            #expect(toCarol.count == 1)
            #expect(await chat.log.contains { $0.contains("refused for carol") })
        }
    }

    /// `!help` lists only the commands the asker may use.
    @Test func helpLeavesOutWhatTheAskerMayNotUse() async throws {
        try await withTestHost(config: Self.config, bots: ["b.yaml": Self.bot]) { chat in
            // Carol may use none of the bot's commands: it has nothing to list for her.
            let asked = try await chat.post("!help", as: "carol", to: .group("room"))
            try await chat.settle()
            #expect(try await chat.botMessages(in: .group("room")).allSatisfy { $0.quotedMessageId != asked.id })
            let byAlice = try await chat.post("!help", as: "alice", to: .group("room"))
            let forAlice = try await chat.waitForMessage(in: .group("room")) { $0.quotedMessageId == byAlice.id }
            #expect(forAlice.text?.contains("!deploy") == true && forAlice.text?.contains("!purge") == false)
        }
    }

    @Test func perchCheckNamesUnknownPeopleAndRulesThatCanNeverFire() throws {
        let bot = botFile(
            """
              - on: { command: a }
                allow: { users: [nobody], groups: [nowhere] }
                do: [{ reply: a }]
              - on: { command: b }
                allow: { users: [bob] }
                deny: { users: [bob] }
                do: [{ reply: b }]
              - on: { command: c }
                allow: { admins: true }
                do: [{ reply: c }]
            """)
        let directory = try writeTestConfiguration(config: hostConfig + "\nadmins: [ghost]\n", bots: ["b.yaml": bot])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loaded = ConfigurationLoader(swiftPlugins: PluginRegistry.standard.names).load(
            configPath: directory + "/config.yaml")
        let found = loaded.findings.map { "\($0.severity) \($0.path)" }
        #expect(
            Set(found) == [
                "warning admins[0]", "error rules[0].allow.users[0]", "error rules[0].allow.groups[0]",
                "warning rules[1].allow",
            ], "\(loaded.findings)")
    }
}
