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
    }

    func call(_ method: String, _ path: String, body: [String: Any]? = nil) async throws -> Any {
        var request = URLRequest(url: URL(string: base.absoluteString + path)!)
        request.httpMethod = method
        request.setValue(apiKey, forHTTPHeaderField: "apikey")
        request.setValue(onBehalfOf, forHTTPHeaderField: "onBehalfOf")
        if let body { request.httpBody = try JSONSerialization.data(withJSONObject: body) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let object = try? JSONSerialization.jsonObject(with: data)
        guard let status = (response as? HTTPURLResponse)?.statusCode, status == 200 else {
            let error = ((object as? [String: Any])?["error"] as? [String: Any])
            throw Failure(
                description: "\(error?["code"] as? String ?? "HTTP error"): \(error?["message"] as? String ?? "")")
        }
        return (object as? [String: Any])?["data"] ?? [:]
    }

    /// Reads the Server-Sent Events stream of `GET /v3/events`, calling `line` per event until the
    /// stream ends.
    func tail(_ line: (String, [String: Any]) -> Void) throws {
        guard let host = base.host, let port = base.port else { throw Failure(description: "bad --url") }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr(host == "localhost" ? "127.0.0.1" : host)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw Failure(description: "cannot connect to \(host):\(port)") }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        let request =
            "GET /v3/events HTTP/1.0\r\nHost: \(host)\r\napikey: \(apiKey)\r\nonBehalfOf: \(onBehalfOf)\r\n"
            + "Accept: text/event-stream\r\n\r\n"
        handle.write(Data(request.utf8))
        var buffer = ""
        var name = ""
        while true {
            let data = handle.availableData
            if data.isEmpty { return }
            buffer += String(decoding: data, as: UTF8.self)
            while let newline = buffer.firstIndex(of: "\n") {
                let text = String(buffer[..<newline]).trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
                buffer.removeSubrange(...newline)
                if text.hasPrefix("event: ") { name = String(text.dropFirst(7)) }
                if text.hasPrefix("data: "), name.hasPrefix("on"),
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

    static func describe(_ message: [String: Any]) -> String {
        var parts = ["#\(message["id"] ?? "?")", "\(message["sender"] ?? "?"):"]
        if let parent = message["parentMessageId"] as? Int, parent != 0 { parts.append("[thread #\(parent)]") }
        if let quoted = message["quotedMessageId"] as? Int, quoted != 0 { parts.append("[quoting #\(quoted)]") }
        parts.append(message["text"] as? String ?? "(\(message["type"] ?? "message"))")
        if let pinned = message["pinnedAt"] as? Int, pinned != 0 { parts.append("📌 by \(message["pinnedBy"] ?? "?")") }
        return parts.joined(separator: " ")
    }
}

/// `perch tail`, `perch pins`, `perch threads`, and `perch send` over HTTP.
enum ClientCommands {
    static func client(_ parsed: ParsedArguments) throws -> APIClient {
        guard let uid = parsed.options["as"] else { throw UsageError("--as UID is required") }
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

    static func conversationPath(_ parsed: ParsedArguments) throws -> String {
        if let guid = parsed.options["group"] { return "/v3/groups/\(guid)/messages" }
        if let uid = parsed.options["to"] { return "/v3/users/\(uid)/messages" }
        throw UsageError("give --group GUID or --to UID")
    }

    static func run(_ command: String, _ arguments: [String]) async -> Int32 {
        var exitCode: Int32 = 0
        guard
            let parsed = ParsedArguments.forCommand(
                arguments, valued: ["config", "as", "group", "to", "thread", "quote", "url", "limit", "wait"],
                positional: command == "send" ? 1 : 0, exitCode: &exitCode)
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
                let sent = try await api.call("POST", path, body: body) as? [String: Any] ?? [:]
                print("sent " + APIClient.describe(sent))
                if let seconds = Double(parsed.options["wait"] ?? "0"), seconds > 0, let id = sent["id"] as? Int {
                    // What the bots did meanwhile: newer messages of the conversation, and the message's own state.
                    try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                    let later = try await api.call(
                        "GET", try conversationPath(parsed) + "?id=\(id)&affix=append&limit=100")
                    for message in later as? [[String: Any]] ?? [] { print("  " + APIClient.describe(message)) }
                    if let now = try await api.call("GET", "/v3/messages/\(id)") as? [String: Any] {
                        if let by = now["pinnedBy"] as? String, !by.isEmpty { print("  #\(id) pinned by \(by)") }
                        if let by = now["deletedBy"] as? String, !by.isEmpty { print("  #\(id) deleted by \(by)") }
                    }
                }
            case "pins":
                let messages = try await api.call("GET", try conversationPath(parsed) + "?pinned=true&limit=100")
                for message in messages as? [[String: Any]] ?? [] { print(APIClient.describe(message)) }
            case "threads":
                let threads = try await api.call("GET", "/v3/threads?limit=\(parsed.options["limit"] ?? "30")")
                for thread in threads as? [[String: Any]] ?? [] {
                    let parent = thread["parentMessage"] as? [String: Any] ?? [:]
                    print("\(APIClient.describe(parent))  (\(thread["replyCount"] ?? 0) replies)")
                }
            default:
                print("tailing events for \(api.onBehalfOf); Ctrl-C stops")
                try api.tail { name, object in
                    if let message = object["message"] as? [String: Any] {
                        print("\(name) \(APIClient.describe(message))")
                    } else if let member = object["member"] as? [String: Any] {
                        print(
                            "\(name) \(member["uid"] ?? "?") in \(member["guid"] ?? "?") by \(member["actor"] ?? "?")")
                    } else {
                        print(name)
                    }
                }
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

/// Reads config.yaml for the client's defaults (the listen address).
enum PerchConfigLoader {
    static func load(_ path: String) -> PerchConfiguration? {
        ConfigurationLoader(swiftPlugins: Perch.builtInPlugins).load(configPath: path).config
    }
}
