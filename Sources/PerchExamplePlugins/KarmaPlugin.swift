import PerchChat
import PerchHost
import PerchLock

/// An example Swift plugin: `thing++` gives `thing` a point, kept in the bot's key-value store,
/// and it answers with the new score. It also counts, per thread, the subscription changes the
/// host's event bus reports.
///
/// ```yaml
/// plugins:
///   - name: karma
///     config: { unit: points }
/// rules:
///   - on: message
///     when: { text_matches: "^(?<thing>\\w+)\\+\\+$" }
///     do: [{ plugin: karma }]
/// ```
public struct KarmaPlugin: BotPlugin {
    public static let name = "karma"

    public struct Configuration: Decodable, Sendable {
        /// `unit` (required): what a point is called.
        public var unit: String
        /// `maximum` (default 1000): the highest score.
        public var maximum: Int?
    }

    let configuration: Configuration

    public init(configuration: Configuration) throws {
        guard !configuration.unit.isEmpty else { throw KarmaError.emptyUnit }
        self.configuration = configuration
    }

    enum KarmaError: Error { case emptyUnit }

    public func handle(_ context: BotContext) async throws {
        guard let thing = context.captures["thing"] else { return }
        let score = min(Int(try await context.storage.value(for: thing) ?? "0")! + 1, configuration.maximum ?? 1000)
        try await context.storage.set(String(score), for: thing)
        try await context.reply("\(thing) has \(score) \(configuration.unit)")
    }

    public func onThreadSubscriptionChanged(parentMessageId: Int64, uid: String, isSubscribed: Bool) async {
        KarmaPlugin.busLog.append("\(parentMessageId):\(uid):\(isSubscribed)")
    }

    /// What the bus delivered (the example test reads it).
    public static let busLog = BusLog()
}

/// A thread-safe list of strings.
public final class BusLog: Sendable {
    private let storage = Lock<[String]>([])
    public init() {}
    public func append(_ entry: String) { storage.withLock { $0.append(entry) } }
    public var entries: [String] { storage.withLock { $0 } }
}
