import Foundation
import PerchChat
import PerchConfig
import PerchHost
import PerchService
import PerchTestSupport
import PerchTesting
import Testing

/// Bot files see the state changes of the chat: a thread subscription changed by any means, and the
/// bot user's own saves made elsewhere.
@Suite struct StateTriggerTests {
    static let watcher = """
        name: watcher
        user: { uid: watcherbot, name: Watcher }
        groups: [room]
        rules:
          - on: thread_subscribed
            do: [{ direct_message: "{actor.uid} follows “{message.text}”" }]
          - on: thread_unsubscribed
            do: [{ direct_message: "{sender.uid} stopped following" }]
          - on: saved
            do: [{ reply: "saved “{message.text}”" }]
          - on: unsaved
            do: [{ reply: "unsaved “{message.text}”" }]
        """

    @Test func subscriptionTriggersFireForChangesMadeAnywhere() async throws {
        try await withTestHost(config: hostConfig, bots: ["watcher.yaml": Self.watcher]) { chat in
            let root = try await chat.post("the plan", as: "alice", to: .group("room"))
            // Through the API, not the host.
            _ = try await chat.service.subscribeToThread(root.id, as: "carol")
            let follows = try await chat.waitForMessage(in: .user("watcherbot"), viewer: "carol") {
                $0.sender == "watcherbot"
            }
            #expect(follows.text == "carol follows “the plan”")
            _ = try await chat.service.unsubscribeFromThread(root.id, as: "carol")
            let stopped = try await chat.waitForMessage(in: .user("watcherbot"), viewer: "carol") {
                $0.text?.hasSuffix("stopped following") == true
            }
            #expect(stopped.text == "carol stopped following")
        }
    }

    @Test func saveTriggersFireForTheBotsOwnSavesOnly() async throws {
        try await withTestHost(config: hostConfig, bots: ["watcher.yaml": Self.watcher]) { chat in
            let message = try await chat.post("keep this", as: "alice", to: .group("room"))
            // Someone else's save is theirs alone: the bot hears nothing of it.
            _ = try await chat.service.save(message.id, as: "carol")
            try await chat.settle()
            #expect(try await chat.botMessages(in: .group("room")).isEmpty)
            // The bot user's own, from another session (the web chat signed in as the bot).
            _ = try await chat.service.save(message.id, as: "watcherbot", session: "web")
            let saved = try await chat.waitForMessage(in: .group("room")) { $0.sender == "watcherbot" }
            #expect(saved.text == "saved “keep this”")
            _ = try await chat.service.unsave(message.id, as: "watcherbot", session: "web")
            _ = try await chat.waitForMessage(in: .group("room")) { $0.text == "unsaved “keep this”" }
        }
    }
}

/// A bot that uses a feature config.yaml turns off is told where, once, and then makes no call: no
/// failure is logged or counted on every message.
@Suite struct FeatureCheckTests {
    static let config =
        hostConfig + """

            features: { pin: false, save: false }
            ui: { threadSubscription: { enabled: false } }
            """
    static let bot = botFile(
        """
          - on: message
            do: [pin, unpin, save, { subscribe: sender }]
          - on: { command: follow }
            do: [{ plugin: thread-follow }]
        """, extra: "plugins:\n  - name: thread-follow")

    @Test func perchCheckLocatesEachActionOfAFeatureThatIsOff() throws {
        let directory = try writeTestConfiguration(config: Self.config, bots: ["b.yaml": Self.bot])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loaded = ConfigurationLoader(swiftPlugins: PluginRegistry.standard.names).load(
            configPath: directory + "/config.yaml")
        let found = loaded.findings.map { "\($0.severity) \($0.path) \($0.message.prefix(25))" }
        #expect(
            found == [
                "warning rules[0].do[0] pins are off (config.yaml",
                "warning rules[0].do[1] pins are off (config.yaml",
                "warning rules[0].do[2] saves are off (config.yam",
                "warning rules[0].do[3].subscribe thread subscriptions are ",
                "warning rules[1].do[0].plugin the follow commands are o",
            ], "\(loaded.findings)")
        #expect(loaded.isValid)
    }

    @Test func theHostMakesNoCallAndLogsNoFailure() async throws {
        try await withTestHost(config: Self.config, bots: ["b.yaml": Self.bot]) { chat in
            let message = try await chat.post("hello", as: "alice", to: .group("room"))
            try await chat.post("!follow", as: "alice", to: .group("room"), thread: message.id)
            try await chat.settle()
            #expect(chat.host.metrics.value("perch_handler_errors_total", ["bot": "b"]) == 0)
            #expect(try await chat.service.message(message.id, as: "alice").pinnedAt == 0)
            #expect(try await chat.botMessages(in: .group("room")).isEmpty)
            #expect(await !chat.log.contains { $0.contains("failed") })
        }
    }
}
