import Foundation
import PerchChat
import PerchConfig
import PerchService

/// What a plugin's ``BotPlugin/start(_:)`` receives: what it needs to act outside an event (a
/// timer of its own, a connection to another service). Valid until its ``BotPlugin/stop()``.
///
/// Its sends are the bot's, through the same gate as a rule's (the rate limits, the loop guard,
/// the send observers); with no event behind them they have no message to answer, so they name
/// their conversation in the draft.
public final class PluginEnvironment: Sendable {
    public let bot: BotIdentity
    /// The plugin's name in the bot file.
    public let plugin: String
    /// The plugin entry's `config:` as JSON (a Swift plugin also has it decoded, at its `init`).
    public let configuration: JSONValue
    public let logger: HostLogger
    /// The bot's storage (``PluginStorage/namespace(_:)`` for one of the plugin's own).
    public let storage: PluginStorage
    /// Whether thread-subscription commands and controls are on for this bot.
    public let threadSubscriptionEnabled: Bool
    let actions: BotActions
    let strings: StringTable
    let metrics: HostMetrics

    init(
        bot: BotIdentity, plugin: String, configuration: JSONValue, logger: HostLogger, actions: BotActions,
        strings: StringTable, threadSubscriptionEnabled: Bool
    ) {
        self.bot = bot
        self.plugin = plugin
        self.configuration = configuration
        self.logger = logger
        self.actions = actions
        self.strings = strings
        self.threadSubscriptionEnabled = threadSubscriptionEnabled
        metrics = actions.metrics
        storage = PluginStorage(service: actions.service, bot: bot.name)
    }

    /// The environment of `bot`'s plugin `plugin`, its configuration read from the bot's file.
    convenience init(bot: CompiledBot, plugin: String, logger: HostLogger, actions: BotActions, strings: StringTable) {
        let reference = bot.configuration.plugins.first { $0.name == plugin }
        self.init(
            bot: bot.identity, plugin: plugin,
            configuration: reference?.config.map { ExternalPlugin.json(of: $0.node) } ?? .object([:]), logger: logger,
            actions: actions, strings: strings, threadSubscriptionEnabled: bot.threadSubscriptionEnabled)
    }

    /// The chat service, to read what the bot may see (as the bot's user).
    public var service: ChatService { actions.service }

    /// Sends `draft` as the bot. Give the draft a `muid` to make a repeat (after a crash, say) a
    /// no-op; without one each call sends a new message.
    /// - Throws: `ERR_TOO_MANY_REQUESTS` from the bot's rate limits, else what the service throws.
    @discardableResult
    public func send(_ draft: MessageDraft) async throws(ChatError) -> Message {
        try await actions.send(draft, context: context())
    }

    /// A context with no event, for what the plugin does on its own: its sends are numbered under
    /// the plugin's name and a fresh id, its subscriptions name their thread.
    func context() -> BotContext {
        let event = ChatEvent(
            name: .customMessageReceived, conversationId: "", createdAt: Int64(Date().timeIntervalSince1970))
        return BotContext(
            bot: bot, event: event, message: nil, parent: nil, sender: nil, captures: [:], strings: strings,
            logger: logger, actions: actions, threadSubscriptionEnabled: threadSubscriptionEnabled,
            muidPrefix: "perch:\(bot.name):plugin:\(plugin):\(UUID().uuidString)")
    }
}
