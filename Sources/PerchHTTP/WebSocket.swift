import CCrypto
import Foundation

/// RFC 6455's framing: the pure part of the WebSocket endpoint (no I/O), shared by the server and
/// by clients that speak to it (the tests, the loopback bench).
public enum WebSocket {
    /// The handshake's `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key`: the base64 of
    /// the SHA-1 of the key and RFC 6455's GUID.
    public static func acceptValue(for key: String) -> String {
        let bytes = Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        _ = SHA1(bytes, bytes.count, &digest)
        return Data(digest).base64EncodedString()
    }

    /// Whether `key` is a valid `Sec-WebSocket-Key`: the base64 of 16 bytes.
    public static func isValidKey(_ key: String) -> Bool {
        Data(base64Encoded: key)?.count == 16
    }

    public enum Opcode: UInt8, Sendable {
        case continuation = 0x0
        case text = 0x1
        case binary = 0x2
        case close = 0x8
        case ping = 0x9
        case pong = 0xA

        var isControl: Bool { rawValue >= 0x8 }
    }

    /// The close codes Perch sends (RFC 6455 section 7.4.1).
    public enum CloseCode {
        public static let normal: UInt16 = 1000
        public static let goingAway: UInt16 = 1001
        public static let protocolError: UInt16 = 1002
        public static let unsupportedData: UInt16 = 1003
        public static let invalidPayload: UInt16 = 1007
        public static let messageTooBig: UInt16 = 1009
    }

    /// A frame that breaks the protocol: the connection closes with `code`.
    public struct ProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
        public var code: UInt16
        public var reason: String
        public var description: String { "\(code) \(reason)" }
    }

    public struct Frame: Equatable, Sendable {
        public var fin: Bool
        public var opcode: Opcode
        public var payload: [UInt8]

        public init(fin: Bool = true, opcode: Opcode, payload: [UInt8]) {
            self.fin = fin
            self.opcode = opcode
            self.payload = payload
        }
    }

    /// Appends a frame: unmasked as a server sends, masked with `mask` (4 bytes) as a client must.
    public static func append(
        _ opcode: Opcode, _ payload: some Collection<UInt8>, fin: Bool = true, mask: [UInt8]? = nil,
        to out: inout [UInt8]
    ) {
        out.append((fin ? 0x80 : 0) | opcode.rawValue)
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        let count = payload.count
        if count < 126 {
            out.append(maskBit | UInt8(count))
        } else if count <= 0xFFFF {
            out.append(maskBit | 126)
            out.append(UInt8(count >> 8))
            out.append(UInt8(count & 0xFF))
        } else {
            out.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8((UInt64(count) >> UInt64(shift)) & 0xFF))
            }
        }
        if let mask {
            out += mask
            for (index, byte) in payload.enumerated() { out.append(byte ^ mask[index & 3]) }
        } else {
            out += payload
        }
    }

    /// A close frame's payload: the code, then the reason (cut to fit a control frame's 125 bytes).
    public static func closePayload(_ code: UInt16, _ reason: String) -> [UInt8] {
        var reasonBytes = Array(reason.utf8.prefix(123))
        while !reasonBytes.isEmpty, String(validating: reasonBytes, as: UTF8.self) == nil { reasonBytes.removeLast() }
        return [UInt8(code >> 8), UInt8(code & 0xFF)] + reasonBytes
    }

    /// Reads the frame at `start` of `bytes`: the frame and where the next one starts, or nil when
    /// its bytes have not all arrived. `masked`: whether frames must be masked (a server reading a
    /// client's), or must not be (a client reading a server's). A payload longer than
    /// `maximumPayload` is refused as soon as its length is read.
    /// - Throws: ``ProtocolError`` with 1002 (reserved bits, an unknown opcode, a fragmented or
    ///   long control frame, the wrong masking) or 1009 (too long).
    public static func frame(in bytes: [UInt8], at start: Int, masked: Bool, maximumPayload: Int) throws(ProtocolError)
        -> (frame: Frame, next: Int)?
    {
        guard bytes.count - start >= 2 else { return nil }
        let first = bytes[start]
        let second = bytes[start + 1]
        guard first & 0x70 == 0 else { throw ProtocolError(code: CloseCode.protocolError, reason: "reserved bits set") }
        guard let opcode = Opcode(rawValue: first & 0x0F) else {
            throw ProtocolError(code: CloseCode.protocolError, reason: "unknown opcode \(first & 0x0F)")
        }
        let fin = first & 0x80 != 0
        let isMasked = second & 0x80 != 0
        guard isMasked == masked else {
            throw ProtocolError(
                code: CloseCode.protocolError, reason: masked ? "a client's frames must be masked" : "masked frame")
        }
        var index = start + 2
        var length = UInt64(second & 0x7F)
        if length == 126 {
            guard bytes.count - index >= 2 else { return nil }
            length = UInt64(bytes[index]) << 8 | UInt64(bytes[index + 1])
            index += 2
        } else if length == 127 {
            guard bytes.count - index >= 8 else { return nil }
            length = bytes[index..<index + 8].reduce(0) { $0 << 8 | UInt64($1) }
            index += 8
        }
        if opcode.isControl {
            guard fin, length <= 125 else {
                throw ProtocolError(code: CloseCode.protocolError, reason: "control frames are short and whole")
            }
        }
        guard length <= UInt64(maximumPayload) else {
            throw ProtocolError(code: CloseCode.messageTooBig, reason: "a message is at most \(maximumPayload) bytes")
        }
        let count = Int(length)
        let maskStart = index
        if masked { index += 4 }
        guard bytes.count - index >= count else { return nil }
        var payload = Array(bytes[index..<index + count])
        if masked {
            for offset in 0..<count { payload[offset] ^= bytes[maskStart + (offset & 3)] }
        }
        return (Frame(fin: fin, opcode: opcode, payload: payload), index + count)
    }

    /// What a peer's frames amount to, once fragments are put together.
    public enum Message: Equatable, Sendable {
        case text([UInt8])
        case ping([UInt8])
        case pong
        /// The peer closes: its code (nil when it gave none) and reason.
        case close(UInt16?, String)
    }

    /// Puts a peer's frames together into messages: text messages (in fragments or whole), pings,
    /// pongs and the close.
    public struct Assembler: Sendable {
        let maximumMessage: Int
        private var fragments: [UInt8] = []
        private var inMessage = false

        /// `maximumMessage`: the longest text message, in bytes, fragments together.
        public init(maximumMessage: Int) {
            self.maximumMessage = maximumMessage
        }

        /// The message `frame` completes, if any.
        /// - Throws: ``ProtocolError`` with 1003 (a binary message), 1007 (text that is not UTF-8,
        ///   a malformed close), 1002 (a continuation out of place, a bad close code) or 1009.
        public mutating func add(_ frame: Frame) throws(ProtocolError) -> Message? {
            switch frame.opcode {
            case .ping: return .ping(frame.payload)
            case .pong: return .pong
            case .close: return try Self.close(frame.payload)
            case .binary:
                throw ProtocolError(code: CloseCode.unsupportedData, reason: "only text messages are understood")
            case .text:
                guard !inMessage else {
                    throw ProtocolError(code: CloseCode.protocolError, reason: "a new message inside a fragmented one")
                }
                if frame.fin { return try Self.text(frame.payload) }
                inMessage = true
                fragments = frame.payload
                return nil
            case .continuation:
                guard inMessage else {
                    throw ProtocolError(code: CloseCode.protocolError, reason: "a continuation without a message")
                }
                guard fragments.count + frame.payload.count <= maximumMessage else {
                    throw ProtocolError(
                        code: CloseCode.messageTooBig, reason: "a message is at most \(maximumMessage) bytes")
                }
                fragments += frame.payload
                guard frame.fin else { return nil }
                inMessage = false
                defer { fragments = [] }
                return try Self.text(fragments)
            }
        }

        static func text(_ bytes: [UInt8]) throws(ProtocolError) -> Message {
            guard String(validating: bytes, as: UTF8.self) != nil else {
                throw ProtocolError(code: CloseCode.invalidPayload, reason: "text must be UTF-8")
            }
            return .text(bytes)
        }

        static func close(_ payload: [UInt8]) throws(ProtocolError) -> Message {
            guard !payload.isEmpty else { return .close(nil, "") }
            guard payload.count >= 2 else {
                throw ProtocolError(code: CloseCode.protocolError, reason: "a close code is two bytes")
            }
            let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
            // Codes a peer may send: 1000-1003, 1007-1011, and 3000-4999 (registered and private).
            guard (1000...1003).contains(code) || (1007...1011).contains(code) || (3000...4999).contains(code) else {
                throw ProtocolError(code: CloseCode.protocolError, reason: "close code \(code) may not be sent")
            }
            guard let reason = String(validating: payload[2...], as: UTF8.self) else {
                throw ProtocolError(code: CloseCode.invalidPayload, reason: "a close reason must be UTF-8")
            }
            return .close(code, reason)
        }
    }
}
