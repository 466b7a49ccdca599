import PerchChat
import PerchConfig
import PerchService
import PerchYAML

/// A Swift plugin: code a bot runs on its events, configured from its bot file.
///
/// A bot lists the plugins it uses under `plugins:`; the host creates one instance per bot from
/// the entry's `config:` subtree, decoded into ``Configuration`` with located findings. Every hook
/// has a default that does nothing, so a plugin implements only what it needs. A hook that throws
/// or takes too long is logged and counted; it never stops other bots.
///
/// ```swift
/// struct Karma: BotPlugin {
///     static let name = "karma"
///     struct Configuration: Decodable, Sendable { var emoji: String? }
///     let configuration: Configuration
///     init(configuration: Configuration) { self.configuration = configuration }
///
///     func onTextMessageReceived(_ context: BotContext) async throws {
///         guard let text = context.message?.text, text.hasSuffix("++") else { return }
///         let who = String(text.dropLast(2))
///         let score = Int(try await context.storage.value(for: who) ?? "0")! + 1
///         try await context.storage.set(String(score), for: who)
///         try await context.reply("\(who) has \(score) \(configuration.emoji ?? "points")")
///     }
/// }
/// ```
public protocol BotPlugin: Sendable {
    associatedtype Configuration: Decodable & Sendable = NoConfiguration

    /// The name bot files use (`plugins: [{name: karma}]`, `- plugin: karma`).
    static var name: String { get }

    /// Whether what the plugin's commands do is thread subscriptions (a follow bot's): its
    /// commands leave `help` while the follow controls' gate is closed. Default false.
    var offersThreadSubscriptions: Bool { get }

    /// A JSON Schema of ``Configuration`` for editors (`perch schema bot`), or nil (the default):
    /// then an editor takes any `config`. `perch check` decodes the configuration either way.
    static var configurationSchema: JSONValue? { get }

    init(configuration: Configuration) throws

    /// Called once before this instance hears its first event: at the host's start, and at a
    /// reload that made it (the instance it replaces stops after it has started, so no event goes
    /// without one). The bots' plugins start one at a time, each bot's in its file's order, within
    /// 10 seconds each. A start that throws or takes longer is logged and counted
    /// (`perch_plugin_lifecycle_failures_total`), and the instance hears nothing until the next
    /// reload.
    func start(_ environment: PluginEnvironment) async throws
    /// Called once when the host stops, or when a reload drops or replaces this instance: after its
    /// last event, in the reverse of the start order, within 10 seconds (then abandoned).
    func stop() async
    /// Whether, at a reload, this running instance takes the place of `replacement` (a new instance
    /// of the reloaded bot's entry of the same name): it is then neither stopped nor started again.
    /// The default, false, replaces it.
    func continues(as replacement: any BotPlugin) -> Bool

    /// A rule's `plugin: NAME` action fired on this event.
    func handle(_ context: BotContext) async throws

    /// `onTextMessageReceived`: a new text message the bot can see (after `hears`).
    func onTextMessageReceived(_ context: BotContext) async throws
    /// `onMediaMessageReceived`: a new image, video, audio or file message.
    func onMediaMessageReceived(_ context: BotContext) async throws
    /// `onCustomMessageReceived`: a new custom message.
    func onCustomMessageReceived(_ context: BotContext) async throws
    /// `onMessageEdited`.
    func onMessageEdited(_ context: BotContext) async throws
    /// `onMessageDeleted`.
    func onMessageDeleted(_ context: BotContext) async throws
    /// `onMessagePinned` (the whole conversation hears it).
    func onMessagePinned(_ context: BotContext) async throws
    /// `onMessageUnpinned`.
    func onMessageUnpinned(_ context: BotContext) async throws
    /// `onMessageSaved` / `onMessageUnsaved` of the bot's own user, from another session.
    func onMessageSaved(_ context: BotContext) async throws
    func onMessageUnsaved(_ context: BotContext) async throws
    /// `onMessageReactionAdded` / `onMessageReactionRemoved` (the whole conversation hears them;
    /// `context.event.reaction` says who reacted with what).
    func onMessageReactionAdded(_ context: BotContext) async throws
    func onMessageReactionRemoved(_ context: BotContext) async throws
    /// Group member events: joined, left, kicked, banned, unbanned, scope changed, added.
    func onGroupMemberEvent(_ context: BotContext) async throws
    /// Someone's subscription to a thread of a conversation the bot is in changed, by any means
    /// (the web chat's controls, the API, a command, a bot's action, a reply or a mention that
    /// subscribed them), or the bot's own did: `onThreadSubscribed` / `onThreadUnsubscribed`, so a
    /// plugin's own follow control stays in step. Called by the default ``onEvent(_:)``.
    func onThreadSubscriptionChanged(parentMessageId: Int64, uid: String, isSubscribed: Bool) async
    /// Every routed notification, each user's, with its message, when the bot file's plugin entry
    /// says `notifications: true`: a plugin that delivers notifications its own way (a push
    /// service, e-mail). At least once: after a host's crash, the last batch comes again (the
    /// notification's `seq` tells a repeat). A hook that throws is logged and counted; the next
    /// notification comes all the same.
    func onNotification(_ notification: NotificationRecord, bot: BotIdentity) async throws
    /// Every event the bot hears. The default calls the hook named after the event; override it to
    /// take all events in one place.
    func onEvent(_ context: BotContext) async throws
    /// Whether ``onEvent(_:)`` wants events named `name`. A plugin that does not is not called for
    /// them, and the host then commits the rules' last reply to such an event without waiting for
    /// it. The default: every event.
    func hears(_ name: EventName) -> Bool
}

extension BotPlugin {
    public static var configurationSchema: JSONValue? { nil }
    public var offersThreadSubscriptions: Bool { false }
    public func start(_ environment: PluginEnvironment) async throws {}
    public func stop() async {}
    public func continues(as replacement: any BotPlugin) -> Bool { false }
    public func handle(_ context: BotContext) async throws {}
    public func onTextMessageReceived(_ context: BotContext) async throws {}
    public func onMediaMessageReceived(_ context: BotContext) async throws {}
    public func onCustomMessageReceived(_ context: BotContext) async throws {}
    public func onMessageEdited(_ context: BotContext) async throws {}
    public func onMessageDeleted(_ context: BotContext) async throws {}
    public func onMessagePinned(_ context: BotContext) async throws {}
    public func onMessageUnpinned(_ context: BotContext) async throws {}
    public func onMessageSaved(_ context: BotContext) async throws {}
    public func onMessageUnsaved(_ context: BotContext) async throws {}
    public func onMessageReactionAdded(_ context: BotContext) async throws {}
    public func onMessageReactionRemoved(_ context: BotContext) async throws {}
    public func onGroupMemberEvent(_ context: BotContext) async throws {}
    public func onThreadSubscriptionChanged(parentMessageId: Int64, uid: String, isSubscribed: Bool) async {}
    public func onNotification(_ notification: NotificationRecord, bot: BotIdentity) async throws {}
    public func hears(_ name: EventName) -> Bool { true }

    public func onEvent(_ context: BotContext) async throws {
        switch context.event.name {
        case .textMessageReceived: try await onTextMessageReceived(context)
        case .mediaMessageReceived: try await onMediaMessageReceived(context)
        case .customMessageReceived: try await onCustomMessageReceived(context)
        case .messageEdited: try await onMessageEdited(context)
        case .messageDeleted: try await onMessageDeleted(context)
        case .messagePinned: try await onMessagePinned(context)
        case .messageUnpinned: try await onMessageUnpinned(context)
        case .messageSaved: try await onMessageSaved(context)
        case .messageUnsaved: try await onMessageUnsaved(context)
        case .messageReactionAdded: try await onMessageReactionAdded(context)
        case .messageReactionRemoved: try await onMessageReactionRemoved(context)
        case .groupMemberJoined, .groupMemberLeft, .groupMemberKicked, .groupMemberBanned, .groupMemberUnbanned,
            .groupMemberScopeChanged, .memberAddedToGroup:
            try await onGroupMemberEvent(context)
        case .threadSubscribed, .threadUnsubscribed:
            guard let parent = context.event.message?.id, let uid = context.event.actor else { return }
            await onThreadSubscriptionChanged(
                parentMessageId: parent, uid: uid, isSubscribed: context.event.name == .threadSubscribed)
        case .notificationsRead: break
        }
    }
}

/// The configuration of a plugin that takes none.
public struct NoConfiguration: Decodable, Sendable {
    public init() {}
}

/// The Swift plugins a build knows, by name. `PluginRegistry.standard` holds Perch's own.
public struct PluginRegistry: Sendable {
    struct Entry: Sendable {
        let make: @Sendable (ConfigSubtree?, String) -> (plugin: (any BotPlugin)?, findings: [Finding])
        var schema: JSONValue? = nil
    }

    var entries: [String: Entry] = [:]

    public init() {}

    /// Registers `type` under its name.
    public mutating func register<P: BotPlugin>(_ type: P.Type) {
        entries[P.name] = Entry(make: Self.maker(type), schema: P.configurationSchema)
    }

    private static func maker<P: BotPlugin>(_ type: P.Type)
        -> @Sendable (ConfigSubtree?, String) -> (
            plugin: (any BotPlugin)?, findings: [Finding]
        )
    {
        { subtree, path in
            var configuration: P.Configuration?
            var findings: [Finding] = []
            if let node = subtree?.node {
                let decoded = ConfigDecoder().decode(P.Configuration.self, from: node)
                configuration = decoded.value
                findings = decoded.findings.map { finding in
                    var copy = finding
                    copy.path = path + (finding.path.isEmpty ? "" : "." + finding.path)
                    return copy
                }
            } else if let empty = try? ConfigDecoder.decodeEmpty(P.Configuration.self) {
                configuration = empty
            } else {
                findings.append(
                    Finding(
                        location: SourceLocation(file: "", line: 1, column: 1), path: path,
                        message: "plugin '\(P.name)' needs a `config` mapping"))
            }
            guard findings.isEmpty, let configuration else { return (nil, findings) }
            do {
                return (try P(configuration: configuration), [])
            } catch {
                let location = subtree?.node.location ?? SourceLocation(file: "", line: 1, column: 1)
                return (nil, [Finding(location: location, path: path, message: "plugin '\(P.name)': \(error)")])
            }
        }
    }

    public var names: Set<String> { Set(entries.keys) }

    /// The configuration schemas of the plugins that give one, by name (`perch schema bot`).
    public var configurationSchemas: [String: JSONValue] { entries.compactMapValues(\.schema) }

    /// Perch's own plugins.
    public static var standard: PluginRegistry {
        var registry = PluginRegistry()
        registry.register(ThreadFollowPlugin.self)
        return registry
    }

    func make(_ name: String, config: ConfigSubtree?, path: String) -> (plugin: (any BotPlugin)?, findings: [Finding])?
    {
        entries[name]?.make(config, path)
    }
}

extension PluginRegistry {
    /// The findings of the bots' plugin configurations (`perch check` runs this, as the host does at
    /// start): each `config:` subtree decoded into its plugin's `Configuration`.
    public func check(_ bots: [LoadedBot], threadSubscriptionGate: Bool = true) -> [Finding] {
        BotCompiler(registry: self, gate: threadSubscriptionGate).compile(bots).findings
    }
}
