import Foundation
import PerchChat
import PerchYAML

/// The checks on `config.yaml` that decoding cannot make: ranges, versions, seed references.
struct ConfigValidator {
    let config: PerchConfiguration
    let locations: LocationIndex
    /// What decoding refused: nothing more is said about it.
    let refused: RefusedPaths
    var findings: [Finding] = []

    init(config: PerchConfiguration, locations: LocationIndex, refused: RefusedPaths) {
        self.config = config
        self.locations = locations
        self.refused = refused
    }

    mutating func error(_ path: String, _ message: String, severity: Finding.Severity = .error) {
        guard !refused.covers(path) else { return }
        findings.append(
            Finding(location: locations.location(of: path), severity: severity, path: path, message: message))
    }

    mutating func range(_ path: String, _ value: Int, _ bounds: ClosedRange<Int>) {
        if !bounds.contains(value) {
            error(path, "\(value) is out of range; expected \(bounds.lowerBound) to \(bounds.upperBound)")
        }
    }

    consuming func validate() -> [Finding] {
        let supported = PerchConfiguration.supportedVersion
        if config.version > supported {
            error(
                "version",
                "configuration version \(config.version) is newer than this Perch reads (at most \(supported)); "
                    + "upgrade Perch or write version: \(supported)")
        } else if config.version < 1 && locations.contains("version") {
            error("version", "configuration version \(config.version) does not exist; write version: \(supported)")
        }
        if config.server.listenAddress == nil {
            error("server.listen", "expected host:port, found '\(config.server.listen)'")
        }
        if config.server.devSignIn, let address = config.server.listenAddress, !Self.isLoopback(address.host) {
            error(
                "server.devSignIn",
                "lets anyone who reaches \(config.server.listen) act as any seeded person without a token; "
                    + "keep it for development on a loopback address (127.0.0.1)", severity: .warning)
        }
        if config.server.dataDirectory.isEmpty { error("server.dataDirectory", "must not be empty") }
        if let key = config.server.apiKey, !key.isEmpty, key.count < 16 {
            error("server.apiKey", "an API key needs at least 16 characters")
        }
        range("server.maxBodyBytes", config.server.maxBodyBytes, 1_024...(64 << 20))
        for (index, type) in config.server.uploadTypes.enumerated() {
            let parts = type.split(separator: "/")
            if parts.count != 2 || parts.contains(where: { $0.isEmpty || $0.contains(where: \.isWhitespace) }) {
                error("server.uploadTypes[\(index)]", "'\(type)' is not a MIME type like image/png")
            }
        }
        range("server.maxUploadBytes", config.server.maxUploadBytes, 1_024...(1 << 30))
        range("server.maxStreams", config.server.maxStreams, 1...100_000)
        range("server.idleTimeoutSeconds", config.server.idleTimeoutSeconds, 1...86_400)
        range("server.heartbeatSeconds", config.server.heartbeatSeconds, 1...3_600)
        range("server.headerTimeoutSeconds", config.server.headerTimeoutSeconds, 1...600)
        range("server.bodyTimeoutSeconds", config.server.bodyTimeoutSeconds, 1...3_600)
        range("server.maxConnectionsPerClient", config.server.maxConnectionsPerClient, 1...1_000_000)
        range("storage.eventRetentionDays", config.storage.eventRetentionDays, 0...3_650)
        range("limits.pinsPerConversation", config.limits.pinsPerConversation, 1...10_000)
        range("limits.savesPerUser", config.limits.savesPerUser, 1...10_000)
        range("limits.messageTextBytes", config.limits.messageTextBytes, 1...(1 << 20))
        range("limits.botHops", config.limits.botHops, 0...20)
        range("limits.messagesPerMinute", config.limits.messagesPerMinute, 0...100_000)
        validateStrings()
        validateWebhooks()
        let people = Set(config.seed.users.map(\.uid))
        for (index, uid) in config.admins.enumerated()
        where config.backend == .embedded && !people.contains(uid) && !refused.covers("seed") {
            error("admins[\(index)]", "'\(uid)' is not a person of seed.users", severity: .warning)
        }
        if config.backend == .embedded { validateSeed() }
        validateMatrix()
        return findings
    }

    /// `notifications.webhooks`: a URL to post to, a secret long enough to be one, names apart.
    mutating func validateWebhooks() {
        var names: [String: Int] = [:]
        for (index, webhook) in config.notifications.webhooks.enumerated() {
            let path = "notifications.webhooks[\(index)]"
            if let url = URL(string: webhook.url), let scheme = url.scheme?.lowercased(),
                ["http", "https"].contains(scheme),
                url.host?.isEmpty == false
            {
                if let first = names[webhook.name] {
                    error(
                        path + ".name",
                        "'\(webhook.name)' names notifications.webhooks[\(first)] too; give each webhook a name of its own"
                    )
                }
                names[webhook.name] = names[webhook.name] ?? index
            } else {
                error(path + ".url", "'\(webhook.url)' is not an http or https URL")
            }
            if webhook.secret.utf8.count < 16 {
                error(path + ".secret", BotValidator.shortSecret("a webhook's secret"))
            }
            if webhook.events.isEmpty { error(path + ".events", "lists no reason: the webhook would get nothing") }
            range(path + ".maxAttempts", webhook.maxAttempts, 1...1_000)
            range(path + ".maxBackoffSeconds", webhook.maxBackoffSeconds, 1...3_600)
            range(path + ".timeoutSeconds", webhook.timeoutSeconds, 1...300)
        }
    }

    /// Whether `host` (of `server.listen`) is reachable from this machine only.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return bare == "localhost" || bare == "::1" || bare.hasPrefix("127.")
    }

    mutating func validateStrings() {
        for key in config.strings.written.sorted() where StringTable.defaults[key] == nil {
            if let close = suggestion(for: key, among: StringTable.defaults.keys) {
                error("strings.\(key)", "'\(key)' is not one of the built-in keys; did you mean '\(close)'?")
            }
        }
    }

    mutating func validateSeed() {
        var uids: [String: Int] = [:]
        for (index, user) in config.seed.users.enumerated() {
            let path = "seed.users[\(index)]"
            if !User.isValidUID(user.uid) {
                error(path + ".uid", "'\(user.uid)' is not a valid uid (1–100 of A–Z, a–z, 0–9, _, -)")
            } else if user.uid == User.system {
                error(path + ".uid", "'app_system' is reserved for system actions")
            } else if let first = uids[user.uid] {
                error(path + ".uid", "user '\(user.uid)' is already defined at seed.users[\(first)]")
            } else {
                uids[user.uid] = index
            }
        }
        var guids: [String: Int] = [:]
        for (index, group) in config.seed.groups.enumerated() {
            let path = "seed.groups[\(index)]"
            if !User.isValidUID(group.guid) {
                error(path + ".guid", "'\(group.guid)' is not a valid guid (1–100 of A–Z, a–z, 0–9, _, -)")
            } else if let first = guids[group.guid] {
                error(path + ".guid", "group '\(group.guid)' is already defined at seed.groups[\(first)]")
            } else {
                guids[group.guid] = index
            }
            if uids[group.owner] == nil { unknownUser(path + ".owner", group.owner, known: uids.keys) }
            var seen: Set<String> = [group.owner]
            for (position, member) in (group.members ?? []).enumerated() {
                let memberPath = path + ".members[\(position)]"
                if uids[member.uid] == nil {
                    unknownUser(memberPath + ".uid", member.uid, known: uids.keys)
                } else if !seen.insert(member.uid).inserted {
                    error(
                        memberPath + ".uid",
                        "'\(member.uid)' is listed twice in group '\(group.guid)' (the owner counts)")
                }
                if member.scope == .owner {
                    error(memberPath + ".scope", "a group has one owner, set with 'owner'; use admin here")
                }
            }
        }
    }

    mutating func unknownUser(_ path: String, _ uid: String, known: some Sequence<String>) {
        var message = "unknown user '\(uid)': not in seed.users"
        if let close = suggestion(for: uid, among: known) { message += "; did you mean '\(close)'?" }
        error(path, message)
    }
}
