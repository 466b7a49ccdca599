import Foundation
import PerchLock
import PerchTestSupport
import Testing

@testable import PerchHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// A WebSocket client over a plain socket, for the tests: the handshake, masked frames out, the
/// server's frames in.
final class WebSocketTestClient: @unchecked Sendable {
    // Used from one test thread at a time.
    let descriptor: Int32
    var buffer: [UInt8] = []
    /// The server closed the connection.
    var ended = false
    /// The handshake's answer: the status line's code and the headers, lowercased names.
    var status = 0
    var headers: [String: String] = [:]

    init(
        port: UInt16, path: String = "/v3/ws", headers extra: [String: String], key: String = "dGhlIHNhbXBsZSBub25jZQ=="
    )
        throws
    {
        descriptor = try connectLoopback(port: port)
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        var handshake = [
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13",
        ]
        for (name, value) in extra { handshake[name] = value }
        for (name, value) in handshake where !value.isEmpty { request += "\(name): \(value)\r\n" }
        write(Array((request + "\r\n").utf8))
        // The answer's head.
        let separator: [UInt8] = [13, 10, 13, 10]
        while true {
            if let end = buffer.indices.first(where: { buffer[$0...].starts(with: separator) }) {
                let head = String(decoding: buffer[..<end], as: UTF8.self).split(separator: "\r\n")
                status = Int(head.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
                for line in head.dropFirst() {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    if parts.count == 2 {
                        headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
                    }
                }
                buffer.removeFirst(end + 4)
                return
            }
            guard fill(timeout: 5) else { throw HTTPServerErrorForTests() }
        }
    }

    /// A client on a socket connected already (one end of a `socketpair`, the server's loop on the
    /// other), past any handshake.
    init(connected descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    func write(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { return }
            sent += count
        }
    }

    /// Sends one masked frame.
    func send(_ opcode: WebSocket.Opcode, _ payload: [UInt8], fin: Bool = true) {
        var frame: [UInt8] = []
        WebSocket.append(opcode, payload, fin: fin, mask: (0..<4).map { _ in UInt8.random(in: 0...255) }, to: &frame)
        write(frame)
    }

    func sendText(_ text: String) { send(.text, Array(text.utf8)) }

    /// Reads more bytes, waiting at most `timeout` seconds; false at the end or on time.
    func fill(timeout: Double) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, Int32(timeout * 1000)) > 0 else { return false }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            ended = true
            return false
        }
        buffer += chunk[0..<count]
        return true
    }

    /// The server's next frame, or nil when none came in `timeout` seconds or the socket closed.
    func frame(timeout: Double = 5) -> WebSocket.Frame? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let (frame, next) = try? WebSocket.frame(in: buffer, at: 0, masked: false, maximumPayload: 1 << 24) {
                buffer.removeFirst(next)
                return frame
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0, fill(timeout: left) else { return nil }
        }
    }

    /// The next text message as JSON (control frames skipped), or nil.
    func message(timeout: Double = 5) -> [String: Any]? {
        while let frame = frame(timeout: timeout) {
            guard frame.opcode == .text else {
                if frame.opcode == .close { return nil }
                continue
            }
            return (try? JSONSerialization.jsonObject(with: Data(frame.payload))) as? [String: Any]
        }
        return nil
    }

    /// Messages until `predicate` holds for one (returned with those before it), or nil on time.
    func messages(until predicate: ([String: Any]) -> Bool, timeout: Double = 5) -> [[String: Any]]? {
        var seen: [[String: Any]] = []
        while let next = message(timeout: timeout) {
            seen.append(next)
            if predicate(next) { return seen }
        }
        return nil
    }

    /// Sends a request and reads until its answer: the answer, and the events that came before it.
    func request(_ id: Int, _ method: String, _ path: String, body: String? = nil) -> (
        answer: [String: Any]?, events: [[String: Any]]
    ) {
        sendText(#"{"id":\#(id),"method":"\#(method)","path":"\#(path)"\#(body.map { #","body":\#($0)"# } ?? "")}"#)
        let seen = messages { $0["type"] as? String == "response" && $0["id"] as? Int == id } ?? []
        return (
            seen.last.flatMap { $0["type"] as? String == "response" ? $0 : nil },
            seen.filter { $0["type"] as? String == "event" }
        )
    }
}

extension [String: Any] {
    var status: Int? { self["status"] as? Int }
    var errorCode: String? { ((self["body"] as? [String: Any])?["error"] as? [String: Any])?["code"] as? String }
    var eventName: String? { self["event"] as? String }
    var eventText: String? {
        ((self["data"] as? [String: Any])?["message"] as? [String: Any])?["text"] as? String
    }
}

/// The close code of the server's next close frame (other frames skipped), or "none".
func closeCode(_ client: WebSocketTestClient) -> String {
    while let frame = client.frame() {
        if frame.opcode == .close, frame.payload.count >= 2 {
            return String(UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]))
        }
    }
    return "none"
}
