import PerchChat

/// JSON Schemas (draft-07, what yaml-language-server reads) of config.yaml and of a bot file, for
/// editors: completion, hover text and a first check as one types (`perch schema`). They say
/// what each key is and takes; `perch check` stays the judge (it also knows the users, groups,
/// strings and plugins a file names, which a schema cannot).
///
/// Written beside the types that decode the files: a key added to a `CodingKeys` belongs here
/// too (ConfigSchemaTests checks the shipped files and the broken corpus against these).
public enum ConfigJSONSchema {
    /// config.yaml's schema.
    public static var config: JSONValue {
        document(
            "Perch config.yaml",
            object(
                required: ["version"],
                [
                    "version": integer("the file's format version: 1", minimum: 1, maximum: 1),
                    "server": object([
                        "listen": string("the HTTP API's address, host:port (127.0.0.1:8080)"),
                        "dataDirectory": string("where the database and uploads live (data)"),
                        "apiKey": string("the app's API key: write ${PERCH_API_KEY}, from the environment"),
                        "maxBodyBytes": integer("the largest request body", minimum: 1),
                        "maxUploadBytes": integer("the largest upload", minimum: 1),
                        "devSignIn": boolean("the web chat signs in as a seeded person without a password"),
                        "uploadTypes": list(string("a media type the server takes")),
                        "webDirectory": string("where the web chat's files are served from"),
                        "maxStreams": integer("live streams open at once", minimum: 1),
                        "idleTimeoutSeconds": integer("an idle connection's life", minimum: 1),
                        "heartbeatSeconds": integer("a live stream's heartbeat", minimum: 1),
                        "hostNames": list(string("a Host header the server answers")),
                        "headerTimeoutSeconds": integer("time for a request's head", minimum: 1),
                        "maxConnectionsPerClient": integer("connections one address may hold", minimum: 1),
                        "bodyTimeoutSeconds": integer("time for a request's body", minimum: 1),
                    ]),
                    "backend": oneOf(["embedded", "matrix"], "the chat service the bots live in"),
                    "matrix": object([
                        "homeserver": string("the client-server API's base URL"),
                        "accounts": map(string("a bot's access token, as ${VARIABLE}"), "a bot's uid → its token"),
                        "rooms": map(string("a room id (!id) or alias (#name:server)"), "a group id → its room"),
                        "followDigestSeconds": integer(
                            "the window that batches a followed thread's replies", minimum: 1),
                        "syncTimeoutSeconds": integer("a /sync long-poll's timeout", minimum: 1),
                    ]),
                    "storage": object([
                        "synchronous": oneOf(["normal", "full"], "SQLite's synchronous setting"),
                        "eventRetentionDays": integer("how long live events and notifications are kept", minimum: 1),
                    ]),
                    "features": object([
                        "pin": boolean("messages can be pinned"), "save": boolean("messages can be saved"),
                    ]),
                    "limits": object([
                        "pinsPerConversation": integer("pins a conversation holds", minimum: 1),
                        "savesPerUser": integer("saves a person holds", minimum: 1),
                        "messageTextBytes": integer("the longest text", minimum: 1),
                        "botHops": integer("bots answering bots, at most", minimum: 0),
                        "messagesPerMinute": integer("a person's sends a minute (0: no limit)", minimum: 0),
                    ]),
                    "notifications": object([
                        "group": preferences, "oneOnOne": preferences,
                        "webhooks": list(
                            object(
                                required: ["url", "secret"],
                                [
                                    "url": string("where each notification is POSTed"),
                                    "secret": string("signs each post; write ${VARIABLE}"),
                                    "events": list(oneOf(NotificationReason.allCases.map(\.rawValue))),
                                    "name": string("the webhook's name in the log and metrics"),
                                    "maxAttempts": integer("tries before a dead letter", minimum: 1),
                                    "maxBackoffSeconds": integer("the longest pause between tries", minimum: 1),
                                    "timeoutSeconds": integer("one post's time", minimum: 1),
                                ])),
                    ]),
                    "ui": object([
                        "threadSubscription": object([
                            "enabled": boolean("the follow controls' gate"),
                            "hideOption": boolean("hide the message menu's subscribe option"),
                            "hideButton": boolean("hide the thread panel's button"),
                            "topBarBell": boolean("the conversation's bell"),
                        ]),
                        "replyType": oneOf(["QUOTE_REPLY", "NONE"], "whether the web chat offers quote replies"),
                    ]),
                    "strings": map(string("the copy"), "the copy table: a key → its text"),
                    "seed": object([
                        "users": list(
                            object(
                                required: ["uid", "name"],
                                [
                                    "uid": string("the user's id"), "name": string("their name"),
                                    "role": string("a role"),
                                ]
                            )),
                        "groups": list(
                            object(
                                required: ["guid", "name", "owner"],
                                [
                                    "guid": string("the group's id"), "name": string("its name"),
                                    "type": oneOf(GroupType.allCases.map(\.rawValue)),
                                    "owner": string("its owner's uid"),
                                    "members": list(object(required: ["uid"], ["uid": string(), "scope": scope])),
                                ])),
                    ]),
                    "botsDirectory": string("where the bot files are (bots)"),
                    "admins": list(string("a uid that `allow: {admins: true}` lets in")),
                ]))
    }

    /// A bot file's schema; `plugins` gives the configuration schema of each Swift plugin a build
    /// knows, by name (an entry of another name takes any `config`).
    public static func bot(plugins: [String: JSONValue] = [:]) -> JSONValue {
        var pluginEntry = object(
            required: ["name"],
            [
                "name": string("the name actions call it by (plugin: NAME)"),
                "exec": list(string(), "an out-of-process plugin's command and arguments"),
                "url": string("a service each plugin: action POSTs to"),
                "secret": string("signs the posts; write ${VARIABLE}"),
                "headers": map(string(), "more headers for each post"),
                "timeout_ms": integer("one call's time", minimum: 10, maximum: 600_000),
                "config": .object(["description": .string("handed to the plugin")]),
                "notifications": boolean("the plugin sees every routed notification"),
                "lifecycle": boolean("with url: the service is posted start and stop"),
            ])
        if !plugins.isEmpty {
            pluginEntry = .object(
                fields(pluginEntry).merging([
                    "allOf": .array(
                        plugins.sorted { $0.key < $1.key }.map { name, schema in
                            .object([
                                "if": .object(["properties": .object(["name": .object(["const": .string(name)])])]),
                                "then": .object(["properties": .object(["config": schema])]),
                            ])
                        })
                ]) { _, new in new })
        }
        let access = object([
            "users": list(string()), "groups": list(string()), "scopes": list(scope),
            "admins": boolean("config.yaml's admins"),
        ])
        let rule = object(
            required: ["on", "do"],
            [
                "name": string("for logs, metrics and dry runs"), "on": trigger, "when": conditions,
                "do": list(action, "the actions, in order"),
                "help": string("one line on what the command does, for help"),
                "usage": string("a command's typed arguments: <name:kind> [name:kind]"),
                "allow": access, "deny": access, "refusal": oneOf(["private", "silent"]),
            ])
        return document(
            "Perch bot file",
            object(
                required: ["name", "user"],
                [
                    "name": string("the bot's name"),
                    "user": object(required: ["uid"], ["uid": string("its user's id"), "name": string("its name")]),
                    "system": boolean("may pin as app_system"), "enabled": boolean("loaded at all"),
                    "groups": list(
                        .object([
                            "oneOf": .array([
                                string("a group's guid"),
                                object(required: ["guid"], ["guid": string(), "scope": scope]),
                            ])
                        ])),
                    "hears": oneOf(["all", "commands", "mentions"], "which group messages reach the bot"),
                    "command_prefix": string("the commands' prefix (!)"),
                    "help_command": boolean("answer <prefix>help"),
                    "thread_subscription": boolean("this bot's follow commands"),
                    "allow_subscribing_others": boolean("may subscribe someone other than the sender"),
                    "rate_limit": object([
                        "per_minute": integer(minimum: 1), "burst": integer(minimum: 1),
                        "per_conversation_per_minute": integer(minimum: 1),
                    ]),
                    "plugins": list(pluginEntry),
                    "rules": list(rule),
                ]))
    }

    // MARK: The parts

    static let scope = oneOf(GroupMemberScope.allCases.map(\.rawValue), "a member's scope")

    static var preferences: JSONValue {
        object([
            "messages": oneOf(MessagesOption.allCases.map(\.name)),
            "replies": oneOf(RepliesOption.allCases.map(\.name)),
            "quotedReplies": oneOf(QuotedRepliesOption.allCases.map(\.name)),
        ])
    }

    static var trigger: JSONValue {
        let target: [String: JSONValue] = ["group": string("posts into this group"), "user": string("or to this user")]
        return .object([
            "description": .string("the trigger"),
            "oneOf": .array([
                oneOf(
                    [
                        "message", "thread_reply", "mention", "pinned", "unpinned", "edited", "deleted",
                        "member_joined", "thread_subscribed", "thread_unsubscribed", "saved", "unsaved",
                        "reaction_added", "reaction_removed",
                    ]),
                object(required: ["mention"], ["mention": stringOrList]),
                object(required: ["command"], ["command": string("the command's name")]),
                object(required: ["reaction_added"], ["reaction_added": stringOrList]),
                object(required: ["reaction_removed"], ["reaction_removed": stringOrList]),
                object(
                    required: ["schedule"],
                    target.merging(["schedule": string("five cron fields"), "timezone": string("an IANA zone")]) {
                        $1
                    }),
                object(
                    required: ["webhook"],
                    target.merging(["webhook": string("the hook's name"), "secret": string("${VARIABLE}")]) { $1 }),
            ]),
        ])
    }

    static var conditions: JSONValue {
        object([
            "groups": stringOrList, "one_on_one": boolean(), "from": stringOrList,
            "sender_scope": .object(["oneOf": .array([scope, list(scope)])]), "sender_is_bot": boolean(),
            "text_matches": string("a regular expression (PCRE2)"), "contains_words": list(string()),
            "threaded": boolean(),
        ])
    }

    static var action: JSONValue {
        let text: JSONValue = .object([
            "oneOf": .array([
                string("the text, a template"), object(required: ["text"], ["text": string(), "notify": boolean()]),
            ])
        ])
        let who = string("sender, self, or a uid")
        return .object([
            "oneOf": .array([
                oneOf(["pin", "unpin", "save", "delete", "kick", "ban", "subscribe", "unsubscribe"]),
                object(required: ["reply"], ["reply": text]),
                object(required: ["reply_in_thread"], ["reply_in_thread": text]),
                object(required: ["quote_reply"], ["quote_reply": text]),
                object(required: ["direct_message"], ["direct_message": text]),
                object(
                    required: ["pin"],
                    [
                        "pin": object([
                            "as": oneOf(["bot", "app_system"]), "when_full": oneOf(["refuse", "unpin_oldest"]),
                        ])
                    ]),
                object(required: ["react"], ["react": string("a reaction")]),
                object(required: ["unreact"], ["unreact": string("a reaction")]),
                object(
                    required: ["subscribe"], ["subscribe": .object(["oneOf": .array([who, object(["who": who])])])]),
                object(
                    required: ["unsubscribe"], ["unsubscribe": .object(["oneOf": .array([who, object(["who": who])])])]),
                object(required: ["plugin"], ["plugin": string("a plugin's name")]),
            ])
        ])
    }

    static let stringOrList: JSONValue = .object(["oneOf": .array([string(), list(string())])])

    // MARK: Building blocks

    static func document(_ title: String, _ body: JSONValue) -> JSONValue {
        var object = fields(body)
        object["$schema"] = .string("http://json-schema.org/draft-07/schema#")
        object["title"] = .string(title)
        return .object(object)
    }

    /// An object of these keys and no others.
    static func object(required: [String] = [], _ properties: [String: JSONValue]) -> JSONValue {
        var object: [String: JSONValue] = [
            "type": .string("object"), "properties": .object(properties), "additionalProperties": .bool(false),
        ]
        if !required.isEmpty { object["required"] = .array(required.map(JSONValue.string)) }
        return .object(object)
    }

    static func map(_ values: JSONValue, _ description: String) -> JSONValue {
        .object(["type": .string("object"), "additionalProperties": values, "description": .string(description)])
    }

    static func list(_ items: JSONValue, _ description: String? = nil) -> JSONValue {
        described(.object(["type": .string("array"), "items": items]), description)
    }

    static func string(_ description: String? = nil) -> JSONValue {
        described(.object(["type": .string("string")]), description)
    }

    static func boolean(_ description: String? = nil) -> JSONValue {
        described(.object(["type": .string("boolean")]), description)
    }

    static func integer(_ description: String? = nil, minimum: Int? = nil, maximum: Int? = nil) -> JSONValue {
        var object: [String: JSONValue] = ["type": .string("integer")]
        if let minimum { object["minimum"] = .number(Double(minimum)) }
        if let maximum { object["maximum"] = .number(Double(maximum)) }
        return described(.object(object), description)
    }

    static func oneOf(_ values: [String], _ description: String? = nil) -> JSONValue {
        described(.object(["enum": .array(values.map(JSONValue.string))]), description)
    }

    /// An object's fields (none for anything else).
    static func fields(_ value: JSONValue) -> [String: JSONValue] {
        guard case .object(let object) = value else { return [:] }
        return object
    }

    static func described(_ schema: JSONValue, _ description: String?) -> JSONValue {
        guard let description, case .object(var object) = schema else { return schema }
        object["description"] = .string(description)
        return .object(object)
    }
}
