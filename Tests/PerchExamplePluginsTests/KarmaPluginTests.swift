import Foundation
import PerchChat
import PerchExamplePlugins
import PerchHost
import PerchTestSupport
import PerchTesting
import Testing

/// The example Swift plugin, run by a host as a plugin author's would be: its configuration, its
/// storage, the host's event bus.
@Suite struct KarmaPluginTests {
    var registry: PluginRegistry {
        var registry = PluginRegistry.standard
        registry.register(KarmaPlugin.self)
        return registry
    }

    @Test func theExampleSwiftPluginRunsWithItsConfigAndStorage() async throws {
        let bot = botFile(
            """
              - on: message
                when: { text_matches: "^(?<thing>\\\\w+)\\\\+\\\\+$" }
                do: [{ plugin: karma }]
              - on: { command: sub }
                do: [{ subscribe: sender }]
              - on: { command: subbob }
                do: [{ subscribe: bob }]
            """,
            extra: "allow_subscribing_others: true\nplugins:\n  - name: karma\n    config: { unit: points, maximum: 2 }"
        )
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot], registry: registry) { chat in
            for _ in 0..<3 { try await chat.post("swift++", as: "carol", to: .group("room")) }
            let texts = try await chat.botMessages(in: .group("room")).compactMap(\.text)
            #expect(texts == ["swift has 1 points", "swift has 2 points", "swift has 2 points"])
            #expect(try await chat.service.pluginValue(bot: "b", key: "swift") == "2")
            // Plugins hear of every change of a subscription in the bot's conversations: one made
            // through the host, and ones made elsewhere (the API, the web chat).
            let root = try await chat.post("root", as: "alice", to: .group("room"))
            try await chat.post("!sub", as: "carol", to: .group("room"), thread: root.id)
            try await chat.settle()
            #expect(KarmaPlugin.busLog.entries.contains("\(root.id):carol:true"))
            _ = try await chat.service.subscribeToThread(root.id, as: "bob")
            _ = try await chat.service.unsubscribeFromThread(root.id, as: "bob")
            try await chat.settle()
            let bobs = KarmaPlugin.busLog.entries.filter { $0.hasPrefix("\(root.id):bob:") }
            #expect(bobs == ["\(root.id):bob:true", "\(root.id):bob:false"])
            // A failed subscription publishes nothing: bob is not in `other`.
            let elsewhere = try await chat.post("in other", as: "carol", to: .group("other"))
            try await chat.post("!subbob", as: "carol", to: .group("other"), thread: elsewhere.id)
            try await chat.settle()
            #expect(!KarmaPlugin.busLog.entries.contains { $0.hasPrefix("\(elsewhere.id):bob") })
            #expect(await chat.log.contains { $0.contains("ERR_MESSAGE_NO_ACCESS") })
        }
    }

    @Test func pluginConfigurationErrorsAreLocated() async throws {
        let bot = botFile("", extra: "plugins:\n  - name: karma\n    config: { unti: points }")
        await #expect(throws: HostError.self) {
            try await withTestHost(config: hostConfig, bots: ["b.yaml": bot], registry: registry) { _ in }
        }
        do {
            try await withTestHost(config: hostConfig, bots: ["b.yaml": bot], registry: registry) { _ in }
        } catch let error as HostError {
            #expect(error.description.contains("bots/b.yaml:9:"))
            #expect(error.description.contains("unknown key 'unti'; did you mean 'unit'?"))
        }
    }
}
