import PerchChat
import PerchHost
import PerchService
import PerchTestSupport
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

/// A plugin hears what others do to messages, with who did it (`event.actor`, `context.actor`), and never its own
/// doing; saves are the bot user's own, so it hears those made elsewhere (the web chat, as the bot)
/// and not those its own context made.
@Suite struct OwnDoingHostTests {
    @Test func aPluginHearsOthersPinsAndSavesFromElsewhereNotItsOwn() async throws {
        let (bot, registry) = pluginBot(BookmarkingPlugin.self, on: "bm")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot], registry: registry) { chat in
            let command = try await chat.post("bm keep", as: "carol", to: .group("room"))
            try await chat.settle()
            // The plugin saved and pinned carol's command, and heard neither.
            #expect(try await chat.service.message(command.id, as: "bot").savedAt != 0)
            #expect(try await chat.service.message(command.id, as: "bot").pinnedBy == "bot")
            #expect(try await chat.botMessages(in: .group("room")).isEmpty)
            // The bot user's save from another session, and bob's unpin, are heard.
            let other = try await chat.post("later", as: "carol", to: .group("room"))
            _ = try await chat.service.save(other.id, as: "bot", session: "web")
            _ = try await chat.service.unpin(command.id, as: "bob")
            #expect(
                try await chat.botMessages(in: .group("room")).compactMap(\.text) == [
                    "bot saved later", "Bob unpinned bm keep",
                ])
        }
    }
}

/// Saves and pins a command; tells the saves and unpins it hears, and who made them.
struct BookmarkingPlugin: BotPlugin {
    static let name = "bookmarking"
    init(configuration: NoConfiguration) throws {}

    func handle(_ context: BotContext) async throws {
        try await context.save()
        try await context.pin()
    }

    func onMessageSaved(_ context: BotContext) async throws {
        try await context.reply("\(context.event.actor ?? "?") saved \(context.message?.text ?? "")")
    }

    func onMessageUnpinned(_ context: BotContext) async throws {
        try await context.reply("\(context.actor?.name ?? "?") unpinned \(context.message?.text ?? "")")
    }
}
