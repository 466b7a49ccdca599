import Foundation
import PerchChat
import PerchHost
import PerchService
import PerchTestSupport
import PerchTesting
import Synchronization
import Testing

@testable import PerchHTTP

/// An SSE session's page loop runs inside `next(timeout:)`, on the connection's thread (here a
/// thread of the test's, as libmicrohttpd's would be): frames come out in order, nothing is read
/// while the connection's thread is away, and the loop ends (releasing the source) once the client
/// is gone.
@Suite struct EventSourceTests {
    @Test func aSessionFeedsItsConnectionsThreadAndEndsWhenTheClientLeaves() async throws {
        try await withTestHost(config: hostConfig) { chat in
            let service = chat.service
            let metrics = HostMetrics()
            let connection = Consumer()
            let after = try await service.store.latestEventSequence()
            let released = await connection.start {
                ChatEventSource(
                    service: service, uid: "bob", session: "bob/s1", name: "s1", after: after, notificationsAfter: 0,
                    metrics: metrics)
            }

            // The session's first frame, then each message in order.
            let first = try #require(await connection.next())
            #expect(first.contains("event: perch.session"))
            try await chat.post("one", as: "alice", to: .group("room"))
            try await chat.post("two", as: "alice", to: .group("room"))
            var text = ""
            while !text.contains("\"text\":\"two\"") {
                let chunk = try #require(await connection.next())
                text += chunk
            }
            #expect(text.contains("event: onTextMessageReceived"))
            let one = try #require(text.range(of: "\"text\":\"one\""))
            let two = try #require(text.range(of: "\"text\":\"two\""))
            #expect(one.lowerBound < two.lowerBound)
            #expect(metrics.value("perch_sse_connections") == 1)

            // A quiet stream answers a heartbeat (an empty chunk) when the timeout passes.
            #expect(await connection.next(timeout: .milliseconds(50)) == "")
            // The client hangs up: the stream ends at once, not at its next heartbeat.
            connection.hangUp()
            #expect(await connection.next(timeout: .seconds(30)) == nil)

            // The client leaves: the loop ends and lets go of its source.
            await connection.close()
            #expect(metrics.value("perch_sse_connections") == 0)
            let deadline = ContinuousClock.now + .seconds(5)
            while released.isAlive, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(!released.isAlive)
        }
    }

    /// A notification routed to the stream's user comes as `onNotification`, after the message's
    /// event and without an `id:` (it must not move the client's Last-Event-ID).
    @Test func aNotificationFollowsItsMessageWithoutAnID() async throws {
        try await withTestHost(config: hostConfig) { chat in
            let service = chat.service
            let connection = Consumer()
            let after = try await service.store.latestEventSequence()
            _ = await connection.start {
                ChatEventSource(
                    service: service, uid: "bob", session: "bob/s1", name: "s1", after: after, notificationsAfter: 0,
                    metrics: HostMetrics())
            }
            _ = try #require(await connection.next())
            try await chat.post("hi <@uid:bob>", as: "alice", to: .group("room"))
            var text = ""
            while !text.contains("event: onNotification") {
                text += try #require(await connection.next())
            }
            text += await connection.next(timeout: .milliseconds(50)) ?? ""
            let frames = text.components(separatedBy: "\n\n").filter { !$0.isEmpty }
            let names = frames.compactMap { frame in
                frame.split(separator: "\n").first { $0.hasPrefix("event: ") }.map { String($0.dropFirst(7)) }
            }
            #expect(names == ["onTextMessageReceived", "onNotification"])
            let notification = try #require(frames.last)
            #expect(!notification.contains("id: "))
            #expect(notification.contains(#""reason":"mention""#) && notification.contains(#""text":"hi <@uid:bob>""#))
            await connection.close()
        }
    }
}

/// Stands in for libmicrohttpd's connection thread: one thread that makes the source and calls
/// `next` and `close` on it, one request at a time.
private final class Consumer: @unchecked Sendable {
    private let requests = DispatchQueue(label: "perch-test-connection")
    private var source: ChatEventSource?
    /// The connection's socket (the server's end) and the client's end.
    private let sockets: (server: Int32, client: Int32) = {
        var pair: [Int32] = [0, 0]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair)
        return (pair[0], pair[1])
    }()

    deinit {
        Glibc.close(sockets.server)
        Glibc.close(sockets.client)
    }

    /// The client closes its end.
    func hangUp() { shutdown(sockets.client, Int32(SHUT_RDWR)) }

    /// Makes the source on the connection's thread; answers a weak handle to it.
    func start(_ make: @escaping @Sendable () -> ChatEventSource) async -> WeakHandle {
        await withCheckedContinuation { continuation in
            requests.async {
                let source = make()
                self.source = source
                continuation.resume(returning: WeakHandle(source))
            }
        }
    }

    func next(timeout: Duration = .seconds(5)) async -> String? {
        await withCheckedContinuation { continuation in
            requests.async {
                let chunk = self.source?.next(timeout: timeout, socket: self.sockets.server)
                continuation.resume(returning: chunk.map { String(decoding: $0, as: UTF8.self) })
            }
        }
    }

    func close() async {
        await withCheckedContinuation { continuation in
            requests.async {
                self.source?.close()
                self.source = nil
                continuation.resume()
            }
        }
    }
}

private final class WeakHandle: @unchecked Sendable {
    weak var value: ChatEventSource?
    init(_ value: ChatEventSource) { self.value = value }
    var isAlive: Bool { value != nil }
}
