import Foundation
import PerchChat
import PerchLock

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A plugin reached over HTTP: an outgoing webhook, CometChat's bot `webhookURL`.
///
/// Each `plugin: NAME` action POSTs to `url` the JSON-RPC request an external plugin reads on its
/// stdin (`{"jsonrpc": "2.0", "id", "method": "handle", "params": {bot, event, captures, command,
/// plugin, config}}`), signed with `secret` when there is one (`X-Hub-Signature-256: sha256=HEX`,
/// the body's HMAC-SHA256, as Perch's own `/v3/hooks/{name}` checks it). A 2xx answer's body is the
/// JSON-RPC response (or its bare `result`), and its `actions` run as an external plugin's do; an
/// empty body runs none. A refused connection, a 429 or a 5xx is tried again (three tries in all,
/// within `timeout_ms`); `X-Perch-Delivery` (the bot, the event's sequence and the plugin) is the
/// same at every try and after a restart, so the service can tell a repeat. The service may also
/// answer later on its own, through `POST /v3/bots/{uid}/messages`.
final class HTTPPlugin: BotPlugin, HostAttached, @unchecked Sendable {
    typealias Configuration = NoConfiguration
    static let name = "http"

    let pluginName: String
    let url: URL
    let secret: String?
    let timeout: Duration
    let config: JSONValue
    private let nextId = Lock(0)
    private let hooks = Lock<(logger: HostLogger?, metrics: HostMetrics?)>((nil, nil))

    /// One session for every HTTP plugin: a bot file reloaded makes new plugins, and a session of
    /// each would stay behind (a session lives until it is invalidated).
    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["User-Agent": "Perch"]
        return URLSession(configuration: configuration)
    }()

    /// The tries a post gets, and the pause before each try after the first.
    static let pauses: [Duration] = [.milliseconds(200), .milliseconds(800)]

    init(name: String, url: URL, secret: String?, timeoutMilliseconds: Int, config: JSONValue) {
        pluginName = name
        self.url = url
        self.secret = secret
        timeout = .milliseconds(timeoutMilliseconds)
        self.config = config
    }

    required convenience init(configuration: NoConfiguration) throws {
        throw ExternalPlugin.PluginFailure(description: "HTTP plugins are created from `url`")
    }

    func attach(logger: HostLogger, metrics: HostMetrics, bot: BotIdentity) {
        hooks.withLock { $0 = (logger, metrics) }
    }

    /// The URL as the log may show it: its scheme, host and port (its path or query may hold a
    /// token, as Slack's webhook URLs do).
    var shownURL: String { "\(url.scheme ?? "http")://\(url.host ?? "")" + (url.port.map { ":\($0)" } ?? "") }

    func handle(_ context: BotContext) async throws {
        let id = nextId.withLock { id -> Int in
            id += 1
            return id
        }
        var params = ExternalPlugin.params(context)
        params["plugin"] = .string(pluginName)
        params["config"] = config
        var writer = JSONWriter()
        writer.raw("{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"handle\",\"params\":")
        writer.value(.object(params))
        writer.raw("}")
        let body = Array(writer.output.utf8)

        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = Data(body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(
            "\(context.bot.name)/\(context.event.seq)/\(pluginName)", forHTTPHeaderField: "X-Perch-Delivery")
        if let secret {
            request.setValue(
                WebhookSignature.value(secret: secret, body: body), forHTTPHeaderField: WebhookSignature.header)
        }

        let deadline = ContinuousClock.now + timeout
        var failure = ""
        var tries = 0
        for attempt in 0...Self.pauses.count {
            if attempt > 0 {
                let pause = Self.pauses[attempt - 1]
                guard ContinuousClock.now + pause < deadline else { break }
                try await Task.sleep(for: pause)
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            tries += 1
            // The deadline is `post(_:within:)`'s. swift-corelibs-foundation hands libcurl whole
            // seconds, so an interval under one second times out at once (measured: 0.5 s fails in
            // 2 ms, 1.0 s waits): URLSession's own timeout is kept past it.
            request.timeoutInterval = Double(left.components.seconds + 2)
            let data: Data
            let status: Int
            do {
                let (answer, response) = try await Self.post(request, within: left)
                data = answer
                status = (response as? HTTPURLResponse)?.statusCode ?? 0
            } catch let error as URLError where error.code == .timedOut || error.code == .cancelled {
                if Task.isCancelled { throw CancellationError() }
                break
            } catch {
                // Refused, reset, not resolved: worth another try.
                failure = "cannot reach \(shownURL): \(error.localizedDescription)"
                continue
            }
            switch status {
            case 200..<300:
                try await answer(data, context)
                return
            case 429, 500..<600:
                failure = "\(shownURL) answered \(status)"
                continue
            default:
                throw ExternalPlugin.PluginFailure(
                    description: "\(shownURL) answered \(status); nothing was tried again")
            }
        }
        if failure.isEmpty || ContinuousClock.now >= deadline {
            hooks.withLock { $0.metrics }?.increment("perch_plugin_timeouts_total", ["plugin": pluginName])
            throw ExternalPlugin.PluginFailure(
                description: "\(shownURL) did not answer within \(timeout)" + (failure.isEmpty ? "" : " (\(failure))"))
        }
        throw ExternalPlugin.PluginFailure(description: failure + "; tried \(tries) times")
    }

    /// Posts `request`, abandoned once `time` has passed: URLSession's own timeout is the longest
    /// wait between two reads, so a service that sends its answer a byte at a time would hold the
    /// bot for as long as it liked.
    static func post(_ request: URLRequest, within time: Duration) async throws -> (Data, URLResponse) {
        let call = Task { try await session.data(for: request) }
        let timer = Task {
            try? await Task.sleep(for: time)
            call.cancel()
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await call.value
        } onCancel: {
            call.cancel()
        }
    }

    /// Runs the actions of a 2xx answer's body: a JSON-RPC response, or its bare result.
    private func answer(_ data: Data, _ context: BotContext) async throws {
        guard !data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) else { return }
        guard let json = try? JSONDecoder().decode(JSONValue.self, from: data), case .object = json else {
            throw ExternalPlugin.PluginFailure(description: "\(shownURL) answered a body that is not a JSON object")
        }
        if let error = json["error"], error != .null {
            let message = error["message"]?.stringValue ?? "no message"
            throw ExternalPlugin.PluginFailure(description: "\(shownURL) answered an error: \(message)")
        }
        try await ExternalPlugin.run(json["result"] ?? json, context)
    }
}

/// A plugin the host hands its bot's logger and metrics when it loads the bot.
protocol HostAttached {
    func attach(logger: HostLogger, metrics: HostMetrics, bot: BotIdentity)
}

extension ExternalPlugin: HostAttached {}
