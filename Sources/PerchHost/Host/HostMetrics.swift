import Foundation
import PerchLock

/// Counters and gauges for `/metrics`, by name and labels, in Prometheus' text format.
///
/// A hot path asks once for a ``Counter`` (its name and labels rendered then) and adds to it with
/// one uncontended lock; `increment` by name and labels renders and looks up the key each time
/// (for rare events). Every family the host exposes is described in ``families``, so the text
/// carries its `# HELP` and `# TYPE`; a histogram's series come per label set, buckets in
/// increasing `le` up to `+Inf`, then `_sum` and `_count`, as the format asks.
public final class HostMetrics: Sendable {
    /// One series: a value behind its own lock.
    public final class Counter: Sendable {
        private let value = Lock<Double>(0)

        public func add(_ amount: Double = 1) { value.withLock { $0 += amount } }
        func set(_ amount: Double) { value.withLock { $0 = amount } }
        var current: Double { value.withLock { $0 } }
    }

    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// What each family is (its type and help text), by family name.
    public static let families: [String: (kind: Kind, help: String)] = [
        "perch_actions_total": (.counter, "Bot actions carried out, by bot and action (send, other)."),
        "perch_bot_loops_cut_total": (.counter, "Bot replies not sent because a chain of bots reached its hop limit."),
        "perch_bot_missed_events_total": (
            .counter, "Events a bot never saw because the retention removed them before it read them."
        ),
        "perch_events_dispatched_total": (.counter, "Events handed to each bot."),
        "perch_events_pruned_total": (.counter, "Live events the retention removed."),
        "perch_handler_errors_total": (.counter, "Bot handlers that failed, by bot."),
        "perch_http_request_duration_seconds": (.histogram, "Time to answer an HTTP request, by route."),
        "perch_http_requests_total": (.counter, "HTTP requests answered, by route and status."),
        "perch_http_connections_refused_total": (
            .counter, "Connections refused before a route saw them, by reason (head, slow, evicted, per_client, busy)."
        ),
        "perch_matrix_errors_total": (
            .counter, "Matrix calls the homeserver refused or did not answer, by account, call and errcode."
        ),
        "perch_matrix_rate_limited_total": (.counter, "Matrix calls answered 429 (M_LIMIT_EXCEEDED), by account."),
        "perch_matrix_relayed_total": (.counter, "Bot actions carried out on the homeserver, by bot and action."),
        "perch_matrix_synced_events_total": (.counter, "Room events the accounts' syncs brought, by account."),
        "perch_matrix_follow_digests_total": (
            .counter, "Direct messages that brought the new replies of followed threads to their followers."
        ),
        "perch_notifications_pruned_total": (.counter, "Notification outbox rows the retention removed."),
        "perch_webhook_posts_total": (
            .counter, "Posts of notifications to webhooks, by webhook and outcome (delivered, failed)."
        ),
        "perch_webhook_dead_letters_total": (
            .counter, "Notifications a webhook gave up on after its last try (dead letters), by webhook."
        ),
        "perch_webhook_backlog": (.gauge, "Outbox rows a webhook has not handled yet, by webhook."),
        "perch_plugin_garbage_lines_total": (.counter, "Lines from an external plugin that were not JSON-RPC."),
        "perch_plugin_output_lines_total": (
            .counter, "Lines an external plugin wrote to be logged (stderr, stdout off the protocol), logged or not."
        ),
        "perch_regex_budget_exceeded_total": (
            .counter, "Messages on which a rule's text_matches ran out of its budget, so the rule did not fire."
        ),
        "perch_plugin_restarts_total": (.counter, "External plugin processes started again after they ended."),
        "perch_plugin_timeouts_total": (.counter, "External plugin calls that ran out of time."),
        "perch_rate_limited_actions_total": (
            .counter, "Bot actions refused by the bot's or the conversation's rate limit."
        ),
        "perch_sse_connections": (.gauge, "Server-Sent Event streams open now."),
        "perch_ws_connections": (.gauge, "WebSockets open now."),
        "perch_build_info": (.gauge, "Always 1; the version of Perch that runs."),
        "perch_start_time_seconds": (.gauge, "When the host started, in seconds since the Unix epoch."),
        "perch_bots": (.gauge, "Bots running now."),
        "perch_database_bytes": (.gauge, "The size of the database's files (the database, its write-ahead log)."),
    ]

    private struct Series {
        let family: String
        /// The labels but `le`, rendered: one histogram's series share it.
        let labels: String
        /// 0 a bucket (or any other series), 1 `_sum`, 2 `_count`.
        let part: Int
        /// A bucket's bound (`+Inf` the largest).
        let bound: Double
        let counter: Counter
    }

    private let series = Lock<[String: Series]>([:])

    public init() {}

    /// The series `name{labels}`, created at zero.
    public func counter(_ name: String, _ labels: [String: String] = [:]) -> Counter {
        let key = Self.key(name, labels)
        return series.withLock { series in
            if let existing = series[key] { return existing.counter }
            let counter = Counter()
            series[key] = Self.entry(name, labels, counter)
            return counter
        }
    }

    /// The series `name{labels}` holding `counter`, placed in its family (a histogram's parts in one).
    private static func entry(_ name: String, _ labels: [String: String], _ counter: Counter) -> Series {
        var family = name
        var part = 0
        for (suffix, rank) in [("_bucket", 0), ("_sum", 1), ("_count", 2)] where name.hasSuffix(suffix) {
            let stem = String(name.dropLast(suffix.count))
            if families[stem]?.kind == .histogram { (family, part) = (stem, rank) }
        }
        var others = labels
        let le = others.removeValue(forKey: "le")
        return Series(
            family: family, labels: key("", others), part: part,
            bound: le.map { $0 == "+Inf" ? .infinity : Double($0) ?? .infinity } ?? 0, counter: counter)
    }

    static func key(_ name: String, _ labels: [String: String]) -> String {
        guard !labels.isEmpty else { return name }
        var key = name
        key.reserveCapacity(name.utf8.count + labels.reduce(2) { $0 + $1.key.utf8.count + $1.value.utf8.count + 4 })
        key += "{"
        for (index, label) in labels.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { key += "," }
            key += label.key
            key += "=\""
            key += escaped(label.value)
            key += "\""
        }
        key += "}"
        return key
    }

    /// A label value as the text format writes it: backslash, double quote and line feed escaped.
    static func escaped(_ value: String) -> String {
        guard value.contains(where: { $0 == "\\" || $0 == "\"" || $0 == "\n" }) else { return value }
        return value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    public func increment(_ name: String, _ labels: [String: String] = [:], by amount: Double = 1) {
        counter(name, labels).add(amount)
    }

    public func set(_ name: String, _ labels: [String: String] = [:], to value: Double) {
        counter(name, labels).set(value)
    }

    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double {
        series.withLock { $0[Self.key(name, labels)] }?.counter.current ?? 0
    }

    /// Every value, in Prometheus text format: each family once, with its help and type.
    public var prometheusText: String {
        let all = series.withLock { series in series.map { ($0.key, $0.value) } }.sorted { a, b in
            let (x, y) = (a.1, b.1)
            if x.family != y.family { return x.family < y.family }
            if x.labels != y.labels { return x.labels < y.labels }
            if x.part != y.part { return x.part < y.part }
            if x.bound != y.bound { return x.bound < y.bound }
            return a.0 < b.0
        }
        var lines: [String] = []
        var family: String?
        for (key, series) in all {
            if series.family != family, let described = Self.families[series.family] {
                lines.append("# HELP \(series.family) \(described.help)")
                lines.append("# TYPE \(series.family) \(described.kind.rawValue)")
            }
            family = series.family
            lines.append("\(key) \(series.counter.current)")
        }
        return lines.joined(separator: "\n")
    }
}

/// The version of Perch (`perch version`, `perch_build_info`).
public enum PerchVersion {
    public static let current = "0.1.0"
}
