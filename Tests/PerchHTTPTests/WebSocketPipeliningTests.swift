import Foundation
import PerchLock
import PerchTestSupport
import Testing

@testable import PerchHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// The socket's loop with a session of the test's: which requests start when, and in what order
/// their answers go out, when sends sent back to back start while those before them wait.
@Suite struct WebSocketPipeliningTests {
    /// `/send/N` pipelines: it says its write is queued, then waits for the test to let it finish.
    /// `/refused/N` pipelines and is answered at once (refused before its write was queued).
    /// `/read/N` does not pipeline and is answered at once.
    final class GatedSession: WebSocketSession, @unchecked Sendable {
        let log = Lock<[String]>([])
        let gates = Lock<[String: CheckedContinuation<Void, Never>]>([:])

        var greeting: [UInt8] { Array(#"{"type":"session","session":"test"}"#.utf8) }

        func pipelines(_ request: HTTPRequest) -> Bool { !request.path.hasPrefix("/read") }

        func respond(to request: HTTPRequest, pipelining: Pipelining?) async -> HTTPResponse {
            let name = String(request.path.dropFirst())
            log.withLock { $0.append("start \(name)\(pipelining == nil ? "" : " pipelined")") }
            if name.hasPrefix("send") {
                pipelining?.queued()
                await withCheckedContinuation { continuation in gates.withLock { $0[name] = continuation } }
            }
            return .text(200, name)
        }

        func followEvents(on executor: ThreadExecutor, deliver: @escaping @Sendable ([UInt8]) -> Void)
            -> @Sendable () -> Void
        { {} }

        /// Lets `/send/N` finish once it waits.
        func release(_ name: String) -> Bool {
            for _ in 0..<500 {
                if let gate = gates.withLock({ $0.removeValue(forKey: name) }) {
                    gate.resume()
                    return true
                }
                usleep(10_000)
            }
            return false
        }

        /// Waits until `count` lines are logged (at most 5 s).
        func logged(_ count: Int) -> [String] {
            for _ in 0..<500 {
                let lines = log.withLock { $0 }
                if lines.count >= count { return lines }
                usleep(10_000)
            }
            return log.withLock { $0 }
        }
    }

    /// A session whose events are more than the socket takes at once.
    final class FloodingSession: WebSocketSession, @unchecked Sendable {
        var greeting: [UInt8] { Array(#"{"type":"session","session":"test"}"#.utf8) }
        func pipelines(_ request: HTTPRequest) -> Bool { false }
        func respond(to request: HTTPRequest, pipelining: Pipelining?) async -> HTTPResponse { .text(200, "") }
        func followEvents(on executor: ThreadExecutor, deliver: @escaping @Sendable ([UInt8]) -> Void)
            -> @Sendable () -> Void
        {
            let event = Array(#"{"type":"event","data":"\#(String(repeating: "x", count: 60_000))"}"#.utf8)
            for _ in 0..<100 { deliver(event) }
            return {}
        }
    }

    /// Answers of 200 KiB to any request, with none held.
    final class LargeAnswerSession: WebSocketSession, @unchecked Sendable {
        let started = Lock(0)
        var greeting: [UInt8] { Array(#"{"type":"session","session":"test"}"#.utf8) }
        func pipelines(_ request: HTTPRequest) -> Bool { false }
        func respond(to request: HTTPRequest, pipelining: Pipelining?) async -> HTTPResponse {
            started.withLock { $0 += 1 }
            return .text(200, String(repeating: "y", count: 200 << 10))
        }
        func followEvents(on executor: ThreadExecutor, deliver: @escaping @Sendable ([UInt8]) -> Void)
            -> @Sendable () -> Void
        { {} }
    }

    /// A client that sends request after request and reads no answer holds at most the outbox's
    /// limit and one answer of the server's memory: the socket stops starting requests, then stops
    /// reading them; once the client reads, every answer comes, in order.
    @Test func aClientThatReadsNothingHoldsABoundedBuffer() async throws {
        let session = LargeAnswerSession()
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let connection = WebSocketConnection(session: session, maximumMessage: 1 << 20, heartbeat: .seconds(30))
        let (server, peer) = (pair[0], pair[1])
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            connection.run(socket: server, extra: [])
            finished.signal()
        }
        let client = WebSocketTestClient(connected: peer)
        let peak = await onThread { () -> Int in
            for id in 0..<100 { client.sendText(#"{"id":\#(id),"method":"GET","path":"/big"}"#) }
            var peak = 0
            for _ in 0..<100 {
                peak = max(peak, connection.bufferedBytes)
                usleep(10_000)
            }
            return peak
        }
        #expect(peak > 0)
        #expect(peak <= WebSocketConnection.outboxLimit + (400 << 10), "\(peak) bytes held")
        #expect(session.started.withLock { $0 } < 100)
        let ids = await onThread { () -> [Int] in
            _ = client.message()  // the session's greeting
            return (0..<100).compactMap { _ in client.message(timeout: 10)?["id"] as? Int }
        }
        #expect(ids == Array(0..<100))
        await onThread { client.send(.close, WebSocket.closePayload(1000, "")) }
        #expect(await onThread { finished.wait(timeout: .now() + 10) == .success })
    }

    /// A client that breaks the protocol and reads nothing more: the server's close frame waits
    /// behind what the client left unread, and the socket is given up after a heartbeat (it was
    /// polled without sleeping, forever, once the heartbeat was due).
    @Test func aClosingSocketWhoseClientReadsNothingIsGivenUpAfterAHeartbeat() async throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let connection = WebSocketConnection(
            session: FloodingSession(), maximumMessage: 1 << 20, heartbeat: .seconds(1))
        let (server, peer) = (pair[0], pair[1])
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            connection.run(socket: server, extra: [])
            finished.signal()
        }
        let client = WebSocketTestClient(connected: peer)
        client.send(.binary, [1, 2])
        let ended = await onThread { finished.wait(timeout: .now() + 10) == .success }
        if !ended {
            connection.finish()
            finished.wait()
        }
        #expect(ended)
        withExtendedLifetime(client) {}
    }

    @Test func sendsStartWhileThoseBeforeWaitAndTheirAnswersGoOutInOrder() async throws {
        let session = GatedSession()
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let connection = WebSocketConnection(session: session, maximumMessage: 1 << 20, heartbeat: .seconds(15))
        let (server, peer) = (pair[0], pair[1])
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            connection.run(socket: server, extra: [])
            finished.signal()
        }
        let result = await onThread { () -> [String] in
            let client = WebSocketTestClient(connected: peer)
            var seen: [String] = []
            _ = client.message()
            for (id, path) in ["/send/0", "/send/1", "/refused/2", "/send/3", "/read/4", "/send/5"].enumerated() {
                client.sendText(#"{"id":\#(id),"method":"POST","path":"\#(path)"}"#)
                // A malformed request is refused in its turn too (its id unread: null).
                if id == 1 { client.sendText("not json") }
            }
            // The three sends and the refusal start before any is answered; the read waits.
            seen += session.logged(4)
            usleep(50_000)
            seen.append("logged \(session.log.withLock { $0.count })")
            // Finished out of order (the refusal first), answered in order.
            for name in ["send/3", "send/1", "send/0"] where !session.release(name) { seen.append("no \(name)") }
            for _ in 0..<5 { seen.append("answer \(client.message()?["id"] as? Int ?? -1)") }
            // Then the read, alone, and after it the last send.
            seen.append("answer \(client.message()?["id"] as? Int ?? -1)")
            seen += session.logged(6).suffix(2)
            if !session.release("send/5") { seen.append("no send/5") }
            seen.append("answer \(client.message()?["id"] as? Int ?? -1)")
            client.send(.close, WebSocket.closePayload(1000, ""))
            return seen
        }
        #expect(
            result == [
                "start send/0 pipelined", "start send/1 pipelined", "start refused/2 pipelined",
                "start send/3 pipelined", "logged 4", "answer 0", "answer 1", "answer -1", "answer 2", "answer 3",
                "answer 4",
                "start read/4", "start send/5 pipelined", "answer 5",
            ])
        #expect(finished.wait(timeout: .now() + 10) == .success)
    }
}
