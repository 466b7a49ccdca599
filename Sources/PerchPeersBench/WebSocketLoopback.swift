import Foundation
import PerchHTTP
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The person's side over one WebSocket (`GET /v3/ws`), as the peers' websocket client uses one:
/// each message is a request frame (`POST /v3/messages`) written without waiting for its answer;
/// the answers and the bots' replies come back on the same socket. A thread reads it until the
/// closed loop takes it over (``readReplies(until:idle:)``); from then on the closed loop's task
/// reads it right after each send, as the peers' asyncio client reads its websocket on the loop
/// that sends.
final class WebSocketInjector: Injector, @unchecked Sendable {
    private let connection: HTTPConnection
    private let router: ReplyRouter
    private let reading = HandedOverReading()
    /// Answers that were not 200, and how many answers came.
    private let failures = Failures()
    private let answered = Atomic<Int>(0)
    // Used by the reader of the moment only.
    private var inbound: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 65_536)
    private var nextID = 0
    private let writing = NSLock()

    /// Opens the socket as the person (`human`) and starts its reading thread.
    init(port: UInt16, key: String, router: ReplyRouter) throws {
        connection = try HTTPConnection(port: port)
        self.router = router
        try connection.write(
            "GET /v3/ws HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: \(key)\r\nonBehalfOf: human\r\nUpgrade: websocket\r\n"
                + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        guard let status = connection.line(), status.hasPrefix("HTTP/1.1 101") else {
            throw BenchError("the WebSocket handshake failed")
        }
        while let header = connection.lineBytes(), !header.isEmpty {}
        inbound = connection.takeBuffered()
        reading.start(step: step)
    }

    /// Handles the frames received, or reads more once bytes are there, within `milliseconds`:
    /// whether it did (nil: none came; false: the socket ended).
    private func step(_ milliseconds: Int32) -> Bool? {
        if readFrames() { return true }
        guard connection.waitReadable(milliseconds: milliseconds) else { return nil }
        return fill()
    }

    func request(_ text: String) -> [UInt8] {
        let id = writing.withLock {
            nextID += 1
            return nextID
        }
        let body =
            #"{"id":\#(id),"method":"POST","path":"/v3/messages","body":{"receiver":"room","receiverType":"group","category":"message","type":"text","data":{"text":"\#(text)"}}}"#
        var frame: [UInt8] = []
        WebSocket.append(.text, Array(body.utf8), mask: [0x12, 0x34, 0x56, 0x78], to: &frame)
        return frame
    }

    func write(_ frame: [UInt8]) throws {
        try writing.withLock { try connection.write(bytes: frame) }
    }

    /// Writes the message's request; its answer and the reply are read with the replies.
    func send(_ text: String) async throws {
        if let failure = failures.first { throw BenchError("a send was refused: \(failure)") }
        try write(request(text))
    }

    /// Writes every request back to back, without waiting for answers (the server answers them
    /// in order, and stores them in that order).
    func burst(_ texts: [String], injected: @Sendable (Int) -> Void) async throws {
        for (index, text) in texts.enumerated() {
            let frame = request(text)
            injected(index)
            try write(frame)
        }
        if let failure = failures.first { throw BenchError("a burst send was refused: \(failure)") }
    }

    func readReplies(until done: () -> Bool, idle: Double) {
        reading.takeOver(until: done, idle: idle, step: step)
    }

    /// Reads what the socket has into `inbound`; false at its end.
    private func fill() -> Bool {
        let count = chunk.withUnsafeMutableBytes { Glibc.read(connection.descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return false }
        inbound.append(contentsOf: chunk[0..<count])
        return true
    }

    /// Handles the whole frames received; false when there were none.
    private func readFrames() -> Bool {
        var start = 0
        defer { if start > 0 { inbound.removeSubrange(0..<start) } }
        while let (frame, next) = try? WebSocket.frame(in: inbound, at: start, masked: false, maximumPayload: 1 << 24) {
            start = next
            if frame.opcode == .text { handle(frame.payload[...]) }
        }
        return start > 0
    }

    private func handle(_ message: ArraySlice<UInt8>) {
        if message.starts(with: #"{"type":"response""#.utf8) {
            answered.add(1, ordering: .relaxed)
            if find(statusOK, in: message) == nil { failures.add(String(decoding: message.prefix(300), as: UTF8.self)) }
            return
        }
        guard message.starts(with: #"{"type":"event""#.utf8), let body = find(messageKey, in: message),
            let sender = field(senderKey, in: message[body...]), !sender.elementsEqual("human".utf8),
            let text = field(textKey, in: message[body...])
        else { return }
        router.deliver(String(decoding: text, as: UTF8.self))
    }
}

let statusOK = Array(#","status":200,"#.utf8)
