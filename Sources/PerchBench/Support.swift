import Foundation
import PerchChat
import PerchSQLite
import PerchService

/// A service on a fresh database in a temporary directory.
struct BenchChat {
    let directory: String
    let store: SQLiteChatStore
    let service: ChatService

    init(settings: ChatSettings = ChatSettings(), clock: any ChatClock = SystemClock()) throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("perch-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        store = try SQLiteChatStore(path: directory + "/perch.sqlite")
        service = ChatService(store: store, clock: clock, settings: settings)
    }

    func close() async {
        await store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Nanoseconds of `body`, as the median and 99th percentile of `runs` runs after `warmup`.
func measure(runs: Int, warmup: Int = 50, _ body: () async throws -> Void) async rethrows -> (
    median: Double, p99: Double
) {
    for _ in 0..<warmup { try await body() }
    var samples: [Double] = []
    samples.reserveCapacity(runs)
    for _ in 0..<runs {
        let start = DispatchTime.now().uptimeNanoseconds
        try await body()
        samples.append(Double(DispatchTime.now().uptimeNanoseconds - start))
    }
    samples.sort()
    return (samples[samples.count / 2], samples[min(samples.count - 1, samples.count * 99 / 100)])
}

/// A whole number from the environment variable `name`, or `fallback` when it is unset or not one.
func environmentInt(_ name: String, default fallback: Int) -> Int {
    Int(ProcessInfo.processInfo.environment[name] ?? "") ?? fallback
}

/// Prints one figure as a JSON line.
func report(_ scenario: String, _ fields: [String: Any]) {
    var object = fields
    object["scenario"] = scenario
    let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    print(String(decoding: data, as: UTF8.self))
}

/// Sends `count` messages with `lanes` concurrent senders (so commits batch).
func fill(
    _ service: ChatService, count: Int, lanes: Int = 64, draft: @escaping @Sendable (Int) -> MessageDraft,
    as sender: String
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<lanes {
            group.addTask {
                var index = lane
                while index < count {
                    _ = try await service.send(draft(index), as: sender)
                    index += lanes
                }
            }
        }
        try await group.waitForAll()
    }
}
