import Foundation

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Tells a service manager how the host stands, as systemd's `Type=notify` services do
/// (sd_notify(3)): `READY=1` once the store is checked, the bots run and the API listens (so
/// `systemctl start perch` returns when the host answers, and units ordered after it start
/// then), `RELOADING=1` and `READY=1` around a reload, `STOPPING=1` at a stop, each with a
/// `STATUS=` line that `systemctl status` shows. The protocol is one datagram per message on the
/// Unix socket named by `NOTIFY_SOCKET` (a path, or `@name` in the abstract namespace); without
/// that variable nothing is sent. Written here rather than linking libsystemd for one `sendto`.
final class ServiceManager: Sendable {
    /// The socket's address, or nil when no service manager listens.
    let socket: String?

    init(socket: String?) {
        self.socket = socket.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The manager named by `NOTIFY_SOCKET`, which is then taken out of the environment: the
    /// plugins the host starts must not speak for it (sd_notify's `unset_environment`).
    static func fromEnvironment() -> ServiceManager {
        let socket = getenv("NOTIFY_SOCKET").map { String(cString: $0) }
        unsetenv("NOTIFY_SOCKET")
        return ServiceManager(socket: socket)
    }

    func ready(status: String) { send(["READY=1", "STATUS=" + status]) }

    /// A reload begins; `ready(status:)` ends it. systemd's `Type=notify-reload` wants the time.
    func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1_000
        send(["RELOADING=1", "MONOTONIC_USEC=\(microseconds)", "STATUS=reloading the configuration"])
    }

    func stopping() { send(["STOPPING=1", "STATUS=stopping"]) }

    /// Sends one message (its lines joined by newlines); whether the manager got it. A manager that
    /// went away is not the host's failure: the host runs on either way.
    @discardableResult
    func send(_ lines: [String]) -> Bool {
        guard let socket, socket.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else { return false }
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socket.utf8)
        // `@name`: Linux's abstract namespace, whose names start with a zero byte.
        if path.first == UInt8(ascii: "@") { path[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            bytes.copyBytes(from: path)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
        let message = Array(lines.joined(separator: "\n").utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                message.withUnsafeBytes {
                    sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), address, length)
                }
            }
        }
        return sent == message.count
    }
}
