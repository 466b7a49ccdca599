import Foundation
import PerchHost
import PerchLock

/// Posts on libcurl lanes (``CurlLane``): up to `lanes` posts at once, each lane keeping its
/// connection alive between posts, so a stream of posts to one receiver pays no connection set-up
/// per post. A post waits for a free lane. A lane (its thread, and libcurl's set-up for the first)
/// is made when a post first needs it: a host whose bots have no HTTP plugin makes none.
public final class CurlPostClient: PluginHTTPClient {
    private let name: String
    private let lanes = Lock<[CurlLane]>([])
    private let free: Lock<(lanes: [Int], waiting: [CheckedContinuation<Int, Never>])>

    public init(lanes count: Int, name: String) {
        self.name = name
        free = Lock((Array((0..<max(1, count)).reversed()), []))
    }

    deinit { for lane in lanes.withLock({ $0 }) { lane.close() } }

    /// How many lanes have been made so far.
    var madeLanes: Int { lanes.withLock { $0.count } }

    /// The lane at `index`, made (with those before it) if it is not yet.
    private func lane(_ index: Int) -> CurlLane {
        lanes.withLock { lanes in
            while lanes.count <= index { lanes.append(CurlLane(name: "\(name)-\(lanes.count)")) }
            return lanes[index]
        }
    }

    public func post(_ url: URL, headers: [String: String], body: [UInt8], within time: Duration)
        async throws(PluginHTTPFailure) -> (status: Int, body: [UInt8])
    {
        let index = await take()
        defer { give(index) }
        if Task.isCancelled { throw .cancelled }
        do {
            let answer = try await lane(index).perform(
                "POST", url.absoluteString,
                headers: headers.filter { $0.key.lowercased() != "content-type" }.map { ($0.key, $0.value) },
                body: Data(body), timeout: time)
            return (answer.status, Array(answer.body))
        } catch {
            if error.cancelled || Task.isCancelled { throw .cancelled }
            if error.timedOut { throw .timedOut }
            throw .unreachable(error.reason)
        }
    }

    private func take() async -> Int {
        await withCheckedContinuation { continuation in
            let index = free.withLock { state -> Int? in
                if let index = state.lanes.popLast() { return index }
                state.waiting.append(continuation)
                return nil
            }
            if let index { continuation.resume(returning: index) }
        }
    }

    private func give(_ index: Int) {
        let waiter = free.withLock { state -> CheckedContinuation<Int, Never>? in
            guard !state.waiting.isEmpty else {
                state.lanes.append(index)
                return nil
            }
            return state.waiting.removeFirst()
        }
        waiter?.resume(returning: index)
    }
}
