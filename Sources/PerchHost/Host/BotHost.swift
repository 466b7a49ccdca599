import Foundation
import PerchChat
import PerchConfig
import PerchLock
import PerchMatch
import PerchSQLite
import PerchService
import PerchYAML

/// The long-running host: opens the chat service, seeds it, runs every bot on its own user's event
/// stream until stopped, and reloads the configuration on request.
///
/// The actor owns the host's life cycle (``State``: start, reload, stop, each re-checking the state
/// after every `await`) and nothing on the path of an event: each bot's events are read and handled
/// by its ``BotConsumer``, a task that reads the running bots from the ``BotRoster`` (a lock) and
/// never enters this actor.
public actor BotHost {
    public enum State: Sendable, Equatable {
        case idle, starting, running, reloading, stopping, stopped
    }

    public struct Options: Sendable {
        /// Overrides `server.dataDirectory` (tests use a temporary directory).
        public var dataDirectory: String?
        public var clock: any ChatClock
        public var logger: HostLogger
        public var registry: PluginRegistry
        /// Seconds on a monotonic clock, for rate limits.
        public var monotonic: @Sendable () -> Double
        /// Runs schedules from a timer (off in tests, which call ``runSchedules(at:)``).
        public var schedulesFromTimer: Bool
        /// Runs the bots' consumers. Off for `perch dry-run`, which must not handle any event (a
        /// running host may share the database and the bots' cursors).
        public var consumeEvents: Bool
        /// Called with every message a bot sends as it leaves the bot: muid and loop-guard metadata
        /// set, rate limits passed, before the chat service checks and commits it (a message the
        /// service then refuses was seen here and never reaches ``didSend``). For an embedder that
        /// mirrors or logs what its bots say as they say it. Runs on the bot's thread: keep it quick.
        public var willSend: (@Sendable (_ bot: String, _ draft: MessageDraft) -> Void)?
        /// Called with every message a bot sends once the chat service has committed it, with its
        /// id: for a connector that forwards the bots' messages to another chat server, or an
        /// embedder's audit log. Runs on the thread that committed it: keep it quick.
        public var didSend: (@Sendable (_ bot: String, _ message: Message) -> Void)?
        /// Where the bots' consumers run: nil for the shared cooperative pool; a ``HostExecutor`` that
        /// a connector's inbound task prefers too, so a message and its bots' replies are handled on
        /// one thread without waking another; or a `JoiningExecutor` (`perch run`), which runs the
        /// bots a request's commit resumed on that request's HTTP connection thread.
        public var executor: (any TaskExecutor)?
        /// Posts to the plugins reached over HTTP (`url:`); nil: a bot with one does not load.
        /// `perch` gives `PerchHTTPClient`'s `CurlPostClient`.
        public var httpClient: (any PluginHTTPClient)?
        /// The chat server the bots live on (config.yaml's `backend`): the embedded service, or a
        /// connector that mirrors another server into the store (`PerchMatrix`).
        public var backend: any ChatBackend

        public init(
            dataDirectory: String? = nil, clock: any ChatClock = SystemClock(), logger: HostLogger = HostLogger(),
            registry: PluginRegistry = .standard, monotonic: @escaping @Sendable () -> Double = BotHost.uptime,
            schedulesFromTimer: Bool = true, consumeEvents: Bool = true,
            willSend: (@Sendable (_ bot: String, _ draft: MessageDraft) -> Void)? = nil,
            didSend: (@Sendable (_ bot: String, _ message: Message) -> Void)? = nil,
            executor: (any TaskExecutor)? = nil, httpClient: (any PluginHTTPClient)? = nil,
            backend: any ChatBackend = EmbeddedBackend()
        ) {
            self.backend = backend
            self.httpClient = httpClient
            self.willSend = willSend
            self.didSend = didSend
            self.executor = executor
            self.consumeEvents = consumeEvents
            self.dataDirectory = dataDirectory
            self.clock = clock
            self.logger = logger
            self.registry = registry
            self.monotonic = monotonic
            self.schedulesFromTimer = schedulesFromTimer
        }
    }

    public static let uptime: @Sendable () -> Double = {
        Double(DispatchTime.now().uptimeNanoseconds) / 1_000_000_000
    }

    public private(set) var state: State = .idle
    public private(set) var configuration: LoadedConfiguration
    public nonisolated let options: Options
    public nonisolated let metrics = HostMetrics()
    public nonisolated let bus = HostEventBus()
    /// A bot's stream failing again and again (a full disk refuses its cursor) logs a line a minute.
    nonisolated let streamFailures = RepeatedWarnings(burst: 1)
    public private(set) var service: ChatService?
    var store: SQLiteChatStore?
    let roster = BotRoster()
    var consumers: [String: Task<Void, Never>] = [:]
    var scheduler: Task<Void, Never>?
    var retention: Task<Void, Never>?
    /// Hands routed notifications to the plugins that listen for them.
    var notificationFeed: Task<Void, Never>?
    let matchCache = MatchCache()

    public init(configuration: LoadedConfiguration, options: Options = Options()) {
        self.configuration = configuration
        self.options = options
    }

    var logger: HostLogger { options.logger }

    /// The database's path once the store is open (for ``sampleStorage()``).
    private nonisolated let storageFiles = Lock<String?>(nil)

    /// Sets `perch_database_bytes` to the sizes of the database and its write-ahead log now: a
    /// scrape asks, so a log growing behind a long reader (a backup) shows.
    public nonisolated func sampleStorage() {
        guard let path = storageFiles.withLock({ $0 }) else { return }
        for (file, suffix) in [("database", ""), ("wal", "-wal")] {
            var status = stat()
            let size = stat(path + suffix, &status) == 0 ? Double(status.st_size) : 0
            metrics.set("perch_database_bytes", ["file": file], to: size)
        }
    }

    /// The store path for a configuration.
    nonisolated func databasePath(_ loaded: LoadedConfiguration) -> String {
        let directory = options.dataDirectory ?? loaded.resolve(loaded.config?.server.dataDirectory ?? "data")
        return directory + "/perch.sqlite"
    }

    /// Starts everything; returns when the host is ready.
    /// - Throws: ``HostError`` when the configuration is invalid or the store cannot open.
    public func start() async throws {
        guard state == .idle else { throw HostError("the host was already started") }
        state = .starting
        guard configuration.isValid, let config = configuration.config else {
            state = .stopped
            throw HostError(
                "the configuration has errors: \(configuration.errors.map(\.description).joined(separator: "; "))")
        }
        let path = databasePath(configuration)
        // The data directory holds every conversation: a new one is its owner's alone (0700).
        try PrivateFile.makeDirectory((path as NSString).deletingLastPathComponent)
        let store = try SQLiteChatStore(
            path: path, synchronous: config.storage.synchronous == .full ? .full : .normal)
        logger.info(
            "store opened",
            [
                "path": path, "synchronous": config.storage.synchronous.rawValue,
                // Every page is checked unless the file is new or as a clean stop left it.
                "checked": store.checkedAtOpen ? "every page" : "no (new, or as a clean stop left it)",
            ])
        var mode = stat()
        if stat(path, &mode) == 0, mode.st_mode & 0o007 != 0 {
            logger.warning(
                "the database can be read by every user of this machine; `chmod 600` it and its -wal and -shm files "
                    + "(and `chmod 700` the data directory): it holds every conversation",
                ["path": path, "mode": String(mode.st_mode & 0o777, radix: 8)])
        }
        let service = ChatService(
            store: store, clock: options.clock,
            settings: ChatSettings(
                pinsPerConversation: config.limits.pinsPerConversation, savesPerUser: config.limits.savesPerUser,
                messageTextBytes: config.limits.messageTextBytes, pinEnabled: config.features.pin,
                saveEnabled: config.features.save, notificationDefaults: config.notifications.preferences),
            logger: HostChatLogger(logger: logger))
        self.store = store
        self.service = service
        storageFiles.withLock { $0 = path }
        metrics.set("perch_build_info", ["version": PerchVersion.current], to: 1)
        metrics.set("perch_start_time_seconds", to: Date().timeIntervalSince1970.rounded())
        try await options.backend.prepare(configuration, service: service, logger: logger)
        try await install(configuration, service: service)
        if options.consumeEvents { try await options.backend.start(host: self, service: service) }
        if options.schedulesFromTimer { startScheduler() }
        if options.schedulesFromTimer, options.consumeEvents { startRetention() }
        if options.consumeEvents {
            let feed = PluginNotificationFeed(roster: roster, service: service, logger: logger, metrics: metrics)
            notificationFeed = Task { await feed.run() }
        }
        state = .running
        logger.info("ready", ["bots": String(roster.count)])
    }

    /// Compiles the bots, creates their users and memberships, swaps them in and (re)starts consumers.
    func install(_ loaded: LoadedConfiguration, service: ChatService) async throws {
        guard let config = loaded.config else { return }
        let compiled = BotCompiler(
            registry: options.registry, gate: config.ui.threadSubscription.enabled,
            workingDirectory: loaded.baseDirectory.isEmpty ? nil : loaded.baseDirectory,
            cacheDirectory: (databasePath(loaded) as NSString).deletingLastPathComponent,
            httpClient: options.httpClient, checking: false
        ).compile(loaded.bots)
        if !compiled.findings.isEmpty {
            throw HostError(compiled.findings.map(\.description).joined(separator: "; "))
        }
        if compiled.matcher.listCount > 0 {
            logger.info(
                "word lists ready",
                [
                    "lists": String(compiled.matcher.listCount),
                    "from": compiled.matcher.loadedFromCache ? "cache" : "compile",
                ])
        }
        var fresh: [String: BotRuntime] = [:]
        // A running plugin that says it continues as its new instance (an external plugin with
        // the same command and config) stays in its place, neither stopped nor started again.
        let running = roster.all
        var kept: Set<String> = []  // "bot/plugin"
        let lifecycle = PluginLifecycle(logger: logger, metrics: metrics)
        for var bot in compiled.bots.sorted(by: { $0.identity.name < $1.identity.name }) {
            for (name, plugin) in bot.plugins {
                guard let old = running[bot.identity.name]?.bot.plugins[name], old.continues(as: plugin) else {
                    continue
                }
                bot.plugins[name] = old
                kept.insert(bot.identity.name + "/" + name)
            }
            _ = try await service.ensureUser(
                uid: bot.identity.uid, name: bot.configuration.user.name, role: User.botRole)
            for group in bot.configuration.groups where !options.backend.ownsMemberships {
                try await service.ensureMember(guid: group.guid, uid: bot.identity.uid, scope: group.scope)
            }
            let botLogger = logger.with(["bot": bot.identity.name])
            let actions = BotActions(
                service: service, bus: bus, metrics: metrics, botName: bot.identity.name,
                perMinute: bot.configuration.rateLimit.perMinute, burst: bot.configuration.rateLimit.burst,
                perConversationPerMinute: bot.configuration.rateLimit.perConversationPerMinute, now: options.monotonic,
                allowsSubscribingOthers: bot.configuration.allowSubscribingOthers, willSend: options.willSend,
                didSend: options.didSend)
            // The new instances start before the bot takes its first event with them (a dry run
            // starts none: it hears no events).
            let starting = bot.pluginsInOrder.filter { !kept.contains(bot.identity.name + "/" + $0.name) }
            if options.consumeEvents {
                let failed = await lifecycle.start(
                    starting.map { slot in
                        (
                            PluginLifecycle.Slot(bot: bot.identity.name, name: slot.name, plugin: slot.plugin),
                            PluginEnvironment(
                                bot: bot, plugin: slot.name, logger: botLogger, actions: actions,
                                strings: config.strings)
                        )
                    })
                for slot in failed { bot.plugins[slot.name] = nil }
            }
            fresh[bot.identity.name] = BotRuntime(
                bot: bot, service: service, matcher: compiled.matcher, matchCache: matchCache,
                strings: config.strings, logger: botLogger, actions: actions, metrics: metrics,
                maximumHops: config.limits.botHops, admins: Set(config.admins))
            botLogger.info("bot loaded", ["uid": bot.identity.uid, "rules": String(bot.rules.count)])
        }
        let previous = roster.replace(with: fresh)
        metrics.set("perch_bots", to: Double(fresh.count))
        for name in previous.keys where fresh[name] == nil { consumers.removeValue(forKey: name)?.cancel() }
        // The instances replaced or dropped stop now that no new event reaches them (one in hand
        // may still be finishing).
        await lifecycle.stop(
            Self.stopOrder(previous.values.map(\.bot)).filter { !kept.contains($0.bot + "/" + $0.name) })
        // A bot new to this database starts at the present: it does not replay history from before
        // it existed (its cursor is then saved, so a restart resumes where it stopped).
        let latest = try await service.store.latestEventSequence()
        guard options.consumeEvents else {
            configuration = loaded
            return
        }
        let starting = fresh.keys.filter { consumers[$0] == nil }.sorted()
        for name in starting where try await service.cursor(consumer: BotIdentity.session(of: name)) == 0 {
            try await service.acknowledge(consumer: BotIdentity.session(of: name), seq: latest)
        }
        // A bot about to start keeps its cursor as it is saved now (one write for them all): the
        // retention prunes no event a bot that saved its cursor within it has not handled, and a
        // bot back after a long stop is one. A running bot saves its own.
        try await service.keepCursors(starting.map(BotIdentity.session(of:)))
        for name in fresh.keys where consumers[name] == nil {
            let consumer = BotConsumer(
                name: name, roster: roster, service: service, logger: logger, metrics: metrics,
                monotonic: options.monotonic, streamFailures: streamFailures)
            consumers[name] = Task(executorPreference: options.executor) { await consumer.run() }
        }
        configuration = loaded
    }

    /// Swaps in a new configuration between events. An invalid one is refused and every finding
    /// logged; the running bots stay.
    @discardableResult
    public func reload(_ loaded: LoadedConfiguration) async -> Bool {
        guard state == .running, let service else { return false }
        guard loaded.isValid else {
            for finding in loaded.findings { logger.error(finding.description) }
            logger.error("reload refused: the configuration has errors; the running configuration stays")
            return false
        }
        state = .reloading
        defer { if state == .reloading { state = .running } }
        do {
            try await options.backend.prepare(loaded, service: service, logger: logger)
            try await install(loaded, service: service)
            logger.info("reloaded", ["bots": String(roster.count)])
            return true
        } catch {
            logger.error("reload failed: \(error); the running configuration stays")
            return false
        }
    }

    /// Stops gracefully: consumers finish the event in hand (up to `deadline`), cursors are saved,
    /// plugins stop, the store closes.
    public func stop(deadline: Duration = .seconds(5)) async {
        guard state == .running || state == .reloading || state == .starting else { return }
        state = .stopping
        logger.info("stopping")
        scheduler?.cancel()
        retention?.cancel()
        notificationFeed?.cancel()
        let tasks = Array(consumers.values) + (notificationFeed.map { [$0] } ?? [])
        consumers.removeAll()
        for task in tasks { task.cancel() }
        // Until the consumers end or the deadline passes, whichever is first. (A task group of the
        // two waits for both: a consumer that did not end when cancelled, in a plugin that ignores
        // cancellation, held the stop for as long as it ran.)
        let first = Lock<CheckedContinuation<Void, Never>?>(nil)
        await withCheckedContinuation { continuation in
            first.withLock { $0 = continuation }
            Task {
                for task in tasks { await task.value }
                first.withLock { $0.take() }?.resume()
            }
            Task {
                try? await Task.sleep(for: deadline)
                first.withLock { $0.take() }?.resume()
            }
        }
        await options.backend.stop()
        await PluginLifecycle(logger: logger, metrics: metrics).stop(Self.stopOrder(roster.all.values.map(\.bot)))
        await store?.close()
        state = .stopped
        logger.info("stopped")
    }

    /// Kills every external plugin's process at once (SIGKILL), for a process about to exit
    /// without its stop: plugins read their requests from the host's pipe and would otherwise go
    /// on until they next read it.
    public nonisolated func killPluginsNow() {
        ChildProcess.killAll()
    }

    /// The plugins of `bots` in the order they stop: the reverse of their start (bots by name,
    /// each bot's plugins in its file's order).
    static func stopOrder(_ bots: [CompiledBot]) -> [PluginLifecycle.Slot] {
        bots.sorted { $0.identity.name < $1.identity.name }.flatMap { bot in
            bot.pluginsInOrder.map { PluginLifecycle.Slot(bot: bot.identity.name, name: $0.name, plugin: $0.plugin) }
        }.reversed()
    }

    /// Why the host is not ready to serve, or nil when it is: running, with its backend ready.
    public func notReadyReason() async -> String? {
        guard state == .running else { return "the host is \(state)" }
        return await options.backend.notReadyReason()
    }

    /// The name of the running bot whose user is `uid` (its storage is kept under it), or nil.
    public nonisolated func botName(uid: String) -> String? {
        roster.all.first { $0.value.identity.uid == uid }?.key
    }

    /// The bot runtimes by name (tests, dry runs).
    var currentRuntimes: [String: BotRuntime] { roster.all }
}

/// A host failure with a message for the log and the exit code.
public struct HostError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The chat service's internal errors, into the host's log.
struct HostChatLogger: ChatLogger {
    let logger: HostLogger
    func error(_ message: String) { logger.error(message) }
}
