import Foundation
import Synchronization
import Testing

@testable import PerchHTTP

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request's handler runs on its connection's thread (a `ThreadExecutor`); what it awaits from
/// other threads comes back there, and a task it starts outlives the request on the shared pool.
@Suite struct ConnectionExecutorTests {
    @Test func awaitedWorkComesBackAndStartedTasksOutliveTheRequest() async throws {
        let outlived = Flag()
        let server = try HTTPServer(host: "127.0.0.1", port: 0, maximumBodyBytes: 1024) { request in
            // Resumed from another thread: the rest of the handler runs on the connection's again.
            let value = await withCheckedContinuation { continuation in
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) {
                    continuation.resume(returning: request.path)
                }
            }
            // Not bound to the request's executor, which stops with the request.
            Task {
                try? await Task.sleep(for: .milliseconds(50))
                outlived.set()
            }
            return .text(200, "answered \(value)")
        }
        defer { server.stop() }
        let url = try #require(URL(string: "http://127.0.0.1:\(server.port)/hello"))
        let (data, response) = try await URLSession(configuration: .ephemeral).data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "answered /hello")
        for _ in 0..<200 where !outlived.isSet { try await Task.sleep(for: .milliseconds(10)) }
        #expect(outlived.isSet)
    }
}

private final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
