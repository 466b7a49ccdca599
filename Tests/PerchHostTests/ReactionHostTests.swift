import PerchChat
import PerchHost
import PerchService
import PerchTesting
import Testing

/// Reactions reach a bot's plugins: the bot hears others' reactions, to its own messages too,
/// never its own, and reacts through its context.
@Suite struct ReactionHostTests {
    @Test func aPluginHearsOthersReactionsAndReacts() async throws {
        let (bot, registry) = pluginBot(ReactingPlugin.self, on: "rx")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot], registry: registry) { chat in
            try await chat.post("rx go", as: "carol", to: .group("room"))
            let asked = try #require(try await chat.botMessages(in: .group("room")).first)
            #expect(asked.text == "react to me")
            // The plugin reacted to carol's command; it does not hear its own reaction.
            let command = try #require(
                try await chat.messages(in: .group("room"), viewer: "carol").first { $0.text == "rx go" })
            #expect(command.reactions == [ReactionCount(reaction: "✅", count: 1)])
            // carol's reaction to the bot's own message is heard.
            _ = try await chat.service.addReaction("👍", to: asked.id, as: "carol")
            _ = try await chat.service.removeReaction("👍", from: asked.id, as: "carol")
            #expect(
                try await chat.botMessages(in: .group("room")).compactMap(\.text) == [
                    "react to me", "carol reacted 👍", "carol took back 👍",
                ])
        }
    }
}

/// Answers a command and reacts to it; tells every reaction it hears.
struct ReactingPlugin: BotPlugin {
    static let name = "reacting"
    init(configuration: NoConfiguration) throws {}

    func handle(_ context: BotContext) async throws {
        try await context.reply("react to me")
        try await context.react("✅")
    }

    func onMessageReactionAdded(_ context: BotContext) async throws {
        guard let reaction = context.event.reaction else { return }
        try await context.reply("\(reaction.uid) reacted \(reaction.reaction)")
    }

    func onMessageReactionRemoved(_ context: BotContext) async throws {
        guard let reaction = context.event.reaction else { return }
        try await context.reply("\(reaction.uid) took back \(reaction.reaction)")
    }
}
