import Foundation
import PerchHTTP
import PerchHost
import PerchTestSupport
import PerchTesting
import Testing

/// A client that vanishes without closing (a laptop asleep, a phone off the network) sends no FIN
/// and no RST: its event stream's heartbeats go unacknowledged. The server gives such a stream up
/// after two heartbeats, instead of holding its connection, its thread and a stream slot until the
/// kernel's retransmissions run out (about 15 minutes).
///
/// The test makes the vanishing real: the server and the client run in a network namespace of
/// their own, whose loopback is switched off once the stream is open, so nothing sent arrives and
/// nothing is acknowledged. Making a namespace needs root (CI runs as root).
@Suite struct VanishedClientTests {
    @Test(.enabled(if: geteuid() == 0, "a network namespace of the test's own needs root"))
    func aStreamWhoseClientVanishedIsClosedAfterTwoHeartbeats() async throws {
        try await withTestHost(config: hostConfig) { chat in
            let metrics = chat.host.metrics
            let api = PerchAPI(service: chat.service, host: chat.host, apiKey: apiKey, metrics: metrics)
            // The namespace belongs to the thread that makes it, and to the threads and sockets made
            // there: the server's (libmicrohttpd's threads start from it) and the client's.
            let (network, server, client) = try await onThread {
                () throws -> (IsolatedNetwork, HTTPServer, SSEClient) in
                let network = try IsolatedNetwork()
                let server = try HTTPServer(
                    host: "127.0.0.1", port: 0, maximumBodyBytes: 64 * 1024, heartbeat: .seconds(1)
                ) { await api.respond(to: $0) }
                let client = try SSEClient(
                    port: server.port, path: "/v3/events", headers: ["apikey": apiKey, "onBehalfOf": "bob"])
                return (network, server, client)
            }
            await onThread { client.waitUntilOpen() }
            #expect(client.buffer.contains("perch.session"))
            #expect(metrics.value("perch_sse_connections") == 1)

            try network.unplug()
            let unplugged = ContinuousClock.now
            while metrics.value("perch_sse_connections") > 0, ContinuousClock.now - unplugged < .seconds(12) {
                try await Task.sleep(for: .milliseconds(100))
            }
            // Two heartbeats unacknowledged, then the next heartbeat's write fails: about 3 s.
            #expect(metrics.value("perch_sse_connections") == 0)
            #expect(ContinuousClock.now - unplugged < .seconds(10))
            await onThread { server.stop() }
            _ = client
        }
    }
}

/// A network namespace of the calling thread's own (`unshare(CLONE_NEWNET)`), with its loopback
/// up; ``unplug()`` switches the loopback off, so packets between its sockets are dropped.
final class IsolatedNetwork: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// A socket in the namespace: interface changes through it apply there.
    private let control: Int32

    init() throws {
        // Swift's Glibc module declares neither `unshare` nor `CLONE_NEWNET` (glibc keeps them
        // behind _GNU_SOURCE).
        typealias Unshare = @convention(c) (Int32) -> Int32
        guard let symbol = dlsym(nil, "unshare") else {
            throw Failure(description: "unshare is not in the C library")
        }
        let cloneNewNet: Int32 = 0x4000_0000
        guard unsafeBitCast(symbol, to: Unshare.self)(cloneNewNet) == 0 else {
            throw Failure(description: "unshare(CLONE_NEWNET) failed: errno \(errno)")
        }
        control = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard control >= 0 else { throw Failure(description: "socket failed: errno \(errno)") }
        try setLoopback(up: true)
    }

    deinit { close(control) }

    func unplug() throws { try setLoopback(up: false) }

    private func setLoopback(up: Bool) throws {
        var request = ifreq()
        withUnsafeMutableBytes(of: &request.ifr_ifrn.ifrn_name) { name in
            name.copyBytes(from: Array("lo".utf8) + [0])
        }
        guard ioctl(control, UInt(SIOCGIFFLAGS), &request) == 0 else {
            throw Failure(description: "SIOCGIFFLAGS failed: errno \(errno)")
        }
        if up {
            request.ifr_ifru.ifru_flags |= Int16(IFF_UP)
        } else {
            request.ifr_ifru.ifru_flags &= ~Int16(IFF_UP)
        }
        guard ioctl(control, UInt(SIOCSIFFLAGS), &request) == 0 else {
            throw Failure(description: "SIOCSIFFLAGS failed: errno \(errno)")
        }
    }
}
