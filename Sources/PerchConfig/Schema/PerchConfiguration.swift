import PerchChat

/// `config.yaml`: the host, its embedded chat service and its defaults.
///
/// Every key but `version` is optional; the defaults are listed key by key in
/// `docs/configuration.md` and next to each property here.
public struct PerchConfiguration: Decodable, Sendable {
    /// The highest configuration version this Perch reads.
    public static let supportedVersion = 1

    /// `version` (required): the schema version, `1`.
    public var version: Int
    /// `server`: where the HTTP API listens, the data directory, the API key.
    public var server: ServerConfiguration
    /// `backend` (default `embedded`): the chat service the bots talk to.
    public var backend: Backend
    /// `matrix`: the homeserver, the bots' accounts and the rooms, for `backend: matrix`.
    public var matrix: MatrixConfiguration
    /// `storage`: how durable the embedded store is.
    public var storage: StorageConfiguration
    /// `features`: the per-app gates of pins and saves.
    public var features: Features
    /// `limits`: the server-owned caps.
    public var limits: Limits
    /// `notifications`: the preferences a user has until they change them.
    public var notifications: NotificationDefaults
    /// `ui`: the UI kit's switches.
    public var ui: UIConfiguration
    /// `admins` (default none): the people a rule's `allow: {admins: true}` lets in, in one place.
    public var admins: [String]
    /// `strings`: the copy table; the UI kit's keys have defaults, others may be added.
    public var strings: StringTable
    /// `seed`: users and groups the embedded backend creates at start (idempotently).
    public var seed: Seed
    /// `botsDirectory` (default `bots`): where the `*.yaml` bot files are, relative to config.yaml.
    public var botsDirectory: String

    enum CodingKeys: String, CodingKey {
        case version, server, backend, matrix, storage, features, limits, notifications, ui, strings, seed
        case botsDirectory, admins
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(Int.self, forKey: .version)
        server = try c.decodeIfPresent(ServerConfiguration.self, forKey: .server) ?? ServerConfiguration()
        backend = try c.decodeIfPresent(Backend.self, forKey: .backend) ?? .embedded
        matrix = try c.decodeIfPresent(MatrixConfiguration.self, forKey: .matrix) ?? MatrixConfiguration()
        storage = try c.decodeIfPresent(StorageConfiguration.self, forKey: .storage) ?? StorageConfiguration()
        features = try c.decodeIfPresent(Features.self, forKey: .features) ?? Features()
        limits = try c.decodeIfPresent(Limits.self, forKey: .limits) ?? Limits()
        notifications =
            try c.decodeIfPresent(NotificationDefaults.self, forKey: .notifications) ?? NotificationDefaults()
        ui = try c.decodeIfPresent(UIConfiguration.self, forKey: .ui) ?? UIConfiguration()
        strings = try c.decodeIfPresent(StringTable.self, forKey: .strings) ?? StringTable()
        seed = try c.decodeIfPresent(Seed.self, forKey: .seed) ?? Seed()
        botsDirectory = try c.decodeIfPresent(String.self, forKey: .botsDirectory) ?? "bots"
        admins = try c.decodeIfPresent([String].self, forKey: .admins) ?? []
    }

    /// A configuration with every default, for tests and tools.
    public init(version: Int = 1) {
        self.version = version
        server = ServerConfiguration()
        backend = .embedded
        matrix = MatrixConfiguration()
        storage = StorageConfiguration()
        features = Features()
        limits = Limits()
        notifications = NotificationDefaults()
        ui = UIConfiguration()
        strings = StringTable()
        seed = Seed()
        botsDirectory = "bots"
        admins = []
    }
}

public enum Backend: String, Decodable, Sendable, CaseIterable {
    /// Perch's own chat service (SQLite, the HTTP API, the web chat).
    case embedded
    /// A Matrix homeserver (`matrix:`): the bots live in its rooms.
    case matrix
}

public struct ServerConfiguration: Decodable, Sendable {
    /// `listen` (default `127.0.0.1:8080`): host and port of the HTTP API.
    public var listen: String = "127.0.0.1:8080"
    /// `dataDirectory` (default `data`): the SQLite database and uploaded media, relative to config.yaml.
    public var dataDirectory: String = "data"
    /// `apiKey` (default none): the app's API key; write `${PERCH_API_KEY}`, never the key itself.
    public var apiKey: String?
    /// `maxBodyBytes` (default 1048576): the largest request body the API reads.
    public var maxBodyBytes: Int = 1 << 20
    /// `maxUploadBytes` (default 10485760): the largest media upload.
    public var maxUploadBytes: Int = 10 << 20
    /// `devSignIn` (default false): the web chat may sign in as any seeded user without a token.
    public var devSignIn: Bool = false
    /// `uploadTypes` (default: common images, audio, video, PDF, plain text): the MIME types
    /// `POST /v3/media` accepts.
    public var uploadTypes: [String] = ServerConfiguration.defaultUploadTypes
    /// `webDirectory` (default `web`, relative to config.yaml): the web chat's static files, served
    /// at `/`; empty serves none.
    public var webDirectory: String = "web"
    /// `maxStreams` (default 1000): event streams and WebSockets open at once; the next is answered
    /// 503 `ERR_TOO_MANY_STREAMS`. Each holds a connection and a thread (about 50 KiB).
    public var maxStreams: Int = 1_000
    /// `idleTimeoutSeconds` (default 60): a connection that sends nothing for this long (a
    /// keep-alive connection between requests, a client stalled in the middle of one) is closed.
    /// Event streams and WebSockets are not idle while open.
    public var idleTimeoutSeconds: Int = 60
    /// `heartbeatSeconds` (default 15): an event stream with nothing to send gets a `: heartbeat`
    /// comment after this long, and a WebSocket that heard nothing from its client for this long
    /// sends a ping, then closes when nothing came back for as long again.
    public var heartbeatSeconds: Int = 15
    /// `hostNames` (default none): the names clients reach the server by (`chat.example.org`, or
    /// with a port, `chat.example.org:8443`), beside `localhost` and any IP address, which are always
    /// taken. A request whose `Host` is another name is refused (a DNS-rebinding page's requests),
    /// and so is a state-changing request from a page of another origin. A reverse proxy that passes
    /// the public name in `Host` needs it here.
    public var hostNames: [String] = []
    /// `headerTimeoutSeconds` (default 10): how long a new connection may take to send its first
    /// request's head; it waits for it off libmicrohttpd's threads, and is answered 408 then.
    public var headerTimeoutSeconds: Int = 10
    /// `bodyTimeoutSeconds` (default 30): how long a request's body may take after its head, plus
    /// a second for each KiB received (so a large upload on a slow link goes on); past it the
    /// connection is closed.
    public var bodyTimeoutSeconds: Int = 30
    /// `maxConnectionsPerClient` (default 512): the connections one client address may hold open
    /// (requests, event streams, WebSockets); past it, 429. `/healthz`, `/readyz` and `/metrics`
    /// are answered whatever it holds. Behind a reverse proxy every client is the proxy's address:
    /// raise it to `maxStreams` and more.
    public var maxConnectionsPerClient: Int = 512

    public static let defaultUploadTypes = [
        "image/png", "image/jpeg", "image/gif", "image/webp", "audio/mpeg", "audio/ogg", "video/mp4", "video/webm",
        "application/pdf", "text/plain",
    ]

    public init() {}

    enum CodingKeys: String, CodingKey {
        case listen, dataDirectory, apiKey, maxBodyBytes, maxUploadBytes, devSignIn, uploadTypes, webDirectory
        case maxStreams, idleTimeoutSeconds, heartbeatSeconds, hostNames, headerTimeoutSeconds, maxConnectionsPerClient
        case bodyTimeoutSeconds
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        listen = try c.decodeIfPresent(String.self, forKey: .listen) ?? listen
        dataDirectory = try c.decodeIfPresent(String.self, forKey: .dataDirectory) ?? dataDirectory
        apiKey = try c.decodeIfPresent(String.self, forKey: .apiKey)
        maxBodyBytes = try c.decodeIfPresent(Int.self, forKey: .maxBodyBytes) ?? maxBodyBytes
        maxUploadBytes = try c.decodeIfPresent(Int.self, forKey: .maxUploadBytes) ?? maxUploadBytes
        devSignIn = try c.decodeIfPresent(Bool.self, forKey: .devSignIn) ?? devSignIn
        uploadTypes = try c.decodeIfPresent([String].self, forKey: .uploadTypes) ?? uploadTypes
        webDirectory = try c.decodeIfPresent(String.self, forKey: .webDirectory) ?? webDirectory
        maxStreams = try c.decodeIfPresent(Int.self, forKey: .maxStreams) ?? maxStreams
        idleTimeoutSeconds = try c.decodeIfPresent(Int.self, forKey: .idleTimeoutSeconds) ?? idleTimeoutSeconds
        heartbeatSeconds = try c.decodeIfPresent(Int.self, forKey: .heartbeatSeconds) ?? heartbeatSeconds
        hostNames = try c.decodeIfPresent([String].self, forKey: .hostNames) ?? hostNames
        headerTimeoutSeconds =
            try c.decodeIfPresent(Int.self, forKey: .headerTimeoutSeconds) ?? headerTimeoutSeconds
        maxConnectionsPerClient =
            try c.decodeIfPresent(Int.self, forKey: .maxConnectionsPerClient) ?? maxConnectionsPerClient
        bodyTimeoutSeconds = try c.decodeIfPresent(Int.self, forKey: .bodyTimeoutSeconds) ?? bodyTimeoutSeconds
    }

    /// The host and port of ``listen``, or nil when it is not `host:port`.
    public var listenAddress: (host: String, port: UInt16)? {
        guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
            return nil
        }
        let host = String(listen[..<colon])
        return host.isEmpty ? nil : (host, port)
    }
}

public struct StorageConfiguration: Decodable, Sendable {
    public enum Synchronous: String, Decodable, Sendable, CaseIterable {
        case normal
        case full
    }

    /// `synchronous` (default `normal`): SQLite's `synchronous` pragma. `normal` in WAL mode loses
    /// nothing on a crash of Perch; `full` also survives a power cut.
    public var synchronous: Synchronous = .normal
    /// `eventRetentionDays` (default 7, 0–3650; 0 keeps everything): how long the event log (the
    /// live events streams and bots read) and the notification outbox keep a row. Messages are
    /// never pruned; an event a running bot has not handled is never pruned.
    public var eventRetentionDays = 7

    public init() {}

    enum CodingKeys: String, CodingKey { case synchronous, eventRetentionDays }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        synchronous = try c.decodeIfPresent(Synchronous.self, forKey: .synchronous) ?? .normal
        eventRetentionDays = try c.decodeIfPresent(Int.self, forKey: .eventRetentionDays) ?? 7
    }
}

public struct Features: Decodable, Sendable {
    /// `pin` (default true): pinning; off, every pin call is `ERR_FEATURE_NOT_ACCESSIBLE`.
    public var pin = true
    /// `save` (default true): saving; off, every save call is `ERR_FEATURE_NOT_ACCESSIBLE`.
    public var save = true

    public init() {}

    enum CodingKeys: String, CodingKey { case pin, save }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        pin = try c.decodeIfPresent(Bool.self, forKey: .pin) ?? true
        save = try c.decodeIfPresent(Bool.self, forKey: .save) ?? true
    }
}

public struct Limits: Decodable, Sendable {
    /// `pinsPerConversation` (default 100, 1–10000).
    public var pinsPerConversation = 100
    /// `savesPerUser` (default 100, 1–10000).
    public var savesPerUser = 100
    /// `messageTextBytes` (default 65536, 1–1048576): the longest text of one message.
    public var messageTextBytes = 65_536
    /// `botHops` (default 3, 0–20): how many bots may answer bots in a row before the chain is cut.
    public var botHops = 3
    /// `messagesPerMinute` (default 0: off; 0–100000): messages one user may send a minute through
    /// the HTTP API (CometChat's governor is 30); beyond it, 429 `ERR_TOO_MANY_REQUESTS`.
    public var messagesPerMinute = 0

    public init() {}

    enum CodingKeys: String, CodingKey {
        case pinsPerConversation, savesPerUser, messageTextBytes, botHops, messagesPerMinute
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        pinsPerConversation = try c.decodeIfPresent(Int.self, forKey: .pinsPerConversation) ?? 100
        savesPerUser = try c.decodeIfPresent(Int.self, forKey: .savesPerUser) ?? 100
        messageTextBytes = try c.decodeIfPresent(Int.self, forKey: .messageTextBytes) ?? 65_536
        botHops = try c.decodeIfPresent(Int.self, forKey: .botHops) ?? 3
        messagesPerMinute = try c.decodeIfPresent(Int.self, forKey: .messagesPerMinute) ?? 0
    }
}

public struct NotificationDefaults: Decodable, Sendable {
    /// `group` (default messages SUBSCRIBE_TO_ALL, replies SUBSCRIBE_TO_ALL, quotedReplies SUBSCRIBE_TO_ALL).
    public var group: ConversationPreferences = .groupDefault
    /// `oneOnOne` (the same defaults).
    public var oneOnOne: ConversationPreferences = .oneOnOneDefault
    /// `webhooks` (default none): receivers every routed notification is posted to.
    public var webhooks: [NotificationWebhook] = []

    public init() {}

    enum CodingKeys: String, CodingKey { case group, oneOnOne, webhooks }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        group = try c.decodeIfPresent(PreferenceSet.self, forKey: .group)?.resolved(.groupDefault) ?? .groupDefault
        oneOnOne =
            try c.decodeIfPresent(PreferenceSet.self, forKey: .oneOnOne)?.resolved(.oneOnOneDefault) ?? .oneOnOneDefault
        webhooks = try c.decodeIfPresent([NotificationWebhook].self, forKey: .webhooks) ?? []
    }

    public var preferences: NotificationPreferences { NotificationPreferences(group: group, oneOnOne: oneOnOne) }
}

/// One preference set as written: each value by its name (`SUBSCRIBE_TO_ALL`) or raw number.
struct PreferenceSet: Decodable {
    var messages: MessagesOption?
    var replies: RepliesOption?
    var quotedReplies: QuotedRepliesOption?

    enum CodingKeys: String, CodingKey { case messages, replies, quotedReplies }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        messages = try c.decodeIfPresent(Named<MessagesOption>.self, forKey: .messages)?.value
        replies = try c.decodeIfPresent(Named<RepliesOption>.self, forKey: .replies)?.value
        quotedReplies = try c.decodeIfPresent(Named<QuotedRepliesOption>.self, forKey: .quotedReplies)?.value
    }

    func resolved(_ defaults: ConversationPreferences) -> ConversationPreferences {
        ConversationPreferences(
            messages: messages ?? defaults.messages, replies: replies ?? defaults.replies,
            quotedReplies: quotedReplies ?? defaults.quotedReplies)
    }
}

/// A preference option written by name or by raw value.
struct Named<Option: RawRepresentable<Int> & CaseIterable & NamedOption>: Decodable {
    var value: Option

    init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        if let raw = Int(text), let option = Option(rawValue: raw) {
            value = option
        } else if let option = Option.allCases.first(where: { $0.name == text }) {
            value = option
        } else {
            let names = Option.allCases.map { "\($0.name) (\($0.rawValue))" }.joined(separator: ", ")
            throw ConfigValueError("unknown option '\(text)'; expected one of \(names)")
        }
    }
}

protocol NamedOption { var name: String { get } }
extension MessagesOption: NamedOption {}
extension RepliesOption: NamedOption {}
extension QuotedRepliesOption: NamedOption {}

public struct UIConfiguration: Decodable, Sendable {
    public struct ThreadSubscription: Decodable, Sendable {
        /// `enabled` (default true): the process-wide gate of the follow controls. Off removes the
        /// follow commands and controls everywhere; the server's automatic subscription goes on
        /// (docs/chat-model.md, "Thread subscriptions").
        public var enabled = true
        /// `hideOption` (default false): hides the action-sheet option of the web chat.
        public var hideOption = false
        /// `hideButton` (default false): hides the bell of the web chat's thread panel.
        public var hideButton = false
        /// `topBarBell` (default true): the thread panel's bell sits in its top bar; false puts it
        /// on the reply-count bar instead (the UI kit's fallback bell, shown only without the top one).
        public var topBarBell = true

        public init() {}

        enum CodingKeys: String, CodingKey { case enabled, hideOption, hideButton, topBarBell }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? true
            hideOption = try c.decodeIfPresent(Bool.self, forKey: .hideOption) ?? false
            hideButton = try c.decodeIfPresent(Bool.self, forKey: .hideButton) ?? false
            topBarBell = try c.decodeIfPresent(Bool.self, forKey: .topBarBell) ?? true
        }
    }

    /// `threadSubscription`: the follow controls' gate and the per-surface hide flags.
    public var threadSubscription = ThreadSubscription()
    /// `replyType` (default `QUOTE_REPLY`): how the web chat's message menu offers to reply, as
    /// Sendbird's UI kit has it: `QUOTE_REPLY` offers the quote reply, `NONE` does not (replies
    /// in threads stay).
    public var replyType = ReplyType.quoteReply

    public enum ReplyType: String, Sendable, Decodable, CaseIterable {
        case quoteReply = "QUOTE_REPLY"
        case none = "NONE"
    }

    public init() {}

    enum CodingKeys: String, CodingKey { case threadSubscription, replyType }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        threadSubscription = try c.decodeIfPresent(ThreadSubscription.self, forKey: .threadSubscription) ?? .init()
        replyType = try c.decodeIfPresent(ReplyType.self, forKey: .replyType) ?? .quoteReply
    }
}

/// `seed`: the people and groups of a fresh embedded backend.
public struct Seed: Decodable, Sendable {
    public struct SeedUser: Decodable, Sendable {
        public var uid: String
        public var name: String
        public var role: String?
    }

    public struct SeedMember: Decodable, Sendable {
        public var uid: String
        public var scope: GroupMemberScope?
    }

    public struct SeedGroup: Decodable, Sendable {
        public var guid: String
        public var name: String
        public var type: GroupType?
        public var owner: String
        public var members: [SeedMember]?
    }

    /// `users` (default none): `uid`, `name`, optional `role`.
    public var users: [SeedUser] = []
    /// `groups` (default none): `guid`, `name`, `type` (public), `owner`, `members` (`uid`, `scope`).
    public var groups: [SeedGroup] = []

    public init() {}

    enum CodingKeys: String, CodingKey { case users, groups }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        users = try c.decodeIfPresent([SeedUser].self, forKey: .users) ?? []
        groups = try c.decodeIfPresent([SeedGroup].self, forKey: .groups) ?? []
    }
}

extension GroupMemberScope: ConfigPlaceholder { public static var placeholder: GroupMemberScope { .participant } }
