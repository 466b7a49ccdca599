import Foundation
import PerchChat
import PerchConfig
import PerchHost
import PerchService
import PerchTestSupport
import PerchTesting
import Testing

/// A bot's messages make no noise: they notify nobody and subscribe nobody (the bot included),
/// unless the action says `notify: true`.
@Suite struct QuietAnswerTests {
    static let bots = [
        "quiet.yaml": """
        name: quiet
        user: { uid: quietbot, name: Quiet }
        groups: [room]
        rules:
          - on: thread_reply
            when: { sender_is_bot: false, text_matches: "^quiet" }
            do: [{ reply_in_thread: "noted, <@uid:carol>" }]
        """,
        "loud.yaml": """
        name: loud
        user: { uid: loudbot, name: Loud }
        groups: [room]
        rules:
          - on: thread_reply
            when: { sender_is_bot: false, text_matches: "^loud" }
            do:
              - reply_in_thread: "heads up, <@uid:carol>"
                notify: true
        """,
    ]

    @Test func aBotsAnswerIsQuietUnlessItsActionSaysNotify() async throws {
        try await withTestHost(config: hostConfig, bots: Self.bots) { chat in
            let root = try await chat.post("a question", as: "alice", to: .group("room"))
            _ = try await chat.post("quiet please", as: "bob", to: .group("room"), thread: root.id)
            let quiet = try await chat.waitForMessage(in: .group("room")) { $0.sender == "quietbot" }
            try await chat.settle()
            // The people's own reply subscribed its sender and the thread's author; the bot's
            // answer subscribed neither the bot nor carol, whom it mentions, and notified nobody.
            #expect(try await chat.service.threadSubscribers(of: root.id) == ["alice", "bob"])
            for uid in ["alice", "bob", "carol"] {
                let records = try await chat.service.notifications(for: uid).records
                #expect(!records.contains { $0.messageId == quiet.id }, "\(uid)")
            }

            _ = try await chat.post("loud please", as: "bob", to: .group("room"), thread: root.id)
            let loud = try await chat.waitForMessage(in: .group("room")) { $0.sender == "loudbot" }
            try await chat.settle()
            let carols = try await chat.service.notifications(for: "carol").records
            #expect(carols.first { $0.messageId == loud.id }?.reason == .mention)
            let alices = try await chat.service.notifications(for: "alice").records
            #expect(alices.contains { $0.messageId == loud.id })
            // Notifying subscribes whom it mentions, as a person's reply does; never the bot.
            #expect(try await chat.service.threadSubscribers(of: root.id) == ["alice", "bob", "carol"])
        }
    }

    @Test func notifyGoesOnlyWithAnActionThatSends() throws {
        let bot = botFile("  - on: message\n    do:\n      - { pin: { as: bot }, notify: true }")
        let directory = try writeTestConfiguration(config: hostConfig, bots: ["b.yaml": bot])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loaded = ConfigurationLoader(swiftPlugins: PluginRegistry.standard.names).load(
            configPath: directory + "/config.yaml")
        let finding = try #require(loaded.findings.first)
        #expect(finding.message.contains("`notify` goes with an action that sends a message"), "\(finding)")
        let good = botFile(
            "  - on: message\n    do:\n      - reply: hi\n        notify: true\n      - quote_reply: hey")
        let fine = try writeTestConfiguration(config: hostConfig, bots: ["b.yaml": good])
        defer { try? FileManager.default.removeItem(atPath: fine) }
        let accepted = ConfigurationLoader(swiftPlugins: PluginRegistry.standard.names).load(
            configPath: fine + "/config.yaml")
        #expect(accepted.findings.isEmpty, "\(accepted.findings)")
        let actions = try #require(accepted.bots.first?.bot.rules.first?.actions)
        #expect(actions.map(\.notifies) == [true, false])
    }
}

/// Subscribing someone who did not ask brings them notifications: a bot does it only when its file
/// says `allow_subscribing_others: true`.
@Suite struct SubscribingOthersTests {
    static func bot(allowing: Bool) -> String {
        botFile(
            """
              - on: { command: adopt }
                do: [{ subscribe: bob }]
              - on: { command: adopt-me }
                do: [subscribe, { subscribe: self }]
              - on: { command: adopt-carol }
                do: [{ plugin: adopter }]
            """,
            extra: (allowing ? "allow_subscribing_others: true\n" : "") + "plugins:\n  - name: adopter")
    }

    /// A plugin that subscribes carol, whoever asked.
    struct Adopter: BotPlugin {
        static let name = "adopter"
        init(configuration: NoConfiguration) {}
        func handle(_ context: BotContext) async throws {
            do {
                try await context.subscribe("carol")
                try await context.reply("carol adopted")
            } catch {
                try await context.reply("refused: \(error.code.rawValue)")
            }
        }
    }

    @Test func perchCheckReportsASubscribeOfSomeoneElseWithoutTheOptIn() throws {
        var registry = PluginRegistry.standard
        registry.register(Adopter.self)
        for allowing in [false, true] {
            let directory = try writeTestConfiguration(
                config: hostConfig, bots: ["b.yaml": Self.bot(allowing: allowing)])
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let loaded = ConfigurationLoader(swiftPlugins: registry.names).load(configPath: directory + "/config.yaml")
            let found = loaded.findings.map(\.description)
            if allowing {
                #expect(found.isEmpty, "\(found)")
            } else {
                // The sender and the bot itself need no opt-in: one finding, at the action.
                #expect(found.count == 1, "\(found)")
                #expect(found.first?.contains("allow_subscribing_others") == true, "\(found)")
                #expect(found.first?.contains("rules[0].do[0].subscribe") == true, "\(found)")
            }
        }
    }

    @Test func aPluginSubscribingSomeoneElseIsRefusedWithoutTheOptIn() async throws {
        var registry = PluginRegistry.standard
        registry.register(Adopter.self)
        let bot = botFile(
            "  - on: { command: adopt-carol }\n    do: [{ plugin: adopter }]", extra: "plugins:\n  - name: adopter")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot], registry: registry) { chat in
            let root = try await chat.post("root", as: "alice", to: .group("room"))
            try await chat.post("!adopt-carol", as: "bob", to: .group("room"), quote: root.id)
            let answer = try await chat.waitForMessage(in: .group("room")) { $0.sender == "bot" }
            #expect(answer.text == "refused: ERR_PERMISSION_DENIED")
            #expect(!(try await chat.service.message(root.id, as: "carol").threadSubscribed))
        }
    }
}
