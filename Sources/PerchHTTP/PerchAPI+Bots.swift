import PerchChat
import PerchService

/// The bots over HTTP, with the app's API key only: a bot's key-value store, for the services its
/// `url` plugins post to (they cannot call the host back inside a post, as `exec` plugins do; the
/// same store, values and rules as a plugin's `storage`, docs/plugins.md, "Storage"), and a
/// plugin's restart, for an operator (`perch plugin restart`).
///
/// `?namespace=NAME` on each storage route reaches the bot's store under that name (a plugin's
/// own), as `storage.namespace(NAME)` does.
extension PerchAPI {
    static func botStorageRoutes() -> [Route] {
        [
            route("GET", "v3/bots/{uid}/storage", name: "bots.storage.list", appOnly: true) { api, request in
                let store = try api.botStore(request)
                let values = try await api.service.storedValues(in: store, prefix: request.query("prefix") ?? "")
                var writer = JSONWriter()
                writer.raw("{\"data\":[")
                for (index, entry) in values.enumerated() {
                    if index > 0 { writer.raw(",") }
                    writer.raw("{\"key\":")
                    writer.string(entry.key)
                    writer.raw(",\"value\":")
                    writer.value(entry.value)
                    writer.raw(",\"expiresAt\":")
                    writer.raw(entry.expiresAt > 0 ? String(entry.expiresAt) : "null")
                    writer.raw("}")
                }
                writer.raw("]}")
                return .json(200, writer.output)
            },
            route("GET", "v3/bots/{uid}/storage/{key}", name: "bots.storage.get", appOnly: true) { api, request in
                let store = try api.botStore(request)
                let key = request.parameter("key")
                return .json(200, Self.entry(key, try await api.service.storedValue(key, in: store)))
            },
            route("PUT", "v3/bots/{uid}/storage/{key}", name: "bots.storage.set", appOnly: true) { api, request in
                let store = try api.botStore(request)
                let key = request.parameter("key")
                var body = try request.body()
                guard body.object["value"] != nil else { throw ChatError.badRequest("value", "is required") }
                let value = body.json("value")
                let expiresIn = try body.int("expiresIn")
                try body.finish()
                if let expiresIn, expiresIn <= 0 { throw ChatError.badRequest("expiresIn", "must be positive") }
                try await api.service.setStoredValue(value, for: key, in: store, expiresIn: expiresIn)
                return .json(200, Self.entry(key, value))
            },
            route("DELETE", "v3/bots/{uid}/storage/{key}", name: "bots.storage.delete", appOnly: true) {
                api, request in
                let store = try api.botStore(request)
                try await api.service.setStoredValue(nil, for: request.parameter("key"), in: store)
                return .json(200, APIJSON.data(#"{"success":true}"#))
            },
            route("POST", "v3/bots/{uid}/storage/{key}/increment", name: "bots.storage.increment", appOnly: true) {
                api, request in
                let store = try api.botStore(request)
                let key = request.parameter("key")
                var body = try request.body()
                let amount = try body.int("by") ?? 1
                try body.finish()
                let value = try await api.service.incrementStoredValue(key, in: store, by: amount)
                return .json(200, Self.entry(key, .number(Double(value))))
            },
            route(
                "POST", "v3/bots/{uid}/storage/{key}/compare-and-set", name: "bots.storage.compareAndSet",
                appOnly: true
            ) { api, request in
                let store = try api.botStore(request)
                var body = try request.body()
                let expected = body.json("expected")
                let new = body.json("new")
                try body.finish()
                let set = try await api.service.compareAndSetStoredValue(
                    request.parameter("key"), in: store, expected: expected, new: new)
                return .json(200, APIJSON.data(set ? #"{"set":true}"# : #"{"set":false}"#))
            },
        ]
    }

    /// `POST /v3/plugins/{name}/restart[?bot=NAME]` (`perch plugin restart`): stops and starts
    /// again a plugin of every running bot that has it, or of one. App only.
    static func pluginRoutes() -> [Route] {
        [
            route("POST", "v3/plugins/{name}/restart", name: "plugins.restart", appOnly: true) { api, request in
                let name = request.parameter("name")
                let bots = await api.host?.restartPlugin(name, bot: request.query("bot")) ?? []
                guard !bots.isEmpty else { throw ChatError(.pluginNotFound, ["name": .string(name)]) }
                var writer = JSONWriter()
                writer.raw("{\"data\":{\"restarted\":")
                writer.value(.array(bots.map(JSONValue.string)))
                writer.raw("}}")
                return .json(200, writer.output)
            }
        ]
    }

    /// `{"data": {"key", "value"}}`, the value null when absent.
    static func entry(_ key: String, _ value: JSONValue?) -> String {
        var writer = JSONWriter()
        writer.raw("{\"data\":{\"key\":")
        writer.string(key)
        writer.raw(",\"value\":")
        writer.value(value ?? .null)
        writer.raw("}}")
        return writer.output
    }

    /// The store the request names: the running bot whose user is `{uid}`, under `?namespace=`.
    /// - Throws: `ERR_BOT_NOT_FOUND` when no running bot has that uid; `ERR_BAD_REQUEST` for a
    ///   namespace that is empty or has a `/`.
    func botStore(_ request: Request) throws(ChatError) -> String {
        let uid = request.parameter("uid")
        guard let name = host?.botName(uid: uid) else { throw ChatError.botNotFound(uid) }
        guard let namespace = request.query("namespace") else { return name }
        guard !namespace.isEmpty, !namespace.contains("/") else {
            throw ChatError.badRequest("namespace", "a namespace is a name without '/'")
        }
        return name + "/" + namespace
    }
}
