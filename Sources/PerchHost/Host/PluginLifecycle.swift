import PerchLock

/// Starts and stops the bots' plugins (``BotPlugin/start(_:)``, ``BotPlugin/stop()``): one at a
/// time, in order, each within ``timeLimit``. A plugin's failure is logged and counted
/// (`perch_plugin_lifecycle_failures_total{plugin, hook}`); it never stops the others.
struct PluginLifecycle {
    /// One plugin of one bot, where the host starts or stops it.
    struct Slot: Sendable {
        var bot: String
        var name: String
        var plugin: any BotPlugin
    }

    static let timeLimit: Duration = .seconds(10)

    let logger: HostLogger
    let metrics: HostMetrics

    /// Starts each slot in order with its environment.
    /// - Returns: the slots that did not start (threw, or passed the time limit): the host drops
    ///   them until the next reload.
    func start(
        _ slots: [(Slot, PluginEnvironment)], consequence: String = "it hears nothing until the next reload"
    ) async -> [Slot] {
        var failed: [Slot] = []
        for (slot, environment) in slots {
            let plugin = slot.plugin
            if let problem = await Self.withinLimit(body: { try await plugin.start(environment) }) {
                metrics.increment("perch_plugin_lifecycle_failures_total", ["plugin": slot.name, "hook": "start"])
                logger.with(["bot": slot.bot]).error(
                    "plugin \(slot.name) did not start: \(problem); \(consequence)")
                failed.append(slot)
            }
        }
        return failed
    }

    /// Stops each slot, in the order given (the host gives the reverse of the start order).
    func stop(_ slots: [Slot]) async {
        for slot in slots {
            let plugin = slot.plugin
            if let problem = await Self.withinLimit(body: { await plugin.stop() }) {
                metrics.increment("perch_plugin_lifecycle_failures_total", ["plugin": slot.name, "hook": "stop"])
                logger.with(["bot": slot.bot]).warning("plugin \(slot.name) did not stop: \(problem)")
            }
        }
    }

    /// Runs `body` for at most `limit`: nil when it ended in time, else why not (what it threw, or
    /// the time passed, when it is cancelled and left to end on its own).
    static func withinLimit(
        _ limit: Duration = timeLimit, body: @escaping @Sendable () async throws -> Void
    ) async -> String? {
        let outcome = Lock<CheckedContinuation<String?, Never>?>(nil)
        let tasks = Lock<[Task<Void, Never>]>([])
        let problem = await withCheckedContinuation { continuation in
            // Stored before either task runs: the first to end takes it.
            outcome.withLock { $0 = continuation }
            let work = Task {
                let problem: String?
                do {
                    try await body()
                    problem = nil
                } catch {
                    problem = "\(error)"
                }
                outcome.withLock { $0.take() }?.resume(returning: problem)
            }
            let timer = Task {
                try? await Task.sleep(for: limit)
                outcome.withLock { $0.take() }?.resume(returning: "it took longer than \(limit)")
            }
            tasks.withLock { $0 = [work, timer] }
        }
        for task in tasks.withLock({ $0 }) { task.cancel() }
        return problem
    }
}
