import Foundation
import PerchChat

/// One of `notifications.webhooks`: a receiver each routed notification is POSTed to, signed,
/// from a durable queue with retries (docs/notifications.md).
public struct NotificationWebhook: Decodable, Sendable, Hashable {
    /// `url` (required): an `http` or `https` URL.
    public var url: String
    /// `secret` (required, 16 characters or more): signs each post (`X-Hub-Signature-256`, the
    /// body's HMAC-SHA256). Write it as `${VAR}`, from the environment.
    public var secret: String
    /// `events` (default all): the reasons that are posted (`mention`, `reply`,
    /// `subscribed_thread`, `quote_on_own_message`, `message`).
    public var events: [NotificationReason]
    /// `name` (default the URL's scheme, host and port): names the webhook in the log and the
    /// metrics, and keeps its place in the queue; two webhooks need two names.
    public var name: String
    /// `maxAttempts` (default 30, 1–1000): tries of one notification before it is a dead letter.
    /// With the backoff (1 s doubling, at most `maxBackoffSeconds`), the default rides out a
    /// receiver that is down for well over an hour.
    public var maxAttempts: Int
    /// `maxBackoffSeconds` (default 300, 1–3600): the longest pause between two tries.
    public var maxBackoffSeconds: Int
    /// `timeoutSeconds` (default 10, 1–300): how long one post may take.
    public var timeoutSeconds: Int

    enum CodingKeys: String, CodingKey {
        case url, secret, events, name, maxAttempts, maxBackoffSeconds, timeoutSeconds
    }

    public init(
        url: String, secret: String, events: [NotificationReason] = NotificationReason.allCases, name: String? = nil,
        maxAttempts: Int = 30, maxBackoffSeconds: Int = 300, timeoutSeconds: Int = 10
    ) {
        self.url = url
        self.secret = secret
        self.events = events
        self.name = name ?? Self.shownURL(url)
        self.maxAttempts = maxAttempts
        self.maxBackoffSeconds = maxBackoffSeconds
        self.timeoutSeconds = timeoutSeconds
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        url = try c.decode(String.self, forKey: .url)
        secret = try c.decode(String.self, forKey: .secret)
        events = try c.decodeIfPresent([NotificationReason].self, forKey: .events) ?? NotificationReason.allCases
        name = try c.decodeIfPresent(String.self, forKey: .name) ?? Self.shownURL(url)
        maxAttempts = try c.decodeIfPresent(Int.self, forKey: .maxAttempts) ?? 30
        maxBackoffSeconds = try c.decodeIfPresent(Int.self, forKey: .maxBackoffSeconds) ?? 300
        timeoutSeconds = try c.decodeIfPresent(Int.self, forKey: .timeoutSeconds) ?? 10
    }

    /// The URL as a log may show it: scheme, host and port (a path or query may hold a token).
    public static func shownURL(_ text: String) -> String {
        guard let url = URL(string: text), let host = url.host else { return text }
        return "\(url.scheme ?? "http")://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }
}
