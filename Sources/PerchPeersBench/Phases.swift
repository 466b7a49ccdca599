import Foundation
import Synchronization

/// Where replies land: the tracker of the phase in progress, or the startup probe.
final class ReplyRouter: Sendable {
    private let tracker = Mutex<Tracker?>(nil)
    private let probe = Mutex<(at: UInt64?, waiter: CheckedContinuation<UInt64?, Never>?)>((nil, nil))

    func start(_ phase: Tracker) { tracker.withLock { $0 = phase } }

    /// One reply, observed now.
    func deliver(_ text: String) {
        let now = monotonicNanoseconds()
        if text == Workload.probeReply {
            let waiter = probe.withLock { probe -> CheckedContinuation<UInt64?, Never>? in
                guard probe.at == nil else { return nil }
                probe.at = now
                defer { probe.waiter = nil }
                return probe.waiter
            }
            if let waiter {
                waiter.resume(returning: now)
                return
            }
        }
        tracker.withLock { $0 }?.replied(text, at: now)
    }

    /// One reply as it leaves the bot, before the service commits it (in process only).
    func leaving(_ text: String) {
        let now = monotonicNanoseconds()
        tracker.withLock { $0 }?.left(text, at: now)
    }

    /// The time the probe's reply was observed; nil after `idle` seconds without it.
    func probeReply(idle: Double) async -> UInt64? {
        let timeout = Task {
            try? await Task.sleep(for: .milliseconds(Int(idle * 1000)))
            let waiter = probe.withLock { probe -> CheckedContinuation<UInt64?, Never>? in
                defer { probe.waiter = nil }
                return probe.waiter
            }
            waiter?.resume(returning: nil)
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { continuation in
            let at = probe.withLock { probe -> UInt64?? in
                if let at = probe.at { return .some(at) }
                probe.waiter = continuation
                return .none
            }
            if let at { continuation.resume(returning: at) }
        }
    }
}

/// How a bench hands one message of the person to the host.
protocol Injector: Sendable {
    /// Hands `text` over and returns once the host has it (committed, for Perch).
    func send(_ text: String) async throws
    /// Hands the burst's texts over back to back, in order, without waiting for replies;
    /// `injected` is called just before each is handed over.
    func burst(_ texts: [String], injected: @Sendable (Int) -> Void) async throws
    /// Reads replies on the caller's thread until `done` (or `idle` seconds without any), when
    /// they come in over a stream the caller can read; returns at once otherwise.
    func readReplies(until done: () -> Bool, idle: Double)
}

extension Injector {
    func readReplies(until done: () -> Bool, idle: Double) {}
}

struct Options {
    var count = 10_000
    var out = "-"
    var grace = 0.3
    var idle = 5.0
    var timeout = 600.0
    var variant = "default"
    var phases = ["burst", "closed"]
}

/// The phases of peers-v1 in order: startup probe, burst, closed loop, each followed by the grace
/// window. Returns the result without `startup.spawn_to_first_reply_s`'s origin applied.
func runPhases(
    _ options: Options, injector: some Injector, router: ReplyRouter, spawnedAt: UInt64
) async throws -> [String: Any] {
    var startup: [String: Any] = [:]
    try await injector.send(Workload.probeText)
    let probeAt = await router.probeReply(idle: options.idle)
    startup["first_reply_ok"] = probeAt != nil
    if let probeAt { startup["spawn_to_first_reply_s"] = Double(probeAt - spawnedAt) / 1e9 }
    startup["maxrss_kb_after"] = maximumResidentKilobytes()
    var phases: [String: Any] = [:]
    let texts = (0..<options.count).map(Workload.text)
    for phase in options.phases {
        let tracker = Tracker(count: options.count)
        router.start(tracker)
        switch phase {
        case "burst":
            try await injector.burst(texts) { index in tracker.injected(index, at: monotonicNanoseconds()) }
            await tracker.waitForCompletion(idle: options.idle, timeout: options.timeout)
        case "closed":
            let watchdog = Task { await tracker.watchdog(idle: options.idle) }
            for (index, text) in texts.enumerated() {
                tracker.injected(index, at: monotonicNanoseconds())
                try await injector.send(text)
                injector.readReplies(until: { tracker.hasReply(index) }, idle: options.idle)
                guard await tracker.reply(to: index) else { break }
            }
            watchdog.cancel()
        default:
            throw BenchError("unknown phase \(phase)")
        }
        await tracker.grace(options.grace)
        phases[phase] = tracker.summary(mode: phase)
    }
    return ["startup": startup, "phases": phases]
}

/// Fills in the fields every result carries and judges the run as `common.emit` does.
func finish(_ result: [String: Any], options: Options, variant: String) -> [String: Any] {
    var result = result
    result["framework"] = "perch"
    result["variant"] = variant
    result["framework_version"] = perchVersion
    result["n"] = options.count
    result["workload"] = Workload.name
    result["workload_sha256"] = Workload.sha256(count: options.count)
    result["maxrss_kb"] = maximumResidentKilobytes()
    let phases = result["phases"] as? [String: [String: Any]] ?? [:]
    let phasesValid = phases.values.allSatisfy { ($0["valid"] as? Bool ?? false) && ($0["extra_replies"] as? Int) == 0 }
    let startup = result["startup"] as? [String: Any] ?? [:]
    result["valid"] = phasesValid && (startup["first_reply_ok"] as? Bool ?? false)
    return result
}

/// The version recorded in results: the commit when built from a checkout.
let perchVersion = ProcessInfo.processInfo.environment["PERCH_BENCH_VERSION"] ?? "0.1"

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Failures collected from concurrent senders.
final class Failures: Sendable {
    private let list = Mutex<[String]>([])
    func add(_ failure: String) { list.withLock { $0.append(failure) } }
    var first: String? { list.withLock { $0.first } }
}
