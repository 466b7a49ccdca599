import CCrypto
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The workload `peers-v1`, as `bench/peers-v1/common.py` defines it: N messages from one
/// person in one room, `!ping i` for even i (reply `pong i`) and `hey @bot status i` for odd i
/// (reply `ack i`), after a startup probe.
enum Workload {
    static let name = "peers-v1"
    static let probeText = "!ping 1000000000"
    static let probeReply = "pong 1000000000"

    static func text(_ index: Int) -> String { index % 2 == 0 ? "!ping \(index)" : "hey @bot status \(index)" }
    static func reply(_ index: Int) -> String { index % 2 == 0 ? "pong \(index)" : "ack \(index)" }

    /// sha256 of the N texts joined by `\n` plus a final `\n`: the fingerprint peers record.
    static func sha256(count: Int) -> String {
        let joined = Array(((0..<count).map(text).joined(separator: "\n") + "\n").utf8)
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        _ = SHA256(joined, joined.count, &digest)
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    /// The workload index a reply answers, when it has the form `(pong|ack) <digits>`.
    static func index(ofReply text: String) -> Int? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == "pong" || parts[0] == "ack", !parts[1].isEmpty,
            parts[1].utf8.allSatisfy({ (48...57).contains($0) })
        else { return nil }
        return Int(parts[1])
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock `launch.py` and the peers read.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Peak resident set size of this process so far, in KiB.
func maximumResidentKilobytes() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss
}

/// Records injection and reply times of one phase and judges every reply, exactly as
/// `common.Tracker.replied` does: the text must parse, name a workload index, equal the expected
/// reply, come after its injection and come once; anything after completion is an extra.
final class Tracker: Sendable {
    struct State {
        var injectedAt: [UInt64]
        var repliedAt: [UInt64]
        /// When each reply left its bot (in process: the host's `leaving` tap), 0 where not seen.
        var leftAt: [UInt64]
        var count = 0
        var errors = 0
        var samples: [String] = []
        var extra = 0
        var complete = false
        var waiter: (index: Int, continuation: CheckedContinuation<Bool, Never>)?
    }

    let count: Int
    private let state: Mutex<State>

    init(count: Int) {
        self.count = count
        state = Mutex(
            State(
                injectedAt: Array(repeating: 0, count: count), repliedAt: Array(repeating: 0, count: count),
                leftAt: Array(repeating: 0, count: count)))
    }

    var progress: Int { state.withLock { $0.count + $0.errors } }
    var isComplete: Bool { state.withLock { $0.complete } }

    func injected(_ index: Int, at time: UInt64) { state.withLock { $0.injectedAt[index] = time } }

    /// A reply leaving its bot at `time`; the checks are ``replied(_:at:)``'s, at its commit (a
    /// wrong reply voids the run there).
    func left(_ text: String, at time: UInt64) {
        guard let index = Workload.index(ofReply: text), index >= 0, index < count else { return }
        state.withLock { state in
            if state.leftAt[index] == 0 { state.leftAt[index] = time }
        }
    }

    func replied(_ text: String, at time: UInt64) {
        let resume = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            func fail(_ message: String) {
                state.errors += 1
                if state.samples.count < 20 { state.samples.append(message) }
            }
            if state.complete {
                state.extra += 1
                fail("extra reply after completion: \(text)")
                return nil
            }
            guard let index = Workload.index(ofReply: text) else {
                fail("unparseable reply: \(text)")
                return nil
            }
            guard index >= 0, index < count else {
                fail("reply index out of range: \(text)")
                return nil
            }
            guard text == Workload.reply(index) else {
                fail("wrong reply for message \(index): \(text) != \(Workload.reply(index))")
                return nil
            }
            guard state.repliedAt[index] == 0 else {
                fail("duplicate reply for message \(index): \(text)")
                return nil
            }
            guard state.injectedAt[index] != 0 else {
                fail("reply before injection for message \(index): \(text)")
                return nil
            }
            state.repliedAt[index] = time
            state.count += 1
            if state.count == count { state.complete = true }
            if let waiter = state.waiter, waiter.index == index {
                state.waiter = nil
                return waiter.continuation
            }
            return nil
        }
        resume?.resume(returning: true)
    }

    /// Waits for the reply to `index` (closed loop); false when ``abandonStalledWaiter()`` gives up.
    func reply(to index: Int) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let already = state.withLock { state -> Bool in
                if state.repliedAt[index] != 0 { return true }
                state.waiter = (index, continuation)
                return false
            }
            if already { continuation.resume(returning: true) }
        }
    }

    /// Whether the reply to `index` came.
    func hasReply(_ index: Int) -> Bool { state.withLock { $0.repliedAt[index] != 0 } }

    /// The index the closed loop waits for, if any.
    var waitingFor: Int? { state.withLock { $0.waiter?.index } }

    /// Gives up on the waiter if it still waits for `index` (the closed loop's idle timeout).
    func abandon(_ index: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let waiter = state.waiter, waiter.index == index else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: false)
    }

    /// Runs the closed loop's idle watchdog until cancelled: a reply awaited for `idle` seconds is
    /// abandoned, which ends the phase.
    func watchdog(idle: Double) async {
        var seen: (index: Int, since: Date)?
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(100))
            guard let index = waitingFor else { continue }
            if let current = seen, current.index == index {
                if Date().timeIntervalSince(current.since) > idle { abandon(index) }
            } else {
                seen = (index, Date())
            }
        }
    }

    /// Waits until every reply came, or none came for `idle` seconds, or `timeout` passed.
    func waitForCompletion(idle: Double, timeout: Double) async {
        let deadline = Date().addingTimeInterval(timeout)
        var last = -1
        var lastChange = Date()
        while !isComplete {
            try? await Task.sleep(for: .milliseconds(20))
            let now = Date()
            if progress != last {
                last = progress
                lastChange = now
            }
            if now.timeIntervalSince(lastChange) > idle || now > deadline { return }
        }
    }

    /// The phase's figures, with `common.Tracker.summary`'s fields.
    func summary(mode: String) -> [String: Any] {
        state.withLock { state in
            let valid = state.count == count && state.errors == 0 && !state.repliedAt.contains(0)
            let latencies = Self.latencies(from: state.injectedAt, to: state.repliedAt)
            let firstIn = state.injectedAt.min() ?? 0
            let lastOut = state.repliedAt.max() ?? 0
            let wall = valid ? Double(lastOut - firstIn) / 1e9 : .nan
            var summary: [String: Any] = [
                "mode": mode, "n": count, "replies_ok": state.count, "errors": state.errors,
                "extra_replies": state.extra, "error_samples": state.samples, "valid": valid,
                "wall_s": wall, "msgs_per_s": valid && wall > 0 ? Double(count) / wall : .nan,
                "inject_span_s": Double((state.injectedAt.max() ?? 0) - firstIn) / 1e9,
                "lat_p50_ms": Self.percentile(0.50, of: latencies), "lat_p99_ms": Self.percentile(0.99, of: latencies),
                "lat_max_ms": latencies.last ?? .nan,
                "lat_mean_ms": latencies.isEmpty ? .nan : latencies.reduce(0, +) / Double(latencies.count),
                "maxrss_kb_after": maximumResidentKilobytes(),
            ]
            // Where the peers' replies are observed (their host handing a reply to its transport):
            // Perch's reply as it leaves the bot, before its commit. Reported beside the committed
            // figures, which stay the row's.
            let left = Self.latencies(from: state.injectedAt, to: state.leftAt)
            if !left.isEmpty {
                summary["leaving_count"] = left.count
                summary["leaving_lat_p50_ms"] = Self.percentile(0.50, of: left)
                summary["leaving_lat_p99_ms"] = Self.percentile(0.99, of: left)
                summary["leaving_lat_mean_ms"] = left.reduce(0, +) / Double(left.count)
            }
            return summary
        }
    }

    /// The `q` quantile of sorted `latencies` (nearest rank, as `common.percentile`), NaN when empty.
    private static func percentile(_ q: Double, of latencies: [Double]) -> Double {
        guard !latencies.isEmpty else { return .nan }
        return latencies[max(1, Int((q * Double(latencies.count)).rounded(.up))) - 1]
    }

    /// Milliseconds from each injection to its reply's `times` entry, sorted; replies not seen
    /// (0) left out.
    private static func latencies(from injected: [UInt64], to times: [UInt64]) -> [Double] {
        zip(injected, times).filter { $0.1 != 0 }.map { Double($0.1 &- $0.0) / 1e6 }.sorted()
    }

    /// Waits out the grace window in which any reply is an extra (and an error).
    func grace(_ seconds: Double) async {
        try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
    }
}

/// Writes a result as `json.dump` would, NaN included (`aggregate.py` reads it with `json.load`).
func writeResult(_ result: [String: Any], to path: String) throws {
    func encode(_ value: Any) -> String {
        switch value {
        case let bool as Bool: return bool ? "true" : "false"
        case let int as Int: return String(int)
        case let double as Double: return double.isNaN ? "NaN" : String(double)
        case let string as String:
            let data = try! JSONSerialization.data(withJSONObject: [string], options: [.fragmentsAllowed])
            return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
        case let array as [Any]: return "[" + array.map(encode).joined(separator: ", ") + "]"
        case let object as [String: Any]:
            return "{" + object.keys.sorted().map { encode($0) + ": " + encode(object[$0]!) }.joined(separator: ", ")
                + "}"
        case is NSNull: return "null"
        default: return "null"
        }
    }
    try (encode(result) + "\n").write(toFile: path, atomically: true, encoding: .utf8)
}
