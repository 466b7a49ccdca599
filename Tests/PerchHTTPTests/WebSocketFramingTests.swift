import Foundation
import PerchLock
import PerchTestSupport
import Testing

@testable import PerchHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// RFC 6455's framing, without a socket.
@Suite struct WebSocketFramingTests {
    /// RFC 6455 section 1.3's example.
    @Test func theAcceptValueIsTheRFCsExample() {
        #expect(WebSocket.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(WebSocket.isValidKey("dGhlIHNhbXBsZSBub25jZQ=="))
        #expect(!WebSocket.isValidKey("short"))
        #expect(!WebSocket.isValidKey("not base64 at all!!!!!!="))
    }

    /// RFC 6455 section 5.7's examples: a masked "Hello" and the three lengths' encodings.
    @Test func framesReadAndWriteAsTheRFCsExamples() throws {
        let masked: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        let read = try #require(try WebSocket.frame(in: masked, at: 0, masked: true, maximumPayload: 100))
        #expect(read.frame == WebSocket.Frame(opcode: .text, payload: Array("Hello".utf8)))
        #expect(read.next == masked.count)
        var written: [UInt8] = []
        WebSocket.append(.text, Array("Hello".utf8), mask: [0x37, 0xFA, 0x21, 0x3D], to: &written)
        #expect(written == masked)
        var unmasked: [UInt8] = []
        WebSocket.append(.text, Array("Hello".utf8), to: &unmasked)
        #expect(unmasked == [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        for count in [125, 126, 65_535, 65_536, 70_000] {
            var frame: [UInt8] = []
            let payload = [UInt8](repeating: 0x61, count: count)
            WebSocket.append(.binary, payload, to: &frame)
            #expect(frame.count == count + (count < 126 ? 2 : count <= 65_535 ? 4 : 10))
            let back = try #require(try WebSocket.frame(in: frame, at: 0, masked: false, maximumPayload: 1 << 20))
            #expect(back.frame.payload == payload)
            // Cut short anywhere, it is not there yet.
            #expect(
                try WebSocket.frame(in: Array(frame.dropLast()), at: 0, masked: false, maximumPayload: 1 << 20) == nil)
            #expect(
                try WebSocket.frame(in: Array(frame.prefix(3)), at: 0, masked: false, maximumPayload: 1 << 20) == nil)
        }
    }

    @Test func framesThatBreakTheProtocolAreRefusedWithTheirCloseCode() {
        func code(_ bytes: [UInt8], masked: Bool = true, maximum: Int = 100) -> UInt16? {
            do {
                _ = try WebSocket.frame(in: bytes, at: 0, masked: masked, maximumPayload: maximum)
                return nil
            } catch { return error.code }
        }
        let mask: [UInt8] = [1, 2, 3, 4]
        #expect(code([0x81, 0x00]) == 1002)  // a client's frame unmasked
        #expect(code([0x81, 0x80] + mask, masked: false) == 1002)  // a server's frame masked
        #expect(code([0xC1, 0x80] + mask) == 1002)  // a reserved bit
        #expect(code([0x83, 0x80] + mask) == 1002)  // opcode 3 is reserved
        #expect(code([0x09, 0x80] + mask) == 1002)  // a fragmented ping
        #expect(code([0x89, 0xFE, 0x00, 0x7E] + mask) == 1002)  // a ping of 126 bytes
        #expect(code([0x81, 0xFE, 0x01, 0x00] + mask) == 1009)  // 256 bytes against 100
    }

    @Test func theAssemblerJoinsFragmentsAndAnswersControlFramesBetweenThem() throws {
        var assembler = WebSocket.Assembler(maximumMessage: 10)
        #expect(try assembler.add(.init(fin: false, opcode: .text, payload: Array("Hel".utf8))) == nil)
        #expect(try assembler.add(.init(opcode: .ping, payload: [7])) == .ping([7]))
        #expect(try assembler.add(.init(fin: false, opcode: .continuation, payload: Array("lo ".utf8))) == nil)
        #expect(
            try assembler.add(.init(opcode: .continuation, payload: Array("you".utf8)))
                == .text(Array("Hello you".utf8)))
        #expect(try assembler.add(.init(opcode: .pong, payload: [])) == .pong)
        #expect(
            try assembler.add(.init(opcode: .close, payload: [0x03, 0xE8] + Array("bye".utf8))) == .close(1000, "bye"))
        #expect(try assembler.add(.init(opcode: .close, payload: [])) == .close(nil, ""))

        func refusal(_ frames: [WebSocket.Frame]) -> UInt16? {
            var assembler = WebSocket.Assembler(maximumMessage: 10)
            do {
                for frame in frames { _ = try assembler.add(frame) }
                return nil
            } catch { return error.code }
        }
        #expect(refusal([.init(opcode: .binary, payload: [1])]) == 1003)
        #expect(refusal([.init(opcode: .text, payload: [0xFF, 0xFE])]) == 1007)
        #expect(refusal([.init(opcode: .continuation, payload: [0x61])]) == 1002)
        #expect(
            refusal([.init(fin: false, opcode: .text, payload: [0x61]), .init(opcode: .text, payload: [0x61])]) == 1002)
        #expect(
            refusal([
                .init(fin: false, opcode: .text, payload: Array("123456".utf8)),
                .init(opcode: .continuation, payload: Array("789012".utf8)),
            ]) == 1009)
        #expect(refusal([.init(opcode: .close, payload: [0x03])]) == 1002)
        #expect(refusal([.init(opcode: .close, payload: [0x03, 0xED])]) == 1002)  // 1005 may not be sent
        #expect(refusal([.init(opcode: .close, payload: [0x03, 0xE8, 0xFF])]) == 1007)
    }
}
