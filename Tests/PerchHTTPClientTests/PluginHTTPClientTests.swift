import Foundation
import PerchHTTP
import PerchHost
import PerchLock
import PerchTestSupport
import Testing

@testable import PerchHTTPClient

/// The host's HTTP client for plugins reached over HTTP, against a server on loopback.
@Suite struct PluginHTTPClientTests {
    /// A server on loopback that records what it is posted and answers `answer`, after `delay`.
    final class LoopbackService: Sendable {
        let requests = Lock<[HTTPRequest]>([])
        let server: HTTPServer

        init(answer: HTTPResponse = .json(200, ""), delay: Duration = .zero) throws {
            let requests = self.requests
            server = try HTTPServer(host: "127.0.0.1", port: 0, maximumBodyBytes: 1 << 20) { request in
                requests.withLock { $0.append(request) }
                if delay > .zero { try? await Task.sleep(for: delay) }
                return answer
            }
        }

        var url: String { "http://127.0.0.1:\(server.port)/hook" }

        func stop() async { await onThread { [server] in server.stop() } }
    }

    @Test func aPostCarriesItsHeadersAndBodyAndAnswersTheStatusAndBody() async throws {
        let service = try LoopbackService(answer: .json(202, #"{"ok": true}"#))
        let (status, body) = try await CurlPostClient(lanes: 1, name: "test-plugin-http").post(
            URL(string: service.url)!,
            headers: ["X-Perch-Signature-256": "sha256=ab", "Content-Type": "application/json"],
            body: Array(#"{"n": 1}"#.utf8), within: .seconds(30))
        #expect(status == 202)
        #expect(String(decoding: body, as: UTF8.self) == #"{"ok": true}"#)
        let request = try #require(service.requests.withLock { $0.first })
        #expect(request.method == "POST")
        #expect(request.header("x-perch-signature-256") == "sha256=ab")
        #expect(request.header("user-agent") == "Perch")
        #expect(String(decoding: request.body, as: UTF8.self) == #"{"n": 1}"#)
        await service.stop()
    }

    @Test func aServiceThatIsNotThereIsUnreachable() async throws {
        // A port held bound and not listening for the test's length (a port closed and given back
        // could be taken by another test's server meanwhile): a connection to it is refused.
        let (descriptor, port) = try boundNotListening()
        defer { close(descriptor) }
        let url = URL(string: "http://127.0.0.1:\(port)/hook")!
        do {
            _ = try await CurlPostClient(lanes: 1, name: "test-plugin-http").post(
                url, headers: [:], body: [], within: .seconds(20))
            Issue.record("a post to a closed port was answered")
        } catch {
            guard case .unreachable = error else {
                Issue.record("expected unreachable, got \(error)")
                return
            }
        }
    }

    /// A post out of time, however short the time, is a timeout, not the host stopping.
    @Test func aPostOutOfTimeBeforeItStartsIsATimeout() async throws {
        let slow = try LoopbackService(delay: .milliseconds(500))
        let client = CurlPostClient(lanes: 1, name: "test-plugin-http")
        for time in [Duration.zero, .nanoseconds(1), .milliseconds(50)] {
            do {
                _ = try await client.post(URL(string: slow.url)!, headers: [:], body: [], within: time)
                Issue.record("answered within \(time)")
            } catch {
                #expect(error == .timedOut, "within \(time)")
            }
        }
        // A caller cancelled is the host stopping.
        let call = Task { try await client.post(URL(string: slow.url)!, headers: [:], body: [], within: .seconds(5)) }
        call.cancel()
        do {
            _ = try await call.value
            Issue.record("answered though cancelled")
        } catch {
            #expect(error as? PluginHTTPFailure == .cancelled)
        }
        await slow.stop()
    }
}

extension PluginHTTPClientTests {
    /// A client makes its lanes as posts need them: none before the first post (a host without
    /// HTTP plugins starts no thread and no libcurl), one for posts one at a time, more for posts
    /// at once.
    @Test func lanesAreMadeAsPostsNeedThem() async throws {
        let service = try LoopbackService(delay: .milliseconds(500))
        let client = CurlPostClient(lanes: 4, name: "lazylane")
        let url = URL(string: service.url)!
        #expect(client.madeLanes == 0)
        for _ in 0..<2 {
            #expect(try await client.post(url, headers: [:], body: [], within: .seconds(20)).status == 200)
        }
        #expect(client.madeLanes == 1)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<6 {
                group.addTask { try await client.post(url, headers: [:], body: [], within: .seconds(20)).status }
            }
            for try await status in group { #expect(status == 200) }
        }
        #expect(client.madeLanes == 4)
        await service.stop()
    }
}

/// A TCP socket bound to a free loopback port and not listening, and the port.
func boundNotListening() throws -> (descriptor: Int32, port: UInt16) {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
        }
    }
    guard descriptor >= 0, bound else {
        close(descriptor)
        throw HTTPServerErrorForTests()
    }
    return (descriptor, UInt16(bigEndian: address.sin_port))
}
