import Dispatch
import Foundation
import PerchChat
import PerchConfig
import PerchHTTP
import PerchHTTPClient
import PerchHost
import PerchLock
import PerchMatrix
import PerchService

/// `perch run`: starts the host and keeps it running until SIGTERM or SIGINT; SIGHUP, or a change
/// under `bots/` or to config.yaml, reloads.
public enum RunCommand {
    public static func run(_ arguments: [String]) async -> Int32 {
        var exitCode: Int32 = 0
        guard
            let parsed = ParsedArguments.forCommand(
                // dry-run takes the message's text.
                arguments, valued: ["config", "log-format", "as", "group", "to", "thread", "at"],
                positional: arguments.first == "dry-run" ? 1 : 0, exitCode: &exitCode)
        else { return exitCode }
        let format = HostLogger.Format(rawValue: parsed.options["log-format"] ?? "text")
        guard let format else {
            FileHandle.standardError.write(Data("perch: --log-format is text or json\n".utf8))
            return 64
        }
        // A dry run prints what the bots would do; its start-up steps are not news (warnings are).
        let logger = HostLogger(format: format, minimum: parsed.command == "dry-run" ? .warning : .info)
        // Read (and taken out of the environment) before any plugin starts.
        let manager = ServiceManager.fromEnvironment()
        let configPath = parsed.options["config"] ?? "config.yaml"
        let loader = ConfigurationLoader(swiftPlugins: Perch.builtInPlugins)
        let loaded = loader.load(configPath: configPath)
        for finding in loaded.findings {
            logger.log(finding.severity == .error ? .error : .warning, finding.description)
        }
        guard loaded.isValid else {
            logger.error("the configuration has errors; nothing started (\(CheckCommand.summary(loaded)))")
            return 1
        }
        logger.info("configuration loaded", ["config": configPath, "summary": CheckCommand.summary(loaded)])
        let isDryRun = parsed.command == "dry-run"
        if !isDryRun, let config = loaded.config {
            // One host per data directory: two would handle every event twice.
            let directory = loaded.resolve(config.server.dataDirectory)
            if let refusal = DataDirectoryLock.acquire(directory) {
                logger.error(refusal)
                return 1
            }
        }
        let backend: any ChatBackend
        do {
            backend = try Self.backend(for: loaded)
        } catch {
            logger.error("cannot start: \(error)")
            return 1
        }
        let host = BotHost(
            configuration: loaded,
            options: BotHost.Options(
                logger: logger, registry: Perch.registry, schedulesFromTimer: !isDryRun, consumeEvents: !isDryRun,
                // The bots a request's commit resumes run on that request's connection thread once
                // it has answered, instead of waking a thread of the pool (JoiningExecutor).
                executor: JoiningExecutor(), httpClient: CurlPostClient(lanes: 8, name: "perch-plugin-http"),
                backend: backend))
        do {
            try await host.start()
        } catch {
            logger.error("cannot start: \(error)")
            return 1
        }
        if isDryRun {
            let code = await dryRun(host, parsed)
            await host.stop()
            return code
        }
        var server: HTTPServer?
        var web: WebSettings?
        if let config = loaded.config, let address = config.server.listenAddress, let service = await host.service {
            let key = config.server.apiKey ?? ""
            if key.isEmpty, config.backend == .embedded {
                logger.warning("server.apiKey is empty: every API request will be refused with 401")
            }
            let media = MediaSettings(
                directory: loaded.resolve(config.server.dataDirectory) + "/media",
                maximumBytes: config.server.maxUploadBytes, allowedTypes: config.server.uploadTypes)
            web = webSettings(config, loaded)
            let api = PerchAPI(
                service: service, host: host, apiKey: key, metrics: host.metrics, media: media,
                web: web,
                maximumBodyBytes: config.server.maxBodyBytes,
                messagesPerMinute: config.limits.messagesPerMinute,
                heartbeat: .seconds(config.server.heartbeatSeconds), hostNames: config.server.hostNames,
                chat: config.backend == .embedded)
            let connections = config.server.maxStreams + HTTPServer.requestReserve
            if let shortfall = FileDescriptorLimit.shortfall(
                connections: connections, limit: FileDescriptorLimit.raise())
            {
                logger.warning(shortfall)
            }
            let serverMessages = RepeatedWarnings()
            do {
                server = try HTTPServer(
                    host: address.host, port: address.port,
                    maximumBodyBytes: max(config.server.maxBodyBytes, config.server.maxUploadBytes),
                    heartbeat: .seconds(config.server.heartbeatSeconds), maximumStreams: config.server.maxStreams,
                    idleTimeout: .seconds(config.server.idleTimeoutSeconds),
                    headTimeout: .seconds(config.server.headerTimeoutSeconds),
                    bodyTimeout: .seconds(config.server.bodyTimeoutSeconds),
                    connectionsPerClient: config.server.maxConnectionsPerClient,
                    metricsText: { [metrics = host.metrics] in metrics.prometheusText },
                    refused: { [metrics = host.metrics] reason in
                        metrics.increment("perch_http_connections_refused_total", ["reason": reason])
                    },
                    log: { message in
                        // A flood (connections past the limit, each refused) is a line a minute.
                        guard let suffix = serverMessages.suffix(message, at: Date().timeIntervalSince1970) else {
                            return
                        }
                        logger.warning(message + suffix, ["source": "libmicrohttpd"])
                    },
                    handler: { request in await api.respond(to: request) })
                logger.info("http listening", ["address": "\(address.host):\(server!.port)"])
                if config.backend == .embedded, let web = webSettings(config, loaded).directory,
                    FileManager.default.fileExists(atPath: web + "/index.html")
                {
                    // Where a newcomer goes next, said where they look: the host's own output.
                    let host = address.host.contains(":") ? "[\(address.host)]" : address.host
                    logger.info("web chat at http://\(host):\(server!.port)/")
                }
            } catch {
                logger.error("cannot start the HTTP API: \(error)")
                await host.stop()
                return 1
            }
        }
        let deliveries = await startWebhooks(loaded.config, host: host, logger: logger)
        let watcher = FileWatcher(paths: [configPath, loaded.resolve(loaded.config?.botsDirectory ?? "bots")])
        let signals: SignalWatcher
        do {
            signals = try SignalWatcher(files: watcher) { number in
                let name = number == SIGINT ? "SIGINT (Ctrl-C)" : number == SIGTERM ? "SIGTERM" : "signal \(number)"
                logger.warning(
                    "a second \(name) during the stop: exiting now (every acknowledged message is committed; "
                        + "the bots go on from their last saved place at the next start)")
                host.killPluginsNow()
                _exit(128 + number)
            }
        } catch {
            logger.error("\(error)")
            server?.stop()
            for delivery in deliveries { delivery.cancel() }
            await host.stop()
            return 1
        }
        let listening =
            server.map { ", the API on \(loaded.config?.server.listenAddress?.host ?? ""):\($0.port)" } ?? ""
        var running = CheckCommand.summary(loaded)
        manager.ready(status: "running: \(running)\(listening)")
        requests: for await request in signals.requests {
            switch request {
            case .stop:
                break requests
            case .reload:
                logger.info("reloading the configuration")
                manager.reloading()
                let next = loader.load(configPath: configPath)
                if await host.reload(next) {
                    running = CheckCommand.summary(next)
                    web?.replaceSettings(Self.webSettingsJSON(next, started: loaded.config))
                    // Said at every reload until a restart applies them (compared with the start's).
                    var waiting: [RestartSetting] = []
                    if let started = loaded.config, let config = next.config {
                        waiting = config.settingsNeedingRestart(comparedWith: started)
                    }
                    if waiting.isEmpty {
                        manager.ready(status: "running: \(running)\(listening)")
                    } else {
                        logger.warning(
                            "a reload does not apply these; they take effect at the next start: "
                                + waiting.map(\.description).joined(separator: ", "))
                        let keys = waiting.map(\.key).joined(separator: ", ")
                        manager.ready(status: "running: \(running)\(listening); a restart applies \(keys)")
                    }
                } else {
                    manager.ready(
                        status: "running: \(running)\(listening); the last reload was refused (see the log)")
                }
            }
        }
        signals.finish()
        manager.stopping()
        server?.stop()
        for delivery in deliveries { delivery.cancel() }
        for delivery in deliveries { await delivery.value }
        await host.stop()
        return 0
    }

    /// Starts posting routed notifications to each of `notifications.webhooks`, each on libcurl
    /// lanes of its own (a receiver that is slow to answer holds up no other).
    static func startWebhooks(_ config: PerchConfiguration?, host: BotHost, logger: HostLogger) async
        -> [Task<Void, Never>]
    {
        guard let config, !config.notifications.webhooks.isEmpty, let service = await host.service else { return [] }
        return config.notifications.webhooks.map { webhook in
            let delivery = WebhookDelivery(
                webhook: webhook, service: service, client: CurlPostClient(lanes: 8, name: "perch-webhook"),
                logger: logger, metrics: host.metrics)
            logger.info(
                "posting notifications to \(webhook.name)",
                ["events": webhook.events.map(\.rawValue).joined(separator: ",")])
            return Task { await delivery.run() }
        }
    }

    /// What the web chat is served from and told at start.
    /// The backend config.yaml's `backend` names.
    /// - Throws: ``HostError`` for a Matrix configuration that cannot be used.
    static func backend(for loaded: LoadedConfiguration) throws -> any ChatBackend {
        guard let config = loaded.config, config.backend == .matrix else { return EmbeddedBackend() }
        return try MatrixBackend(configuration: config.matrix)
    }

    static func webSettings(_ config: PerchConfiguration, _ loaded: LoadedConfiguration) -> WebSettings {
        let directory = config.server.webDirectory.isEmpty ? nil : loaded.resolve(config.server.webDirectory)
        return WebSettings(
            directory: directory, devSignIn: config.server.devSignIn, people: config.seed.users.map(\.uid),
            settingsJSON: webSettingsJSON(loaded))
    }

    /// What the web chat reads of the configuration: the follow controls' gate and hide flags, the
    /// copy, the reply type, the features and limits (these two as the host started: they wait
    /// for a restart), and the running bots' users (a bot removed from bots/ leaves the people).
    static func webSettingsJSON(_ loaded: LoadedConfiguration, started: PerchConfiguration? = nil) -> String {
        guard let config = loaded.config else { return "{}" }
        let fixed = started ?? config
        let gate = config.ui.threadSubscription
        let settings: [String: Any] = [
            "threadSubscription": [
                "enabled": gate.enabled, "hideOption": gate.hideOption, "hideButton": gate.hideButton,
                "topBarBell": gate.topBarBell,
            ],
            "strings": config.strings.entries,
            "replyType": config.ui.replyType.rawValue,
            "bots": loaded.bots.filter(\.bot.enabled).map(\.bot.user.uid).sorted(),
            "features": ["pin": fixed.features.pin, "save": fixed.features.save],
            "limits": [
                "pinsPerConversation": fixed.limits.pinsPerConversation, "savesPerUser": fixed.limits.savesPerUser,
            ],
        ]
        let json = (try? JSONSerialization.data(withJSONObject: settings, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: json, as: UTF8.self)
    }

    static func dryRun(_ host: BotHost, _ parsed: ParsedArguments) async -> Int32 {
        if let at = parsed.options["at"] {
            guard let seconds = Self.epochSeconds(at), parsed.positional.isEmpty else {
                FileHandle.standardError.write(
                    Data(
                        "perch: dry-run --at TIME takes a UTC time such as 2026-12-07T09:00Z (or 2026-12-07 09:00), and no text\n"
                            .utf8))
                return 64
            }
            let results = await host.dryRunSchedules(at: seconds)
            print(
                results.isEmpty
                    ? "no schedule rule is due at \(at)" : results.map(\.description).joined(separator: "\n"))
            return 0
        }
        guard let uid = parsed.options["as"], let text = parsed.positional.first,
            (parsed.options["group"] == nil) != (parsed.options["to"] == nil)
        else {
            FileHandle.standardError.write(
                Data("perch: dry-run --as UID (--group GUID | --to UID) [--thread ID] \"text\"\n".utf8))
            return 64
        }
        let receiver: Receiver = parsed.options["group"].map(Receiver.group) ?? .user(parsed.options["to"]!)
        let thread = parsed.options["thread"].flatMap(Int64.init)
        do {
            let results = try await host.dryRun(as: uid, to: receiver, thread: thread, text: text)
            print(results.isEmpty ? "no bot would act" : results.map(\.description).joined(separator: "\n"))
            return 0
        } catch let error as ChatError {
            // As `perch send` says a refusal: the code, then the reason.
            FileHandle.standardError.write(Data("perch: \(error.code.rawValue): \(error.message)\n".utf8))
            return 1
        } catch {
            FileHandle.standardError.write(Data("perch: \(error)\n".utf8))
            return 1
        }
    }
}

extension RunCommand {
    /// `text` as seconds since the epoch: an ISO 8601 time with a zone (`2026-12-07T09:00:00+01:00`,
    /// `2026-12-07T09:00Z`), or `YYYY-MM-DD HH:MM` in UTC; nil when it is none of them.
    static func epochSeconds(_ text: String) -> Int64? {
        let iso = ISO8601DateFormatter()
        if let date = iso.date(from: text) { return Int64(date.timeIntervalSince1970) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        for format in ["yyyy-MM-dd'T'HH:mmXXXXX", "yyyy-MM-dd HH:mm", "yyyy-MM-dd'T'HH:mm"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970) }
        }
        return nil
    }
}

/// An exclusive lock on `<data directory>/perch.lock`, held until the process exits.
enum DataDirectoryLock {
    /// Takes the data directory's lock for the life of the process. nil when taken; else why not:
    /// another host holds it, or the directory cannot be made or written (which was told as
    /// another host holding it).
    static func acquire(_ directory: String) -> String? {
        do {
            try PrivateFile.makeDirectory(directory)
        } catch {
            return "cannot use the data directory: \(error)"
        }
        let path = directory + "/perch.lock"
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return "cannot use the data directory: open \(path): \(String(cString: strerror(errno)))" }
        // The descriptor stays open (and the lock held) for the life of the process.
        if flock(fd, LOCK_EX | LOCK_NB) == 0 { return nil }
        if errno == EWOULDBLOCK { return "another perch run holds \(path); one host per data directory" }
        return "cannot lock \(path): \(String(cString: strerror(errno)))"
    }
}
