import Foundation
import PerchChat
import PerchConfig

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The terminal client's side of the HTTP API: the API key from `PERCH_API_KEY`, the address from
/// config.yaml's `server.listen` (or `--url`).
struct APIClient {
    let base: URL
    let apiKey: String
    let onBehalfOf: String

    struct Failure: Error, CustomStringConvertible {
        var description: String
        /// Nothing listened at the address (the host is not running, or is restarting).
        var cannotConnect = false
    }

    func call(_ method: String, _ path: String, body: [String: Any]? = nil) async throws -> Any {
        try await answer(method, path, body: body)["data"] ?? [:]
    }

    /// A list's rows and its `meta`.
    func list(_ path: String) async throws -> (rows: [[String: Any]], meta: [String: Any]) {
        let object = try await answer("GET", path)
        return (object["data"] as? [[String: Any]] ?? [], object["meta"] as? [String: Any] ?? [:])
    }

    /// The whole JSON object of a 200 answer.
    /// - Throws: ``Failure`` with the API's error code and message, or when nobody answers.
    func answer(_ method: String, _ path: String, body: [String: Any]? = nil) async throws -> [String: Any] {
        var request = URLRequest(url: URL(string: base.absoluteString + path)!)
        request.httpMethod = method
        request.setValue(apiKey, forHTTPHeaderField: "apikey")
        if !onBehalfOf.isEmpty { request.setValue(onBehalfOf, forHTTPHeaderField: "onBehalfOf") }
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            throw Self.unreachable(base, error)
        }
        let object = try? JSONSerialization.jsonObject(with: data)
        guard let status = (response as? HTTPURLResponse)?.statusCode, status == 200 else {
            let error = ((object as? [String: Any])?["error"] as? [String: Any])
            throw Failure(
                description: "\(error?["code"] as? String ?? "HTTP error"): \(error?["message"] as? String ?? "")")
        }
        return object as? [String: Any] ?? [:]
    }

    /// What a request that got no answer says: Foundation's error printed as it comes is a
    /// dump of its `userInfo` ("Error Domain=NSURLErrorDomain Code=-1004 ...").
    static func unreachable(_ base: URL, _ error: any Error) -> Failure {
        let address = base.host.map { host in base.port.map { "\(host):\($0)" } ?? host } ?? base.absoluteString
        let code = (error as NSError).code
        if code == NSURLErrorCannotConnectToHost || code == NSURLErrorNetworkConnectionLost {
            return Failure(
                description: "cannot connect to \(address): is perch run running there? (the address is "
                    + "config.yaml's server.listen, or --url)", cannotConnect: true)
        }
        if code == NSURLErrorBadURL || code == NSURLErrorUnsupportedURL {
            return Failure(description: "\(base.absoluteString) is not an address to reach the host at")
        }
        let reason = (error as NSError).userInfo[NSLocalizedDescriptionKey] as? String ?? "\(error)"
        return Failure(description: "no answer from \(address): \(reason)", cannotConnect: true)
    }

    /// Reads the Server-Sent Events stream of `GET /v3/events` (after the event `after` when given,
    /// as `Last-Event-ID`), calling `connected` when the host first answers and `line` per event,
    /// until the stream ends. Returns the id of the last event read (or `after`). Throws with
    /// `cannotConnect` when nobody answers (nothing listens, or a host that is stopping closed the
    /// connection before answering).
    @discardableResult
    func tail(
        _ path: String = "/v3/events", after: Int64? = nil, connected: () -> Void = {},
        socket opened: (Int32) -> Void = { _ in }, _ line: (String, [String: Any]) -> Void
    ) throws -> Int64? {
        guard let host = base.host, let port = base.port else { throw Failure(description: "bad --url") }
        let unanswered = Failure(description: "cannot connect to \(host):\(port)", cannotConnect: true)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw unanswered }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr(host == "localhost" ? "127.0.0.1" : host)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else { throw unanswered }
        opened(fd)
        let resume = after.map { "Last-Event-ID: \($0)\r\n" } ?? ""
        let user = onBehalfOf.isEmpty ? "" : "onBehalfOf: \(onBehalfOf)\r\n"
        let request = Array(
            ("GET \(path) HTTP/1.0\r\nHost: \(host)\r\napikey: \(apiKey)\r\n\(user)"
                + "Accept: text/event-stream\r\n\(resume)\r\n").utf8)
        // Plain system calls: FileHandle's write traps on a connection reset (a host stopping).
        let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == request.count else { throw unanswered }
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        var buffer = ""
        var name = ""
        var last = after
        var answered = false
        var refused: String?
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                // A refusal's body (the API's error object) ends with the connection.
                if let refused {
                    let body = buffer.range(of: "\r\n\r\n").map { String(buffer[$0.upperBound...]) } ?? buffer
                    let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
                    let error = object?["error"] as? [String: Any]
                    throw Failure(
                        description:
                            "\(error?["code"] as? String ?? "HTTP \(refused)"): \(error?["message"] as? String ?? body)"
                    )
                }
                if !answered { throw unanswered }
                return last
            }
            buffer += String(decoding: chunk[..<count], as: UTF8.self)
            if !answered {
                // The status line: anything but 200 is a refusal, read to its end.
                guard let newline = buffer.firstIndex(where: Self.endsLine) else { continue }
                let status = buffer[..<newline].split(separator: " ").dropFirst().first.map(String.init) ?? "?"
                answered = true
                guard status == "200" else {
                    refused = status
                    continue
                }
                connected()
            }
            if refused != nil { continue }
            while let newline = buffer.firstIndex(where: Self.endsLine) {
                let text = String(buffer[..<newline])
                buffer.removeSubrange(...newline)
                if text.hasPrefix("id: "), let id = Int64(text.dropFirst(4)) { last = id }
                if text.hasPrefix("event: ") { name = String(text.dropFirst(7)) }
                // The events' stream carries the user's notifications too: shown only when asked for.
                let shown =
                    (name.hasPrefix("on") && (name != "onNotification" || path != "/v3/events")) || name == "perch.gap"
                if text.hasPrefix("data: "), shown,
                    let object = try? JSONSerialization.jsonObject(
                        with: Data(text.dropFirst(6).utf8)) as? [String: Any]
                {
                    line(name, object)
                }
                if text.isEmpty { name = "" }
                if text.hasPrefix("{\"error\"") { throw Failure(description: text) }
            }
        }
    }

    /// Whether a character ends a line: "\n", or "\r\n", which a String holds as one Character (the
    /// HTTP head's lines end so; a search for "\n" passes over them).
    static func endsLine(_ character: Character) -> Bool { character == "\n" || character == "\r\n" }

    /// ``tail(after:connected:_:)`` until `stopping()` says so, through the host's restarts: when
    /// the stream ends, it tries again every `retry` and resumes after the last event read, so no
    /// event is missed (the host's log keeps them; past its retention the stream says which were
    /// removed). `say` gets a line for the reader when the stream ends and when it is back. Throws
    /// when the first connection fails or the host refuses the stream (a wrong key): those do not
    /// get better by waiting.
    func follow(
        _ path: String = "/v3/events", retry: Duration = .seconds(1), stopping: () -> Bool = { false },
        say: (String) -> Void, _ line: (String, [String: Any]) -> Void
    ) throws {
        var last = try tail(path, line)
        let pause = Double(retry.components.seconds) + Double(retry.components.attoseconds) / 1e18
        while !stopping() {
            say("the stream ended (the host stopped or restarted); connecting again every \(retry)")
            while !stopping() {
                Thread.sleep(forTimeInterval: pause)
                do {
                    last = try tail(path, after: last, connected: { say("connected again") }, line)
                    break
                } catch let failure as Failure where failure.cannotConnect {
                    continue
                }
            }
        }
    }

    /// One line of `perch tail`: the event's name, its message, and who did it when that is not
    /// the message's sender (a reaction's reactor and reaction, an edit's, unpin's or save's actor).
    static func describe(event name: String, _ object: [String: Any]) -> String {
        if name == "onNotification" {
            let message = object["message"] as? [String: Any]
            var line = "notification for \(object["uid"] ?? "?") (\(object["reason"] ?? "?")): "
            line += message.map(describe) ?? "#\(object["messageId"] ?? "?") (no longer readable)"
            if let message, let receiver = message["receiverUid"] as? String {
                line += message["receiverType"] as? String == "group" ? " in \(receiver)" : " to \(receiver)"
            }
            return line
        }
        if let message = object["message"] as? [String: Any] {
            var line = "\(name) \(describe(message))"
            if let reaction = object["reaction"] as? [String: Any] {
                line += " — \(reaction["reaction"] ?? "?") by \(reaction["uid"] ?? "?")"
            } else if let actor = object["actor"] as? String, name != "onMessageDeleted",
                name != "onMessagePinned" || actor != message["pinnedBy"] as? String
            {
                // A deletion names its deleter and a pin its pinner already; a pin as app_system
                // names the bot behind it too.
                line += " — by \(actor)"
            }
            return line
        }
        if name == "perch.gap" {
            let range = "\(object["from"] ?? "?") to \(object["through"] ?? "?")"
            return "(events \(range) were removed by the retention unread)"
        }
        if let member = object["member"] as? [String: Any] {
            return "\(name) \(member["uid"] ?? "?") in \(member["guid"] ?? "?") by \(member["actor"] ?? "?")"
        }
        return name
    }

    static func describe(_ message: [String: Any]) -> String {
        var parts = ["#\(message["id"] ?? "?")", "\(message["sender"] ?? "?"):"]
        if let parent = message["parentMessageId"] as? Int, parent != 0 { parts.append("[thread #\(parent)]") }
        if let quoted = message["quotedMessageId"] as? Int, quoted != 0 { parts.append("[quoting #\(quoted)]") }
        if let deleted = message["deletedAt"] as? Int, deleted != 0 {
            parts.append("(deleted by \(message["deletedBy"] ?? "?"))")
        } else {
            parts.append(message["text"] as? String ?? "(\(message["type"] ?? "message"))")
        }
        if let pinned = message["pinnedAt"] as? Int, pinned != 0 { parts.append("📌 by \(message["pinnedBy"] ?? "?")") }
        return parts.joined(separator: " ")
    }
}

/// `perch tail`, `perch pins`, `perch threads`, and `perch send` over HTTP.
enum ClientCommands {
    static func client(_ parsed: ParsedArguments) throws -> APIClient {
        // Every user's notifications are the app's to read: `tail --notifications` without `--as`.
        let asApp = parsed.command == "plugin" || (parsed.command == "tail" && parsed.flags.contains("notifications"))
        guard let uid = parsed.options["as"] ?? (asApp ? "" : nil) else { throw UsageError("--as UID is required") }
        guard let key = ProcessInfo.processInfo.environment["PERCH_API_KEY"], !key.isEmpty else {
            throw UsageError("set PERCH_API_KEY to the host's API key (make run keeps one in data/.dev-api-key)")
        }
        var base = parsed.options["url"]
        if base == nil {
            let configPath = parsed.options["config"] ?? "config.yaml"
            let loaded = PerchConfigLoader.load(configPath)
            base = "http://" + (loaded?.server.listen ?? "127.0.0.1:8080")
        }
        guard let url = URL(string: base!) else { throw UsageError("bad --url") }
        return APIClient(base: url, apiKey: key, onBehalfOf: uid)
    }

    /// What followed the message `id` (`perch send --wait` over the API): the newer messages of
    /// its conversation, of its thread and of the bots' direct conversations with the sender, then
    /// what was done to it (its reactions, an edit, a pin, a deletion). `--local` reads the event
    /// log instead, and reports every kind of event.
    static func effects(of id: Int, _ sent: [String: Any], _ api: APIClient, _ parsed: ParsedArguments) async throws
        -> [String]
    {
        var lines: [String] = []
        // A read the sender may no longer make (a bot removed them from the group) says nothing.
        let later = try? await api.call("GET", try conversationPath(parsed) + "?id=\(id)&affix=append&limit=100")
        for message in later as? [[String: Any]] ?? [] { lines.append(APIClient.describe(message)) }
        let root = sent["parentMessageId"] as? Int ?? 0
        let thread = try? await api.call("GET", "/v3/messages/\(root == 0 ? id : root)/thread?limit=100")
        for message in thread as? [[String: Any]] ?? [] where (message["id"] as? Int ?? 0) > id {
            lines.append(APIClient.describe(message))
        }
        // The bots' direct messages to the sender (message ids grow across conversations).
        var people: [[String: Any]] = []
        while true {
            let after = (people.last?["uid"] as? String).map { "&after=" + $0 } ?? ""
            let page = try await api.call("GET", "/v3/users?limit=100" + after) as? [[String: Any]] ?? []
            people += page
            if page.count < 100 { break }
        }
        let sender = sent["sender"] as? String ?? ""
        for bot in people where bot["role"] as? String == "bot" {
            guard let uid = bot["uid"] as? String, uid != sender, "\(sent["receiverUid"] ?? "")" != uid else {
                continue
            }
            let direct = try await api.call("GET", "/v3/users/\(uid)/messages?id=\(id)&affix=append&limit=100")
            for message in direct as? [[String: Any]] ?? [] { lines.append(APIClient.describe(message)) }
        }
        guard let now = try? await api.call("GET", "/v3/messages/\(id)") as? [String: Any] else { return lines }
        for reaction in now["reactions"] as? [[String: Any]] ?? [] {
            lines.append("#\(id) \(reaction["reaction"] ?? "?") ×\(reaction["count"] ?? "?")")
        }
        if let by = now["editedBy"] as? String, !by.isEmpty {
            lines.append("#\(id) edited by \(by): \(now["text"] as? String ?? "")")
        }
        if let by = now["pinnedBy"] as? String, !by.isEmpty { lines.append("#\(id) pinned by \(by)") }
        if let by = now["deletedBy"] as? String, !by.isEmpty { lines.append("#\(id) deleted by \(by)") }
        return lines
    }

    /// A group's members and their scopes, every page, as the caller sees them.
    static func members(of guid: String, _ api: APIClient) async throws -> [String: String] {
        var members: [String: String] = [:]
        var after = ""
        while true {
            let page =
                try await api.call("GET", "/v3/groups/\(guid)/members?limit=1000" + after) as? [[String: Any]] ?? []
            for member in page {
                if let uid = member["uid"] as? String { members[uid] = member["scope"] as? String ?? "" }
            }
            guard page.count == 1000, let last = page.last?["uid"] as? String else { return members }
            after = "&after=" + last
        }
    }

    /// The lines for what changed in a group's members between two reads.
    static func memberChanges(_ before: [String: String], _ after: [String: String], in guid: String) -> [String] {
        var lines: [String] = []
        for (uid, scope) in after.sorted(by: { $0.key < $1.key }) {
            if let was = before[uid] {
                if was != scope { lines.append("\(uid) is \(scope) in \(guid) (was \(was))") }
            } else {
                lines.append("\(uid) joined \(guid)")
            }
        }
        for uid in before.keys.sorted() where after[uid] == nil { lines.append("\(uid) is no longer in \(guid)") }
        return lines
    }

    static func conversationPath(_ parsed: ParsedArguments) throws -> String {
        if let guid = parsed.options["group"] { return "/v3/groups/\(guid)/messages" }
        if let uid = parsed.options["to"] { return "/v3/users/\(uid)/messages" }
        throw UsageError("give --group GUID or --to UID")
    }

    static func run(_ command: String, _ arguments: [String]) async -> Int32 {
        var exitCode: Int32 = 0
        guard
            let parsed = ParsedArguments.forCommand(
                arguments,
                valued: ["config", "as", "group", "to", "thread", "quote", "url", "limit", "wait", "page", "bot"],
                flags: command == "tail" ? ["notifications"] : [],
                positional: command == "send" ? 1 : command == "plugin" ? 2 : 0,
                exitCode: &exitCode)
        else { return exitCode }
        do {
            let api = try client(parsed)
            switch command {
            case "send":
                guard let text = parsed.positional.first else { throw UsageError("the message text is missing") }
                var body: [String: Any] = ["data": ["text": text]]
                if let guid = parsed.options["group"] {
                    body["receiver"] = guid
                    body["receiverType"] = "group"
                } else if let uid = parsed.options["to"] {
                    body["receiver"] = uid
                    body["receiverType"] = "user"
                } else {
                    throw UsageError("give --group GUID or --to UID")
                }
                if let quote = parsed.options["quote"].flatMap(Int.init) { body["quotedMessageId"] = quote }
                let path = parsed.options["thread"].map { "/v3/messages/\($0)/thread" } ?? "/v3/messages"
                let wait = Double(parsed.options["wait"] ?? "0") ?? 0
                let group = parsed.options["group"]
                var membersBefore: [String: String]?
                if wait > 0, let group { membersBefore = try await members(of: group, api) }
                let sent = try await api.call("POST", path, body: body) as? [String: Any] ?? [:]
                print("sent " + APIClient.describe(sent))
                if wait > 0, let id = sent["id"] as? Int {
                    try await Task.sleep(for: .milliseconds(Int(wait * 1000)))
                    for line in try await effects(of: id, sent, api, parsed) { print("  " + line) }
                    if let group, let membersBefore {
                        // The sender removed: the list is no longer theirs to read.
                        let after = (try? await members(of: group, api)) ?? [:]
                        for line in memberChanges(membersBefore, after, in: group) { print("  " + line) }
                    }
                }
            case "pins":
                // Every page: an operator may raise limits.pinsPerConversation past one.
                let pinned = try await api.everyPage(try conversationPath(parsed) + "?pinned=true&limit=100") {
                    ($0["next"] as? [String: Any])?["id"].map { "&id=\($0)&affix=append" }
                }
                // An empty list says so: no output read as a command that did nothing.
                if pinned.isEmpty { print("no pinned messages") }
                for message in pinned { print(APIClient.describe(message)) }
            case "threads":
                try await threads(api, parsed)
            case "plugin":
                guard parsed.positional.count == 2, parsed.positional[0] == "restart" else {
                    throw UsageError("perch plugin restart NAME [--bot BOT]")
                }
                let name = parsed.positional[1].addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? ""
                let bot =
                    parsed.options["bot"].map {
                        "?bot=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
                    } ?? ""
                let answer = try await api.call("POST", "/v3/plugins/\(name)/restart" + bot) as? [String: Any]
                let bots = answer?["restarted"] as? [String] ?? []
                print("restarted \(parsed.positional[1]) of " + bots.joined(separator: ", "))
            default:
                let notifications = parsed.flags.contains("notifications")
                let whose = api.onBehalfOf.isEmpty ? "everyone" : api.onBehalfOf
                print(
                    notifications
                        ? "tailing notifications of \(whose); Ctrl-C stops"
                        : "tailing events for \(whose); Ctrl-C stops")
                try api.follow(
                    notifications ? "/v3/notifications/stream" : "/v3/events",
                    say: { FileHandle.standardError.write(Data("perch tail: \($0)\n".utf8)) }
                ) { name, object in print(APIClient.describe(event: name, object)) }
            }
            return 0
        } catch let error as UsageError {
            FileHandle.standardError.write(Data("perch: \(error)\n".utf8))
            return 64
        } catch {
            FileHandle.standardError.write(Data("perch: \(error)\n".utf8))
            return 1
        }
    }
}

extension ClientCommands {
    /// `perch threads`: the user's followed threads, the one with the newest reply first (the
    /// root's own time for a thread with none), `--limit` a page (30), `--page N`.
    static func threads(_ api: APIClient, _ parsed: ParsedArguments) async throws {
        guard let limit = Int(parsed.options["limit"] ?? "30"), limit > 0 else {
            throw UsageError("--limit takes a number of threads")
        }
        guard let page = Int(parsed.options["page"] ?? "1"), page > 0 else {
            throw UsageError("--page takes 1, 2, ...")
        }
        // The inbox pages by when each row last moved (the user's own subscribing moves it too):
        // read it whole, then order by the last reply.
        let rows = try await api.everyPage("/v3/threads?limit=100") {
            ($0["next"] as? [String: Any])?["cursor"].map { "&cursor=\($0)" }
        }
        if rows.isEmpty {
            print("no threads: \(api.onBehalfOf) follows none")
            return
        }
        func lastActivity(_ thread: [String: Any]) -> Int {
            (thread["lastReply"] as? [String: Any])?["sentAt"] as? Int
                ?? (thread["parentMessage"] as? [String: Any])?["sentAt"] as? Int ?? 0
        }
        let ordered = rows.enumerated().sorted { left, right in
            let (a, b) = (lastActivity(left.element), lastActivity(right.element))
            return a != b ? a > b : left.offset < right.offset
        }.map(\.element)
        let pages = (ordered.count + limit - 1) / limit
        guard page <= pages else { throw UsageError("--page \(page): there are \(pages) page(s) of \(limit)") }
        for thread in ordered.dropFirst((page - 1) * limit).prefix(limit) {
            let parent = thread["parentMessage"] as? [String: Any] ?? [:]
            let count = thread["replyCount"] as? Int ?? 0
            print("\(APIClient.describe(parent))  (\(count) \(count == 1 ? "reply" : "replies"))")
        }
        if pages > 1 {
            print("page \(page) of \(pages)" + (page < pages ? "; --page \(page + 1) for more" : ""))
        }
    }
}

extension APIClient {
    /// Every row of a paged list: `path`, then again with what `next` makes of each page's `meta`
    /// (nil: the last page), up to 100 pages.
    func everyPage(_ path: String, next: ([String: Any]) -> String?) async throws -> [[String: Any]] {
        var rows: [[String: Any]] = []
        var suffix = ""
        for _ in 0..<100 {
            let (page, meta) = try await list(path + suffix)
            rows += page
            guard meta["hasMore"] as? Bool == true, let more = next(meta) else { break }
            suffix = more
        }
        return rows
    }
}

/// Reads config.yaml for the client's defaults (the listen address).
enum PerchConfigLoader {
    static func load(_ path: String) -> PerchConfiguration? {
        ConfigurationLoader(swiftPlugins: Perch.builtInPlugins).load(configPath: path).config
    }
}
