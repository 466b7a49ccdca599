import Foundation
import PerchHTTP
import PerchTestSupport
import Synchronization
import Testing

/// libmicrohttpd's own messages reach the server's `log` (the host's log, in its format: a line of
/// plain text on standard error would break `--log-format json`).
@Suite struct HTTPServerLogTests {
    @Test func libmicrohttpdsMessagesGoToTheServersLog() async throws {
        let logged = Mutex<[String]>([])
        let server = try HTTPServer(
            host: "127.0.0.1", port: 0, maximumBodyBytes: 1024,
            log: { message in logged.withLock { $0.append(message) } }
        ) { _ in .text(200, "ok") }
        // The first request passes the gate; the second, on the kept-alive connection with a length
        // that is not a number, is libmicrohttpd's to refuse, and it says so.
        let client = try SSEClient(port: server.port, path: nil, headers: [:])
        client.handle.write(
            Data(
                "GET /a HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nPOST /b HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n"
                    .utf8))
        let answer = await onThread { client.readToEnd(timeout: 5) }
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        let deadline = ContinuousClock.now + .seconds(5)
        while logged.withLock({ $0.isEmpty }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let messages = logged.withLock { $0 }
        #expect(messages.contains { $0.contains("Content-Length") }, "\(messages)")
        // One line a message, without the format's newline; nothing about the logger option itself.
        #expect(messages.allSatisfy { !$0.hasSuffix("\n") && !$0.contains("EXTERNAL_LOGGER") })
        await onThread { server.stop() }
    }
}
