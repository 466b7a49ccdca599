/// A setting a reload does not apply: its key, and what it says in the log.
public struct RestartSetting: Sendable, Equatable, CustomStringConvertible {
    /// The setting's key (`server.listen`).
    public var key: String
    /// The key with the two values (`server.listen (127.0.0.1:8080 → 127.0.0.1:9090)`), or the key
    /// alone for a secret or a table.
    public var description: String
}

extension PerchConfiguration {
    /// The settings of this configuration that differ from `running`'s and that a reload does not
    /// apply, each with the two values (but a secret's or a table's): the HTTP server, the store
    /// and the chat service's rules are made once, when the host starts. A reload applies the
    /// seed, the bots, what the bots and the web chat read (`strings`, `ui.*`, `limits.botHops`),
    /// and says which of the others wait for the next start (docs/configuration.md, "What a
    /// reload applies").
    public func settingsNeedingRestart(comparedWith running: PerchConfiguration) -> [RestartSetting] {
        var changed: [RestartSetting] = []
        func compare<Value: Equatable>(_ key: String, _ old: Value, _ new: Value, shown: Bool = true) {
            guard old != new else { return }
            changed.append(RestartSetting(key: key, description: shown ? "\(key) (\(old) → \(new))" : key))
        }
        let (old, new) = (running.server, server)
        compare("server.listen", old.listen, new.listen)
        compare("server.dataDirectory", old.dataDirectory, new.dataDirectory)
        compare("server.apiKey", old.apiKey, new.apiKey, shown: false)
        compare("server.maxBodyBytes", old.maxBodyBytes, new.maxBodyBytes)
        compare("server.maxUploadBytes", old.maxUploadBytes, new.maxUploadBytes)
        compare("server.devSignIn", old.devSignIn, new.devSignIn)
        compare("server.uploadTypes", old.uploadTypes, new.uploadTypes, shown: false)
        compare("server.webDirectory", old.webDirectory, new.webDirectory)
        compare("server.maxStreams", old.maxStreams, new.maxStreams)
        compare("server.idleTimeoutSeconds", old.idleTimeoutSeconds, new.idleTimeoutSeconds)
        compare("server.heartbeatSeconds", old.heartbeatSeconds, new.heartbeatSeconds)
        compare("server.hostNames", old.hostNames, new.hostNames)
        compare("server.headerTimeoutSeconds", old.headerTimeoutSeconds, new.headerTimeoutSeconds)
        compare("server.bodyTimeoutSeconds", old.bodyTimeoutSeconds, new.bodyTimeoutSeconds)
        compare("server.maxConnectionsPerClient", old.maxConnectionsPerClient, new.maxConnectionsPerClient)
        compare("backend", running.backend, backend)
        compare("matrix.homeserver", running.matrix.homeserver, matrix.homeserver)
        compare("matrix.accounts", running.matrix.accounts, matrix.accounts, shown: false)
        compare("matrix.rooms", running.matrix.rooms, matrix.rooms, shown: false)
        compare("matrix.followDigestSeconds", running.matrix.followDigestSeconds, matrix.followDigestSeconds)
        compare("matrix.syncTimeoutSeconds", running.matrix.syncTimeoutSeconds, matrix.syncTimeoutSeconds)
        compare("storage.synchronous", running.storage.synchronous, storage.synchronous)
        compare("storage.eventRetentionDays", running.storage.eventRetentionDays, storage.eventRetentionDays)
        compare("features.pin", running.features.pin, features.pin)
        compare("features.save", running.features.save, features.save)
        compare("limits.pinsPerConversation", running.limits.pinsPerConversation, limits.pinsPerConversation)
        compare("limits.savesPerUser", running.limits.savesPerUser, limits.savesPerUser)
        compare("limits.messageTextBytes", running.limits.messageTextBytes, limits.messageTextBytes)
        compare("limits.messagesPerMinute", running.limits.messagesPerMinute, limits.messagesPerMinute)
        compare("notifications.group", running.notifications.group, notifications.group, shown: false)
        compare("notifications.oneOnOne", running.notifications.oneOnOne, notifications.oneOnOne, shown: false)
        compare("notifications.webhooks", running.notifications.webhooks, notifications.webhooks, shown: false)
        // The bots are read from the new one at once; the file watcher watches the old one.
        compare("botsDirectory", running.botsDirectory, botsDirectory)
        return changed
    }
}
