import Foundation
import PerchChat
import PerchLock

/// How the host posts to a plugin reached over HTTP. `perch` gives ``BotHost/Options/httpClient``
/// `PerchHTTPClient`'s `CurlPostClient` (libcurl lanes: URLSession on Linux was seen to hang a post
/// in a full parallel test run); the protocol keeps an HTTP client library out of every program
/// that embeds the host without using it.
public protocol PluginHTTPClient: Sendable {
    /// POSTs `body` to `url` with `headers`; gives up once `time` has passed.
    /// - Returns: the answer's status and body.
    /// - Throws: ``PluginHTTPFailure``.
    func post(_ url: URL, headers: [String: String], body: [UInt8], within time: Duration)
        async throws(PluginHTTPFailure) -> (status: Int, body: [UInt8])
}

/// Why a post got no answer.
public enum PluginHTTPFailure: Error, Sendable, Hashable {
    /// No answer came within the time.
    case timedOut
    /// The service could not be reached (refused, reset, not resolved), in the client's words.
    case unreachable(String)
    /// The task waiting on the post was cancelled (the host stopping).
    case cancelled
}

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
///
/// With `lifecycle: true` the service is also posted `start` and `stop` (`{bot, plugin, config}`,
/// `X-Perch-Delivery: BOT/start/PLUGIN`) when the host starts and stops the bot; their answers'
/// actions are not run (there is no event to act on).
final class HTTPPlugin: BotPlugin, @unchecked Sendable {
    typealias Configuration = NoConfiguration
    static let name = "http"

    let pluginName: String
    let url: URL
    let secret: String?
    /// The bot file's `headers`, sent with each post (a token, say); never logged.
    let extraHeaders: [String: String]
    let timeout: Duration
    let config: JSONValue
    let client: any PluginHTTPClient
    /// Whether the service is posted `start` and `stop`.
    let lifecycle: Bool
    private let nextId = Lock(0)
    /// Set by ``start(_:)``, for the timeouts' count.
    private let environment = Lock<PluginEnvironment?>(nil)

    /// The tries a post gets, and the pause before each try after the first.
    static let pauses: [Duration] = [.milliseconds(200), .milliseconds(800)]

    init(
        name: String, url: URL, secret: String?, headers: [String: String] = [:], timeoutMilliseconds: Int,
        config: JSONValue, client: any PluginHTTPClient, lifecycle: Bool = false
    ) {
        self.lifecycle = lifecycle
        extraHeaders = headers
        self.client = client
        pluginName = name
        self.url = url
        self.secret = secret
        timeout = .milliseconds(timeoutMilliseconds)
        self.config = config
    }

    required convenience init(configuration: NoConfiguration) throws {
        throw ExternalPlugin.PluginFailure(description: "HTTP plugins are created from `url`")
    }

    /// Posts `start` (with `lifecycle: true`). A service that does not take it is logged, and
    /// the plugin stays: the service runs apart from the host and may be back by the next post.
    func start(_ environment: PluginEnvironment) async throws {
        self.environment.withLock { $0 = environment }
        guard lifecycle else { return }
        do {
            _ = try await post("start", [:], delivery: "\(environment.bot.name)/start/\(pluginName)")
        } catch {
            environment.logger.warning("plugin \(pluginName) start: \(error); its posts go on")
        }
    }

    /// Posts `stop` (with `lifecycle: true`); a failure is logged, as the host is stopping anyway.
    func stop() async {
        guard lifecycle, let environment = environment.withLock({ $0 }) else { return }
        do {
            _ = try await post("stop", [:], delivery: "\(environment.bot.name)/stop/\(pluginName)")
        } catch {
            environment.logger.warning("plugin \(pluginName) stop: \(error)")
        }
    }

    private var metrics: HostMetrics? { environment.withLock { $0?.metrics } }

    /// The URL as the log may show it: its scheme, host and port (its path or query may hold a
    /// token, as Slack's webhook URLs do).
    var shownURL: String { "\(url.scheme ?? "http")://\(url.host ?? "")" + (url.port.map { ":\($0)" } ?? "") }

    /// Posted for its `plugin:` actions only, never for an event.
    func hears(_ name: EventName) -> Bool { false }

    func handle(_ context: BotContext) async throws {
        let answer = try await post(
            "handle", ExternalPlugin.params(context),
            delivery: "\(context.bot.name)/\(context.event.seq)/\(pluginName)")
        try await run(answer, context)
    }

    /// Posts the JSON-RPC request `method` with `params` (and the plugin's name, its config and the
    /// bot), tried again on a refused connection, a 429 or a 5xx, all within the timeout.
    /// - Returns: the body of the 2xx answer.
    /// - Throws: ``ExternalPlugin/PluginFailure`` for another status or no answer in time.
    private func post(_ method: String, _ params: [String: JSONValue], delivery: String) async throws -> [UInt8] {
        let id = nextId.withLock { id -> Int in
            id += 1
            return id
        }
        var params = params
        params["plugin"] = .string(pluginName)
        params["config"] = config
        if params["bot"] == nil, let bot = environment.withLock({ $0?.bot }) {
            params["bot"] = ExternalPlugin.json(of: bot)
        }
        var writer = JSONWriter()
        writer.raw("{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":")
        writer.string(method)
        writer.raw(",\"params\":")
        writer.value(.object(params))
        writer.raw("}")
        let body = Array(writer.output.utf8)

        var headers = extraHeaders
        headers.merge(["Content-Type": "application/json", "X-Perch-Delivery": delivery]) { _, own in own }
        if let secret { headers[WebhookSignature.header] = WebhookSignature.value(secret: secret, body: body) }

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
            let answer: (status: Int, body: [UInt8])
            do {
                answer = try await client.post(url, headers: headers, body: body, within: left)
            } catch .timedOut {
                break
            } catch .cancelled {
                throw CancellationError()
            } catch .unreachable(let reason) {
                // Refused, reset, not resolved: worth another try.
                failure = "cannot reach \(shownURL): \(reason)"
                continue
            }
            // An answer after the deadline is abandoned as a timeout, whatever the client did: its
            // timer runs on a pool that a busy host may keep it waiting for (a full parallel test run
            // saw a 0.3 s post answered at 1.5 s).
            guard ContinuousClock.now <= deadline else { break }
            switch answer.status {
            case 200..<300:
                return answer.body
            case 429, 500..<600:
                failure = "\(shownURL) answered \(answer.status)"
                continue
            default:
                throw ExternalPlugin.PluginFailure(
                    description: "\(shownURL) answered \(answer.status); nothing was tried again")
            }
        }
        if failure.isEmpty || ContinuousClock.now >= deadline {
            metrics?.increment("perch_plugin_timeouts_total", ["plugin": pluginName])
            throw ExternalPlugin.PluginFailure(
                description: "\(shownURL) did not answer within \(timeout)" + (failure.isEmpty ? "" : " (\(failure))"))
        }
        throw ExternalPlugin.PluginFailure(description: failure + "; tried \(tries) times")
    }

    /// Runs the actions of a 2xx answer's body: a JSON-RPC response, or its bare result.
    private func run(_ data: [UInt8], _ context: BotContext) async throws {
        guard !data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) else { return }
        guard let json = try? JSONValue(parsing: String(decoding: data, as: UTF8.self)), case .object = json else {
            throw ExternalPlugin.PluginFailure(description: "\(shownURL) answered a body that is not a JSON object")
        }
        if let error = json["error"], error != .null {
            let message = error["message"]?.stringValue ?? "no message"
            throw ExternalPlugin.PluginFailure(description: "\(shownURL) answered an error: \(message)")
        }
        try await ExternalPlugin.run(json["result"] ?? json, context)
    }
}
