import Foundation
import PerchChat
import PerchHost
import PerchLock
import PerchService

/// Perch's HTTP API: CometChat REST v3 paths and names over the chat service.
///
/// Authentication: `apikey` (the app; with `onBehalfOf: uid` it acts for that user, without it as
/// `app_system`), or `authtoken` (a user's token from `POST /v3/users/{uid}/auth_tokens`). Answers
/// are `{"data": ...}` (lists add `"meta"` with cursors); messages use the SDK's field names;
/// errors are `{"error": {"code", "message", "details"}}` with the fitting status.
public final class PerchAPI: Sendable {
    let service: ChatService
    let host: BotHost?
    /// The SHA-256 of the API key, taken once (a request's key is hashed and compared with it in
    /// constant time); nil when no key is set, which refuses every `apikey`.
    let apiKeyDigest: [UInt8]?
    let metrics: HostMetrics
    /// Each route's request counters, made at its first request.
    private let routeMetrics = Lock<[String: RouteMetrics]>([:])
    let media: MediaSettings?
    let web: WebSettings?
    /// The largest JSON body; media uploads have their own limit.
    let maximumBodyBytes: Int
    /// Messages a user may send a minute (0: no limit), as sliding one-minute windows.
    let messagesPerMinute: Int
    let sendWindows = Lock<[String: [Double]]>([:])
    /// A WebSocket whose client sent nothing for this long is pinged, and closed when nothing
    /// came back for as long again.
    let heartbeat: Duration
    let routes: [Route]
    /// The names the server answers to and the origins that may change state (`server.hostNames`).
    let origins: OriginPolicy

    public init(
        service: ChatService, host: BotHost? = nil, apiKey: String?, metrics: HostMetrics = HostMetrics(),
        media: MediaSettings? = nil, web: WebSettings? = nil, maximumBodyBytes: Int = 1 << 20,
        messagesPerMinute: Int = 0, heartbeat: Duration = .seconds(15), hostNames: [String] = [],
        chat: Bool = true
    ) {
        self.origins = OriginPolicy(hostNames: hostNames)
        self.web = web
        self.heartbeat = heartbeat
        self.messagesPerMinute = messagesPerMinute
        self.service = service
        self.host = host
        self.apiKeyDigest = apiKey.flatMap { $0.isEmpty ? nil : Secrets.digest($0) }
        self.metrics = metrics
        self.media = media
        self.maximumBodyBytes = maximumBodyBytes
        self.routes = Self.table().filter { chat || Self.operational.contains($0.name) }
    }

    /// The routes served without the chat API (`chat: false`, when the bots live on another
    /// server, where people chat): health, readiness, metrics and the bots' webhooks.
    static let operational: Set<String> = ["healthz", "readyz", "metrics", "hooks"]

    /// Who is calling.
    struct Caller: Sendable {
        var uid: String
        var isApp: Bool
        /// The client's name for its session (`X-Perch-Session`, or a stream's), as it knows it.
        var sessionName: String?
        /// The session as the service knows it: the name within its user's own namespace, so a
        /// session named by one user is never another's (another user sending with someone's
        /// session name cannot keep their messages off that person's stream).
        var session: String?

        init(uid: String, isApp: Bool, sessionName: String?) {
            self.uid = uid
            self.isApp = isApp
            self.sessionName = sessionName
            session = sessionName.map { Self.sessionKey(uid: uid, name: $0) }
        }

        static func sessionKey(uid: String, name: String) -> String { uid + "/" + name }
    }

    /// A client's session name, checked: 1–128 letters, digits, `-`, `_`, `.` or `:` (it is
    /// written back in the `perch.session` event and the WebSocket's first message).
    /// - Throws: `ERR_BAD_REQUEST {field}` for anything else.
    static func sessionName(_ name: String?, field: String) throws(ChatError) -> String? {
        guard let name else { return nil }
        let allowed = name.utf8.allSatisfy {
            (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                || [0x2D, 0x5F, 0x2E, 0x3A].contains($0)
        }
        guard allowed, (1...128).contains(name.utf8.count) else {
            throw .badRequest(field, "a session is 1–128 letters, digits, '-', '_', '.' or ':'")
        }
        return name
    }

    struct Route: Sendable {
        var method: String
        var pattern: [String]
        var name: String
        var authenticated: Bool
        var appOnly: Bool
        /// Its answer keeps the connection (an event stream, a WebSocket): not for a request
        /// sent inside a WebSocket.
        var ownsConnection: Bool
        /// Inside a WebSocket, it may start while the requests before it wait for their commits
        /// (``WebSocketSession/pipelines(_:)``), when the store keeps the order of queued writes.
        var pipelines: Bool
        var handler: @Sendable (PerchAPI, Request) async throws -> HTTPResponse

        func match(_ method: String, _ parts: [String]) -> [String: String]? {
            guard method == self.method, parts.count == pattern.count else { return nil }
            var parameters: [String: String] = [:]
            for (part, expected) in zip(parts, pattern) {
                if expected.hasPrefix("{") {
                    parameters[String(expected.dropFirst().dropLast())] = part.removingPercentEncoding ?? part
                } else if part != expected {
                    return nil
                }
            }
            return parameters
        }
    }

    struct Request: Sendable {
        var http: HTTPRequest
        var parameters: [String: String]
        var caller: Caller
        /// Sent over a WebSocket while the requests before it wait for their commits.
        var pipelining: Pipelining?

        func parameter(_ name: String) -> String { parameters[name] ?? "" }

        func id(_ name: String = "id") throws(ChatError) -> Int64 {
            guard let id = Int64(parameter(name)), id > 0 else { throw .badRequest(name, "expected a message id") }
            return id
        }

        func query(_ name: String) -> String? { http.query[name] }

        func queryInt(_ name: String, default value: Int? = nil, range: ClosedRange<Int>? = nil) throws(ChatError)
            -> Int?
        {
            guard let text = http.query[name] else { return value }
            guard let number = Int(text), range.map({ $0.contains(number) }) ?? true else {
                throw .badRequest(
                    name,
                    range.map { "expected an integer from \($0.lowerBound) to \($0.upperBound)" }
                        ?? "expected an integer")
            }
            return number
        }

        func queryBool(_ name: String) throws(ChatError) -> Bool? {
            guard let text = http.query[name] else { return nil }
            switch text {
            case "true", "1": return true
            case "false", "0": return false
            default: throw .badRequest(name, "expected true or false")
            }
        }

        func body() throws(ChatError) -> JSONBody { try JSONBody(http.body) }

        /// The body of an update, where no body at all is a client's mistake (`{}` changes nothing).
        func requiredBody() throws(ChatError) -> JSONBody { try JSONBody(http.body, allowEmpty: false) }
    }

    /// The route names and patterns, for the OpenAPI check.
    public var routeList: [(method: String, path: String)] {
        routes.map { ($0.method, "/" + $0.pattern.joined(separator: "/")) }
    }

    /// Answers one request, with the headers every HTTP answer carries (``protected(_:)``).
    public func respond(to http: HTTPRequest) async -> HTTPResponse {
        Self.protected(await respond(to: http, socketCaller: nil))
    }

    /// `response` with `X-Content-Type-Options: nosniff` (a browser never reads JSON or an upload
    /// as a page or a script) and, unless it says otherwise (the web chat's files), `Cache-Control:
    /// no-store`: an answer is for its caller alone, and a cache in front keys on the URL, not on
    /// the `apikey` or `authtoken` header that chose what the answer shows.
    static func protected(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        if response.header("Cache-Control") == nil { response.headers.append(("Cache-Control", "no-store")) }
        if response.header("X-Content-Type-Options") == nil {
            response.headers.append(("X-Content-Type-Options", "nosniff"))
        }
        return response
    }

    /// Answers one request; `socketCaller`: sent over a WebSocket, whose handshake authenticated
    /// the caller (the request's own headers are not read for it).
    func respond(to http: HTTPRequest, socketCaller: Caller?, pipelining: Pipelining? = nil) async -> HTTPResponse {
        let started = DispatchTime.now().uptimeNanoseconds
        let parts = http.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        var routeName = "unmatched"
        let response: HTTPResponse
        do {
            let matched = route(http.method, parts)
            // A WebSocket's own requests were checked at its handshake.
            if socketCaller == nil, let refusal = origins.refusal(http, route: matched?.0.name ?? "unmatched") {
                throw HTTPRefusal(status: refusal.code == .permissionDenied ? 403 : 421, error: refusal)
            }
            guard let (route, parameters) = matched else {
                let allowed = allowedMethods(parts)
                guard !allowed.isEmpty else { throw HTTPRefusal.notServed }
                let answer = Self.methodNotTaken(http.method, allowed: allowed)
                return recorded(answer, route: answer.status == 204 ? "options" : "unmatched", since: started)
            }
            routeName = route.name
            if route.name != "media.upload", http.body.count > maximumBodyBytes {
                throw HTTPRefusal.tooLarge("larger than the body limit", limit: maximumBodyBytes)
            }
            // A JSON endpoint takes JSON only: a form or a `text/plain` body (what a page of another
            // site may post without asking the browser first) is refused before it is read.
            if socketCaller == nil, route.name != "media.upload", !http.body.isEmpty,
                !Self.isJSON(http.header("content-type"))
            {
                throw HTTPRefusal(
                    status: 415, error: .badRequest("Content-Type", "this endpoint takes application/json"))
            }
            let caller: Caller
            if let socketCaller {
                guard !route.ownsConnection else {
                    throw ChatError.badRequest("path", "not available over a WebSocket: it has its own connection")
                }
                guard socketCaller.isApp || !route.appOnly else {
                    throw ChatError(.authInvalidAPIKey, ["reason": "this endpoint needs the apikey"])
                }
                caller = socketCaller
            } else if route.authenticated {
                caller = try await authenticate(http, appOnly: route.appOnly)
            } else {
                // Nobody: a route that needs no credentials gets no powers from its caller.
                caller = Caller(uid: "", isApp: false, sessionName: nil)
            }
            let request = Request(http: http, parameters: parameters, caller: caller, pipelining: pipelining)
            response = try await route.handler(self, request)
        } catch let refusal as HTTPRefusal {
            response = .json(refusal.status, APIJSON.error(refusal.error))
        } catch {
            response = Self.refusal(service.wireSafeError(error))
        }
        return recorded(response, route: routeName, since: started)
    }

    /// A refusal's answer: its status, its body and, when it says when to come back (429, 503),
    /// `Retry-After` (RFC 9110) with the same seconds as `details.retryAfter`.
    static func refusal(_ error: ChatError) -> HTTPResponse {
        var response = HTTPResponse.json(error.code.httpStatus, APIJSON.error(error))
        if case .int(let seconds)? = error.params["retryAfter"] {
            response.headers.append(("Retry-After", "\(seconds)"))
        }
        return response
    }

    /// Whether a `Content-Type` is JSON's (`application/json`, with or without parameters).
    static func isJSON(_ type: String?) -> Bool {
        guard let type else { return false }
        let essence = type.split(separator: ";", maxSplits: 1).first ?? ""
        return essence.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
    }

    /// RFC 9110's answer to a method the path does not take: 204 to OPTIONS, else 405, each
    /// naming the path's methods in `Allow`.
    private static func methodNotTaken(_ method: String, allowed: [String]) -> HTTPResponse {
        let allow = ("Allow", allowed.joined(separator: ", "))
        guard method != "OPTIONS" else { return HTTPResponse(status: 204, headers: [allow]) }
        var response = HTTPResponse.json(405, APIJSON.error(.badRequest("path", "method \(method) not allowed")))
        response.headers.append(allow)
        return response
    }

    /// `response`, counted in its route's metrics with the time since `started`.
    private func recorded(_ response: HTTPResponse, route: String, since started: UInt64) -> HTTPResponse {
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        let counters = routeMetrics.withLock { known in
            if let counters = known[route] { return counters }
            let counters = RouteMetrics(metrics, route: route)
            known[route] = counters
            return counters
        }
        counters.record(status: response.status, seconds: seconds)
        return response
    }

    /// Counts a message send against the caller's minute.
    /// - Throws: `ERR_TOO_MANY_REQUESTS {retryAfter}` past `limits.messagesPerMinute`.
    func admitSend(_ caller: Caller) throws(ChatError) {
        guard messagesPerMinute > 0, !caller.isApp else { return }
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        let limit = messagesPerMinute
        let retryAfter = sendWindows.withLock { windows -> Int? in
            var times = windows[caller.uid, default: []].filter { now - $0 < 60 }
            guard times.count < limit else {
                windows[caller.uid] = times
                return max(1, Int((60 - (now - times[0])).rounded(.up)))
            }
            times.append(now)
            windows[caller.uid] = times
            return nil
        }
        if let retryAfter { throw ChatError(.tooManyRequests, ["retryAfter": .int(Int64(retryAfter))]) }
    }

    func authenticate(_ http: HTTPRequest, appOnly: Bool) async throws(ChatError) -> Caller {
        let session = try Self.sessionName(http.header("x-perch-session"), field: "X-Perch-Session")
        if let key = http.header("apikey") {
            guard let apiKeyDigest, Secrets.matches(key, digest: apiKeyDigest) else {
                throw ChatError(.authInvalidAPIKey)
            }
            if let uid = http.header("onbehalfof"), !appOnly {
                _ = try await service.user(uid)
                return Caller(uid: uid, isApp: false, sessionName: session)
            }
            return Caller(uid: User.system, isApp: true, sessionName: session)
        }
        guard !appOnly else { throw ChatError(.authInvalidAPIKey, ["reason": "this endpoint needs the apikey"]) }
        if let token = http.header("authtoken") {
            guard let uid = try await service.tokenOwner(hash: Secrets.hash(token)) else {
                throw ChatError(.authInvalidToken)
            }
            return Caller(uid: uid, isApp: false, sessionName: session)
        }
        throw ChatError(.authNoCredentials)
    }
}

extension PerchAPI {
    static func route(
        _ method: String, _ path: String, name: String, authenticated: Bool = true, appOnly: Bool = false,
        ownsConnection: Bool = false, pipelines: Bool = false,
        _ handler: @escaping @Sendable (PerchAPI, Request) async throws -> HTTPResponse
    ) -> Route {
        Route(
            method: method, pattern: path.split(separator: "/").map(String.init), name: name,
            authenticated: authenticated, appOnly: appOnly, ownsConnection: ownsConnection, pipelines: pipelines,
            handler: handler)
    }

    /// The route for `method` and the path's `parts`, with its parameters. HEAD takes a GET
    /// route's answer (the server sends its headers, not its body), but not a stream's or a
    /// socket's, which own their connection.
    func route(_ method: String, _ parts: [String]) -> (Route, [String: String])? {
        let head = method == "HEAD"
        for route in routes where !(head && route.ownsConnection) {
            if let parameters = route.match(head ? "GET" : method, parts) { return (route, parameters) }
        }
        return nil
    }

    /// The methods the path `parts` answers to, as RFC 9110's `Allow` lists them (HEAD beside
    /// GET, and OPTIONS); empty when no route has that path.
    func allowedMethods(_ parts: [String]) -> [String] {
        var methods: [String] = []
        for route in routes where route.match(route.method, parts) != nil {
            methods.append(route.method)
            if route.method == "GET", !route.ownsConnection { methods.append("HEAD") }
        }
        return methods.isEmpty ? [] : methods + ["OPTIONS"]
    }

    /// Whether `http`, sent over a WebSocket, may start while the requests before it wait for
    /// their commits: its route pipelines and the store keeps the order of queued writes.
    func pipelines(_ http: HTTPRequest) -> Bool {
        guard service.store.submitsInOrder else { return false }
        let parts = http.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        return route(http.method, parts)?.0.pipelines ?? false
    }

    static func table() -> [Route] {
        [
            route("GET", "healthz", name: "healthz", authenticated: false) { _, _ in .text(200, "ok\n") },
            route("GET", "readyz", name: "readyz", authenticated: false) { api, _ in await api.ready() },
            route("GET", "metrics", name: "metrics", authenticated: false) { api, _ in
                api.host?.sampleStorage()
                return .text(200, api.metrics.prometheusText + "\n", type: "text/plain; version=0.0.4")
            },
            route("GET", "v3/features", name: "features") { api, _ in
                .json(
                    200,
                    APIJSON.data(
                        #"{"pin":\#(api.service.isPinMessageEnabled()),"save":\#(api.service.isSaveMessageEnabled())}"#)
                )
            },
            route("POST", "v3/users/{uid}/auth_tokens", name: "auth_tokens", appOnly: true) { api, request in
                try request.body().finish()
                return .json(200, APIJSON.data(try await api.issueToken(for: request.parameter("uid"))))
            },
            route("GET", "v3/users", name: "users.list") { api, request in
                let users = try await api.service.users(
                    limit: try request.queryInt("limit", default: 100, range: 1...100)!, after: request.query("after"))
                return .json(200, APIJSON.list(users.map(APIJSON.encode)))
            },
            route("POST", "v3/users", name: "users.create", appOnly: true) { api, request in
                var body = try request.body()
                let uid = try body.string("uid", required: true)!
                let name = try body.string("name", required: true)!
                let role = try body.string("role")
                let metadata = body.json("metadata")
                try body.finish()
                let user = try await api.service.createUser(
                    uid: uid, name: name, role: role ?? User.defaultRole, metadata: metadata)
                return .json(200, APIJSON.data(APIJSON.encode(user)))
            },
            route("GET", "v3/users/{uid}", name: "users.get") { api, request in
                .json(200, APIJSON.data(APIJSON.encode(try await api.service.user(request.parameter("uid")))))
            },
            route("PUT", "v3/users/{uid}", name: "users.update") { api, request in
                guard request.caller.isApp || request.caller.uid == request.parameter("uid") else {
                    throw ChatError(.permissionDenied, ["reason": "only the user or the app updates a user"])
                }
                var body = try request.requiredBody()
                let name = try body.string("name")
                let role = try body.string("role")
                let metadata = body.json("metadata")
                try body.finish()
                if role != nil, !request.caller.isApp { throw ChatError.badRequest("role", "only the app sets roles") }
                let user = try await api.service.updateUser(
                    uid: request.parameter("uid"), name: name, role: role, metadata: metadata)
                return .json(200, APIJSON.data(APIJSON.encode(user)))
            },
        ] + webRoutes() + groupRoutes() + messageRoutes() + botStorageRoutes() + pluginRoutes() + threadRoutes()
            + notificationRoutes()
            + mediaRoutes() + [
                route("GET", "v3/events", name: "events", ownsConnection: true) { api, request in
                    try await api.events(request)
                },
                route("GET", "v3/ws", name: "ws", ownsConnection: true) { api, request in
                    try await api.webSocket(request)
                },
                // Server-Sent Events of notifications as they are routed: the caller's, or, for the
                // app, everyone's (`perch tail --notifications`).
                route("GET", "v3/notifications/stream", name: "notifications.stream", ownsConnection: true) {
                    api, request in
                    // The start is taken before the answer, so nothing routed after it is missed.
                    let source =
                        request.caller.isApp
                        ? ChatEventSource(
                            routedBy: api.service, after: try await api.service.newestNotificationSequence(),
                            metrics: api.metrics)
                        : ChatEventSource(
                            notificationsOf: request.caller.uid, after: try await api.eventsStart(request),
                            notificationsAfter: try await api.service.newestNotification(of: request.caller.uid),
                            service: api.service, metrics: api.metrics)
                    return HTTPResponse(
                        status: 200,
                        headers: [
                            ("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                            ("X-Accel-Buffering", "no"),
                        ],
                        stream: source)
                },
                // The app's API key fires every rule on the hook; a rule's own secret (a signature or
                // a token a service such as GitHub or GitLab sends) fires that rule.
                route("POST", "v3/hooks/{name}", name: "hooks", authenticated: false) { api, request in
                    let http = request.http
                    var byApp = request.caller.isApp  // a WebSocket of the app
                    if !byApp, http.header("apikey") != nil {
                        _ = try await api.authenticate(http, appOnly: true)
                        byApp = true
                    }
                    let credential = WebhookCredential(http)
                    guard byApp || credential != nil else {
                        throw ChatError(.authInvalidAPIKey, ["reason": .string(WebhookCredential.wanted)])
                    }
                    let body = http.body.isEmpty ? JSONValue.object([:]) : try JSONBody(http.body).asValue
                    let name = request.parameter("name")
                    let accepting = credential.map { credential in
                        { @Sendable (secret: String) in credential.accepts(secret: secret, body: http.body) }
                    }
                    let fired = await api.host?.webhook(name, body: body, accepting: byApp ? nil : accepting) ?? 0
                    guard fired > 0 else {
                        // Without the key, a hook that does not exist is told as one that refused.
                        guard byApp else {
                            throw ChatError(.authInvalidAPIKey, ["reason": "no rule of this webhook takes that secret"])
                        }
                        throw ChatError.webhookNotFound(name)
                    }
                    return .json(200, APIJSON.data(#"{"rules":\#(fired)}"#))
                },
            ]
    }

    func ready() async -> HTTPResponse {
        let storeOpen = (try? await service.store.latestEventSequence()) != nil
        let hostRunning = await host?.state ?? .running
        let reason = await host?.notReadyReason()
        guard storeOpen, hostRunning == .running, reason == nil else {
            return .json(
                503,
                #"{"ready":false,"store":\#(storeOpen),"bots":"\#(hostRunning)","reason":\#(JSONWriter.quoted(reason ?? "the store is closed"))}"#
            )
        }
        return .json(200, #"{"ready":true}"#)
    }
}

extension JSONBody {
    /// The whole body as JSON (webhooks take any body).
    var asValue: JSONValue { .object(object) }
}

extension PerchAPI {
    /// Mints an auth token for `uid` (only its hash is stored) and answers `{"uid", "authToken"}`.
    func issueToken(for uid: String) async throws(ChatError) -> String {
        let token = Secrets.newToken()
        try await service.storeToken(hash: Secrets.hash(token), for: uid)
        return APIJSON.encode(["uid": uid, "authToken": token])
    }
}

/// One route's series: requests by status, and the request-duration histogram.
final class RouteMetrics: Sendable {
    /// The histogram's bounds, in seconds.
    static let bounds = [0.001, 0.005, 0.025, 0.1, 0.5, 2.5]

    private let metrics: HostMetrics
    private let route: String
    private let buckets: [HostMetrics.Counter]
    private let count: HostMetrics.Counter
    private let sum: HostMetrics.Counter
    private let statuses = Lock<[Int: HostMetrics.Counter]>([:])

    init(_ metrics: HostMetrics, route: String) {
        self.metrics = metrics
        self.route = route
        // The last bucket, `+Inf`, counts every request: the format needs it (it equals `_count`).
        buckets = (Self.bounds.map { String($0) } + ["+Inf"]).map {
            metrics.counter("perch_http_request_duration_seconds_bucket", ["route": route, "le": $0])
        }
        count = metrics.counter("perch_http_request_duration_seconds_count", ["route": route])
        sum = metrics.counter("perch_http_request_duration_seconds_sum", ["route": route])
    }

    func record(status: Int, seconds: Double) {
        let requests = statuses.withLock { statuses in
            if let counter = statuses[status] { return counter }
            let counter = metrics.counter("perch_http_requests_total", ["route": route, "status": String(status)])
            statuses[status] = counter
            return counter
        }
        requests.add()
        for (bound, bucket) in zip(Self.bounds + [.infinity], buckets) where seconds <= bound { bucket.add() }
        count.add()
        sum.add(seconds)
    }
}
