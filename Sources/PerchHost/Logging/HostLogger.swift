import Foundation
import PerchLock

/// The host's log: one line per record, as text (`2026-11-29T12:00:00Z info bot=helper message`) or
/// JSON (`--log-format json`). Secrets never reach it: nothing logs the API key or request bodies.
public final class HostLogger: Sendable {
    public enum Level: String, Sendable, Comparable {
        case debug, info, warning, error

        var rank: Int {
            switch self {
            case .debug: return 0
            case .info: return 1
            case .warning: return 2
            case .error: return 3
            }
        }

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rank < rhs.rank }
    }

    public enum Format: String, Sendable {
        case text, json
    }

    let format: Format
    let minimum: Level
    let sink: @Sendable (String) -> Void
    let fields: [String: String]
    /// Records kept for tests (the last 1,000), when asked for.
    let memory: MemoryLog?

    public init(
        format: Format = .text, minimum: Level = .info, keepInMemory: Bool = false,
        sink: @escaping @Sendable (String) -> Void = { line in FileHandle.standardError.write(Data((line + "\n").utf8))
        }
    ) {
        self.format = format
        self.minimum = minimum
        self.sink = sink
        self.fields = [:]
        self.memory = keepInMemory ? MemoryLog() : nil
    }

    private init(parent: HostLogger, fields: [String: String]) {
        format = parent.format
        minimum = parent.minimum
        sink = parent.sink
        memory = parent.memory
        self.fields = fields
    }

    /// A logger that adds `fields` to every record.
    public func with(_ extra: [String: String]) -> HostLogger {
        HostLogger(parent: self, fields: fields.merging(extra) { _, new in new })
    }

    public func log(_ level: Level, _ message: String, _ extra: [String: String] = [:]) {
        guard level >= minimum else { return }
        let all = fields.merging(extra) { _, new in new }
        let time = ISO8601DateFormatter().string(from: Date())
        let line: String
        switch format {
        case .text:
            let pairs = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            line = "\(time) \(level.rawValue) \(pairs.isEmpty ? "" : pairs + " ")\(message)"
        case .json:
            var object: [String: String] = all
            object["time"] = time
            object["level"] = level.rawValue
            object["message"] = message
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            line = String(decoding: data, as: UTF8.self)
        }
        memory?.append(line)
        sink(line)
    }

    public func debug(_ message: String, _ extra: [String: String] = [:]) { log(.debug, message, extra) }
    public func info(_ message: String, _ extra: [String: String] = [:]) { log(.info, message, extra) }
    public func warning(_ message: String, _ extra: [String: String] = [:]) { log(.warning, message, extra) }
    public func error(_ message: String, _ extra: [String: String] = [:]) { log(.error, message, extra) }

    /// The records kept in memory (tests).
    public var records: [String] { memory?.lines ?? [] }
}

/// The last 1,000 records, shared by a logger and the loggers made from it.
final class MemoryLog: Sendable {
    private let storage = Lock<[String]>([])

    func append(_ line: String) {
        storage.withLock { records in
            records.append(line)
            if records.count > 1000 { records.removeFirst(records.count - 1000) }
        }
    }

    var lines: [String] { storage.withLock { $0 } }
}
