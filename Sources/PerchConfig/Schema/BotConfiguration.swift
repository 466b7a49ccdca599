import PerchChat
import PerchYAML

/// One `bots/*.yaml` file: a bot user, which group messages it hears, and its rules.
public struct BotConfiguration: Decodable, Sendable {
    /// `name` (required): unique among the bots; used in logs, metrics and plugin state.
    public var name: String
    /// `user` (required): the bot's chat user, `uid` and `name`; created or updated at start.
    public var user: BotUser
    /// `system` (default false): the bot may act as `app_system` (`pin: {as: app_system}`).
    public var system: Bool
    /// `enabled` (default true).
    public var enabled: Bool
    /// `groups` (default none): groups the bot joins at start, as a participant unless `scope` says.
    public var groups: [BotGroup]
    /// `hears` (default `all`): which group messages reach the bot at all, like CometChat's
    /// `groupChatSetting`: `all`, `commands` (starting with the prefix) or `mentions`.
    public var hears: Hears
    /// `command_prefix` (default `!`).
    public var commandPrefix: String
    /// `thread_subscription` (default true): this bot's follow commands; ANDed with
    /// `ui.threadSubscription.enabled`.
    public var threadSubscription: Bool
    /// `rate_limit`: the bot's outgoing actions, per bot and per conversation (token buckets).
    public var rateLimit: RateLimit
    /// `plugins` (default none): Swift plugins by name, or external ones with `exec`.
    public var plugins: [PluginReference]
    /// `rules` (default none).
    public var rules: [Rule]
    /// `help_command` (default true): a bot with commands answers `<prefix>help` with the commands
    /// it takes where it was asked (unless one of its rules is a `help` command itself).
    public var helpCommand: Bool
    /// `allow_subscribing_others` (default false): the bot may subscribe someone other than the
    /// person it answers (`subscribe: UID`, a plugin's subscribe of another user) to a thread. A
    /// subscription brings its notifications, so subscribing people who did not ask is an opt-in.
    public var allowSubscribingOthers: Bool

    enum CodingKeys: String, CodingKey {
        case name, user, system, enabled, groups, hears, rules, plugins
        case allowSubscribingOthers = "allow_subscribing_others"
        case commandPrefix = "command_prefix"
        case helpCommand = "help_command"
        case threadSubscription = "thread_subscription"
        case rateLimit = "rate_limit"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        user = try c.decode(BotUser.self, forKey: .user)
        system = try c.decodeIfPresent(Bool.self, forKey: .system) ?? false
        enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? true
        groups = try c.decodeIfPresent([BotGroup].self, forKey: .groups) ?? []
        hears = try c.decodeIfPresent(Hears.self, forKey: .hears) ?? .all
        commandPrefix = try c.decodeIfPresent(String.self, forKey: .commandPrefix) ?? "!"
        threadSubscription = try c.decodeIfPresent(Bool.self, forKey: .threadSubscription) ?? true
        rateLimit = try c.decodeIfPresent(RateLimit.self, forKey: .rateLimit) ?? RateLimit()
        plugins = try c.decodeIfPresent([PluginReference].self, forKey: .plugins) ?? []
        rules = try c.decodeIfPresent([Rule].self, forKey: .rules) ?? []
        helpCommand = try c.decodeIfPresent(Bool.self, forKey: .helpCommand) ?? true
        allowSubscribingOthers = try c.decodeIfPresent(Bool.self, forKey: .allowSubscribingOthers) ?? false
    }
}

public struct BotUser: Decodable, Sendable {
    /// `uid` (required).
    public var uid: String
    /// `name` (default: the uid).
    public var name: String

    enum CodingKeys: String, CodingKey { case uid, name }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        uid = try c.decode(String.self, forKey: .uid)
        name = try c.decodeIfPresent(String.self, forKey: .name) ?? uid
    }
}

/// A group the bot joins: a guid, or `{guid, scope}`.
public struct BotGroup: Decodable, Sendable {
    public var guid: String
    public var scope: GroupMemberScope

    enum CodingKeys: String, CodingKey { case guid, scope }

    public init(from decoder: any Decoder) throws {
        if case .scalar? = decoder.configNode?.content {
            guid = try decoder.singleValueContainer().decode(String.self)
            scope = .participant
            return
        }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guid = try c.decode(String.self, forKey: .guid)
        scope = try c.decodeIfPresent(GroupMemberScope.self, forKey: .scope) ?? .participant
    }
}

public enum Hears: String, Decodable, Sendable, CaseIterable {
    case all
    case commands
    case mentions
}

public struct RateLimit: Decodable, Sendable {
    /// `per_minute` (default 120): actions a minute for the whole bot.
    public var perMinute = 120
    /// `burst` (default 20): actions at once before the rate applies.
    public var burst = 20
    /// `per_conversation_per_minute` (default 30, CometChat's per-user send rate).
    public var perConversationPerMinute = 30

    public init() {}

    enum CodingKeys: String, CodingKey {
        case perMinute = "per_minute"
        case burst
        case perConversationPerMinute = "per_conversation_per_minute"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        perMinute = try c.decodeIfPresent(Int.self, forKey: .perMinute) ?? perMinute
        burst = try c.decodeIfPresent(Int.self, forKey: .burst) ?? burst
        perConversationPerMinute =
            try c.decodeIfPresent(Int.self, forKey: .perConversationPerMinute) ?? perConversationPerMinute
    }
}

/// A plugin the bot uses: a Swift plugin registered under `name`, an external process, or a
/// service reached over HTTP.
public struct PluginReference: Decodable, Sendable {
    /// `name` (required): the name actions call it by (`plugin: name`).
    public var name: String
    /// `exec` (default none): command and arguments of an out-of-process plugin (JSON-RPC on stdio).
    public var exec: [String]?
    /// `url` (default none): an `http` or `https` URL each `plugin:` action POSTs its JSON-RPC
    /// request to (an outgoing webhook); the answer's body is the JSON-RPC response.
    public var url: String?
    /// `secret` (default none): with `url`, signs each post (`X-Hub-Signature-256`, the body's
    /// HMAC-SHA256); write it as `${VAR}`, from the environment.
    public var secret: String?
    /// `headers` (default none): with `url`, more headers for each post, such as
    /// `Authorization: "Bearer ${TOKEN}"` for a service that takes a token instead of a signature.
    public var headers: [String: String]?
    /// `timeout_ms` (default 5000): how long one event may take before it is abandoned.
    public var timeoutMilliseconds: Int
    /// `config` (default none): handed to the plugin, which decodes it into its own type.
    public var config: ConfigSubtree?
    /// `notifications` (default false): the plugin sees every routed notification (its
    /// `onNotification` hook), to deliver them its own way. Swift and `exec` plugins only.
    public var notifications: Bool
    /// `lifecycle` (default false): with `url`, the service is also posted `start` and `stop` when
    /// the host starts, reloads and stops the bot. Swift and `exec` plugins always get them.
    public var lifecycle: Bool

    enum CodingKeys: String, CodingKey {
        case name, exec, url, secret, headers, config, notifications, lifecycle
        case timeoutMilliseconds = "timeout_ms"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        exec = try c.decodeIfPresent([String].self, forKey: .exec)
        url = try c.decodeIfPresent(String.self, forKey: .url)
        secret = try c.decodeIfPresent(String.self, forKey: .secret)
        headers = try c.decodeIfPresent([String: String].self, forKey: .headers)
        timeoutMilliseconds = try c.decodeIfPresent(Int.self, forKey: .timeoutMilliseconds) ?? 5000
        config = try c.decodeIfPresent(ConfigSubtree.self, forKey: .config)
        notifications = try c.decodeIfPresent(Bool.self, forKey: .notifications) ?? false
        lifecycle = try c.decodeIfPresent(Bool.self, forKey: .lifecycle) ?? false
    }
}

/// A YAML subtree kept as it was written (with positions) for a plugin to decode later.
public struct ConfigSubtree: Decodable, Sendable {
    public var node: YAMLNode

    public init(from decoder: any Decoder) throws {
        guard let node = decoder.configNode else { throw ConfigValueError("expected a mapping") }
        // Every key below belongs to the plugin: mark them as known by reading them all.
        if case .mapping = node.content { _ = try decoder.container(keyedBy: PathKey.self).allKeys }
        self.node = node
    }
}

/// One rule: when `on` fires and every condition of `when` holds, the actions of `do` run in order.
public struct Rule: Decodable, Sendable {
    /// `name` (default `rules[i]`): for logs, metrics and dry runs.
    public var name: String?
    /// `on` (required): the trigger.
    public var trigger: Trigger
    /// `when` (default none): conditions, all of which must hold.
    public var conditions: Conditions
    /// `do` (required): the actions, at least one.
    public var actions: [Action]
    /// `help` (default none): one line on what a `command` rule does, for the bot's `help` answer.
    public var help: String?
    /// `usage` (default none): a `command` rule's typed arguments (`"<when:duration> <text:rest>"`),
    /// parsed and checked before the rule runs (``CommandUsage``).
    public var usage: CommandUsage?
    /// `allow` (default everyone): the rule fires only for senders it matches (docs/configuration.md,
    /// "Permissions").
    public var allow: Access?
    /// `deny` (default nobody): the rule never fires for senders it matches, whatever `allow` says.
    public var deny: Access?
    /// `refusal` (default `private`): what a command refused by `allow`/`deny` answers.
    public var refusal: Refusal

    enum CodingKeys: String, CodingKey {
        case name, help, usage, allow, deny, refusal
        case trigger = "on"
        case conditions = "when"
        case actions = "do"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        trigger = try c.decode(Trigger.self, forKey: .trigger)
        conditions = try c.decodeIfPresent(Conditions.self, forKey: .conditions) ?? Conditions()
        actions = try c.decode([Action].self, forKey: .actions)
        help = try c.decodeIfPresent(String.self, forKey: .help)
        usage = try c.decodeIfPresent(CommandUsage.self, forKey: .usage)
        allow = try c.decodeIfPresent(Access.self, forKey: .allow)
        deny = try c.decodeIfPresent(Access.self, forKey: .deny)
        refusal = try c.decodeIfPresent(Refusal.self, forKey: .refusal) ?? .private
    }
}
