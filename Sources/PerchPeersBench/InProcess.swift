import Foundation
import PerchChat
import PerchConfig
import PerchHost
import PerchLock
import PerchService
import Synchronization

/// peers-v1 in-process: the bench configuration's two YAML bots on a `BotHost` with the embedded
/// service and its durable SQLite store; the person's messages go in through `ChatService.send`
/// (the host's inbound path: committed, then delivered to each bot's event stream) and replies are
/// observed at the host's outbound tap, after they are committed (and, as a second figure, where
/// they leave the bot, before their commit: the peers' observation point).
final class InProcessInjector: Injector {
    let service: ChatService
    let order: Mutex<[Int64]>

    init(service: ChatService, count: Int) {
        self.service = service
        order = Mutex(Array(repeating: 0, count: count))
    }

    static let room = Receiver.group("room")
    /// Sends in flight at most during the burst (`PERCH_BENCH_WINDOW`, default 1,024).
    static let window = Int(ProcessInfo.processInfo.environment["PERCH_BENCH_WINDOW"] ?? "") ?? 1_024
    static let person = "human"

    func send(_ text: String) async throws {
        _ = try await service.send(MessageDraft(to: Self.room, text: text), as: Self.person)
    }

    /// Each send is queued for the store's writer before the next is handed over
    /// (``ChatService/queueSend(_:as:)``), so the messages reach the log in index order while their
    /// commits batch. At most `window` sends wait for their commit at once (the inbound queue's
    /// capacity, as a connector would bound it): the burst never waits for a reply, only for the
    /// host to take the input.
    func burst(_ texts: [String], injected: @Sendable (Int) -> Void) async throws {
        var waiting: [(index: Int, send: PendingSend)] = []
        waiting.reserveCapacity(Self.window)
        func settle(_ pending: (index: Int, send: PendingSend)) async throws {
            let message = try await pending.send.message
            order.withLock { $0[pending.index] = message.id }
        }
        for (index, text) in texts.enumerated() {
            if waiting.count == Self.window { try await settle(waiting.removeFirst()) }
            injected(index)
            let draft = MessageDraft(to: Self.room, text: text)
            let more = index < texts.count - 1
            waiting.append((index, try service.queueSend(draft, as: Self.person, callerGoesOn: more)))
        }
        for pending in waiting { try await settle(pending) }
    }

    /// Whether the burst's messages were stored in index order.
    var keptOrder: Bool {
        order.withLock { ids in zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 } }
    }
}

func runInProcess(_ options: Options, configPath: String, spawnedAt: UInt64) async throws -> [String: Any] {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-peers-\(UUID().uuidString)")
        .path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let loaded = ConfigurationLoader().load(configPath: configPath)
    guard loaded.isValid else {
        throw BenchError(loaded.findings.map(\.description).joined(separator: "\n"))
    }
    let router = ReplyRouter()
    // The bots' consumers and the person's task share one thread, as a connector inside the host
    // would (`PERCH_BENCH_EXECUTOR=pool` puts both on the shared cooperative pool instead), kept
    // off the CPUs that take the disk's interrupts when there are others (`PERCH_BENCH_PLACEMENT=any`
    // lets it run anywhere).
    let environment = ProcessInfo.processInfo.environment
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let cpus =
        environment["PERCH_BENCH_PLACEMENT"] == "any" ? nil : CPUPlacement.awayFromStorageInterrupts(of: directory)
    let executor = environment["PERCH_BENCH_EXECUTOR"] == "pool" ? nil : HostExecutor(cpus: cpus)
    defer { executor?.stop() }
    let host = BotHost(
        configuration: loaded,
        options: BotHost.Options(
            dataDirectory: directory, logger: HostLogger(minimum: .warning), schedulesFromTimer: false,
            willSend: { _, draft in router.leaving(draft.text ?? "") },
            didSend: { _, message in router.deliver(message.text ?? "") }, executor: executor))
    try await host.start()
    guard let service = await host.service else { throw BenchError("the host has no service") }
    let injector = InProcessInjector(service: service, count: options.count)
    let phases = Task(executorPreference: executor) {
        Phases(try await runPhases(options, injector: injector, router: router, spawnedAt: spawnedAt))
    }
    var result = try await phases.value.result
    result["burst_injection_in_order"] = injector.keptOrder
    result["host_cpus"] = executor == nil ? "pool" : cpus.map { $0.map(String.init).joined(separator: ",") } ?? "any"
    result["durability"] = loaded.config?.storage.synchronous.rawValue ?? "normal"
    await host.stop()
    return result
}

/// The phases' result, handed from the person's task (its values are plain JSON values).
struct Phases: @unchecked Sendable {
    var result: [String: Any]
    init(_ result: [String: Any]) { self.result = result }
}
