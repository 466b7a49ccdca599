import Foundation
import PerchHTTP
import PerchTestSupport
import Synchronization
import Testing

/// libmicrohttpd's own messages reach the server's `log` (the host's log, in its format: a line of
/// plain text on standard error would break `--log-format json`).
@Suite struct HTTPServerLogTests {
    @Test func aConnectionPastTheLimitIsRefusedAndSaidInTheServersLog() async throws {
        let logged = Mutex<[String]>([])
        // One stream and the 64 connections kept for requests: the 66th connection is refused.
        let server = try HTTPServer(
            host: "127.0.0.1", port: 0, maximumBodyBytes: 1024, maximumStreams: 1,
            log: { message in logged.withLock { $0.append(message) } }
        ) { _ in .text(200, "ok") }
        let limit = 1 + HTTPServer.requestReserve
        let sockets = try (0...limit).map { _ in try connectLoopback(port: server.port) }
        let deadline = ContinuousClock.now + .seconds(5)
        while logged.withLock({ $0.isEmpty }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let messages = logged.withLock { $0 }
        #expect(messages.contains { $0.contains("connection limit") }, "\(messages)")
        // One line a message, without the format's newline; nothing about the logger option itself.
        #expect(messages.allSatisfy { !$0.hasSuffix("\n") && !$0.contains("EXTERNAL_LOGGER") })
        for socket in sockets { close(socket) }
        await onThread { server.stop() }
    }
}
