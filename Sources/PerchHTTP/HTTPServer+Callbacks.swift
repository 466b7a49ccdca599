import CMicroHTTPD
import Dispatch
import Foundation
import PerchLock

private func collect(_ connection: OpaquePointer?, _ kind: MHD_ValueKind, lowercase: Bool) -> [String: String] {
    // Counted first (no iterator), so the dictionary is made at its size once.
    var values: [String: String] = [:]
    let count = MHD_get_connection_values(connection, kind, nil, nil)
    guard count > 0 else { return values }
    values.reserveCapacity(Int(count))
    withUnsafeMutablePointer(to: &values) { pointer in
        _ = MHD_get_connection_values(
            connection, kind, lowercase ? collectLowercased : collectAsSent, UnsafeMutableRawPointer(pointer))
    }
    return values
}

private let collectAsSent: MHD_KeyValueIterator = { context, _, key, value in
    guard let context, let key else { return .YES }
    context.assumingMemoryBound(to: [String: String].self).pointee[String(cString: key)] =
        value.map { String(cString: $0) } ?? ""
    return .YES
}

/// Header names: case does not matter in them (RFC 9110 §5.1).
private let collectLowercased: MHD_KeyValueIterator = { context, _, key, value in
    guard let context, let key else { return .YES }
    context.assumingMemoryBound(to: [String: String].self).pointee[String(cString: key).lowercased()] =
        value.map { String(cString: $0) } ?? ""
    return .YES
}

/// libmicrohttpd's messages (a format and its arguments), as one line each to the server's `log`.
let serverLog: MHD_LogCallback = { context, format, arguments in
    guard let context, let format, let arguments else { return }
    var buffer = [CChar](repeating: 0, count: 512)
    _ = vsnprintf(&buffer, buffer.count, format, arguments)
    let message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    guard !message.isEmpty else { return }
    let serverContext = Unmanaged<ServerContext>.fromOpaque(context).takeUnretainedValue()
    guard !serverContext.isAboutClosingOnPurpose(message) else { return }
    serverContext.log(message)
}

let accessHandler: MHD_AccessHandlerCallback = {
    context, connection, url, method, _, uploadData, uploadSize, requestContext in
    guard let context, let requestContext, let uploadSize else { return .NO }
    if requestContext.pointee == nil {
        requestContext.pointee = Unmanaged.passRetained(RequestState()).toOpaque()
    }
    let state = Unmanaged<RequestState>.fromOpaque(requestContext.pointee!).takeUnretainedValue()
    guard let server = Unmanaged<ServerContext>.fromOpaque(context).takeUnretainedValue().server.withLock({ $0?.value })
    else { return .NO }
    if !state.screened {
        // The head is in and no byte of the body is read yet.
        state.screened = true
        state.headAt = DispatchTime.now().uptimeNanoseconds
        if let refusal = RequestScreen.refusal(
            connection, rawURI: state.rawURI, maximumBodyBytes: server.maximumBodyBytes)
        {
            return queue(refusal, on: connection, server: server)
        }
        return .YES
    }
    if uploadSize.pointee > 0 {
        state.received += uploadSize.pointee
        if server.bodyIsLate(startedAt: state.headAt, received: state.received) {
            // libmicrohttpd takes no answer in the middle of a body: the connection is closed.
            server.refused("body_timeout")
            Unmanaged<ServerContext>.fromOpaque(context).takeUnretainedValue().closingConnectionOnPurpose()
            return .NO
        }
        if !state.tooLarge, let uploadData {
            if state.body.count + uploadSize.pointee > server.maximumBodyBytes {
                state.tooLarge = true
                state.body = []
            } else {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: uploadSize.pointee) { bytes in
                    state.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: uploadSize.pointee))
                }
            }
        }
        uploadSize.pointee = 0
        return .YES
    }
    let response: HTTPResponse
    if state.tooLarge {
        response = .json(
            413,
            #"{"error":{"code":"ERR_BAD_REQUEST","message":"The body is larger than \#(server.maximumBodyBytes) bytes.","details":{"field":"body","limit":\#(server.maximumBodyBytes)}}}"#
        )
    } else {
        let path = url.map { String(cString: $0) } ?? "/"
        let request = HTTPRequest(
            method: method.map { String(cString: $0) } ?? "GET", path: path,
            query: collect(connection, .GET_ARGUMENT_KIND, lowercase: false),
            headers: collect(connection, .HEADER_KIND, lowercase: true), body: state.body)
        let executor: ThreadExecutor
        (response, executor) = server.respond(to: request)
        if response.stream == nil, response.upgrade == nil {
            state.executor = executor
        } else {
            // A stream's request completes when the stream ends: nothing waits that long.
            executor.stop()
        }
    }
    return queue(admit(response, into: state, server: server), on: connection, server: server)
}

/// Runs an upgraded connection on the connection's thread (libmicrohttpd calls this once the 101
/// is sent; a thread-per-connection daemon lets it block), then hands the socket back to be closed.
let upgradeHandler: MHD_UpgradeHandler = { context, _, requestContext, extra, extraSize, socket, handle in
    guard let context, let requestContext else {
        _ = perch_mhd_upgrade_close(handle)
        return
    }
    let serverContext = Unmanaged<ServerContext>.fromOpaque(context).takeUnretainedValue()
    let state = Unmanaged<RequestState>.fromOpaque(requestContext).takeUnretainedValue()
    if let upgraded = state.upgrade {
        state.upgrade = nil
        serverContext.upgrade(running: true)
        if serverContext.isOpen(upgraded) {
            let bytes = extra.map { Array(UnsafeRawBufferPointer(start: $0, count: extraSize)) } ?? []
            upgraded.run(socket: socket, extra: bytes)
            serverContext.closed(upgraded)
        }
        serverContext.upgrade(running: false)
    }
    _ = perch_mhd_upgrade_close(handle)
}

let completedHandler: MHD_RequestCompletedCallback = { context, _, requestContext, _ in
    if let context {
        _ = Unmanaged<ServerContext>.fromOpaque(context).takeUnretainedValue().isAboutClosingOnPurpose(nil)
    }
    guard let requestContext, let pointer = requestContext.pointee else { return }
    let state = Unmanaged<RequestState>.fromOpaque(pointer).takeRetainedValue()
    requestContext.pointee = nil
    if let executor = state.executor { HTTPServer.finish(executor) }
    // An upgrade whose loop never started (the client left before the 101 went out).
    if let upgrade = state.upgrade, let context {
        Unmanaged<ServerContext>.fromOpaque(context).takeUnretainedValue().closed(upgrade)
    }
}

/// A streamed body's reader state, owned by libmicrohttpd until its free callback.
final class StreamBox {
    let source: any EventStreamSource
    let heartbeat: Duration
    let context: ServerContext
    /// The connection's socket (-1 when unknown), watched for the client hanging up.
    let socket: Int32
    var pending: [UInt8] = []
    var finished = false

    init(source: any EventStreamSource, heartbeat: Duration, context: ServerContext, socket: Int32) {
        self.source = source
        self.heartbeat = heartbeat
        self.context = context
        self.socket = socket
    }
}

/// The socket of an MHD connection, or -1.
func connectionSocket(_ connection: OpaquePointer?) -> Int32 { perch_mhd_socket(connection) }

/// Has the kernel give up on `connection` once what was sent on it went unacknowledged for
/// `timeout` (`TCP_USER_TIMEOUT`): the connection then fails and closes at its next write. An event
/// stream writes at least a heartbeat, but only the client's TCP acknowledges it: a client that
/// vanished without closing (a laptop asleep, a phone off the network) would otherwise hold its
/// connection, its thread and a stream slot until the kernel's retransmissions run out, about 15
/// minutes.
func giveUpUnacknowledged(_ connection: OpaquePointer?, after timeout: Duration) {
    let (seconds, attoseconds) = timeout.components
    let milliseconds = UInt32(clamping: max(1, seconds * 1_000 + attoseconds / 1_000_000_000_000_000))
    _ = perch_mhd_give_up_unacknowledged(connection, milliseconds)
}

/// The answer to a stream beyond the server's `maximumStreams`.
func tooManyStreams(_ limit: Int) -> HTTPResponse {
    var response = HTTPResponse.json(
        503,
        #"{"error":{"code":"ERR_TOO_MANY_STREAMS","message":"The server has \#(limit) streams open, its limit; try again shortly.","details":{"limit":\#(limit),"retryAfter":5}}}"#
    )
    // The connection closes after the answer: a refused client does not keep a connection that
    // the requests which are not streams need.
    response.headers += [("Retry-After", "5"), ("Connection", "close")]
    return response
}

/// Records a stream or an upgrade among the server's open ones (it leaves them when it ends), or
/// answers 503 in its place when `maximumStreams` are open. Other answers pass as they are.
func admit(_ response: HTTPResponse, into state: RequestState, server: HTTPServer) -> HTTPResponse {
    guard let opened = response.stream.map({ $0 as any FinishableConnection }) ?? response.upgrade else {
        return response
    }
    switch server.context.open(opened, limit: server.maximumStreams) {
    case .opened: break
    case .stopping:
        // A stream ends at once; an upgrade is not run (``upgradeHandler``).
        response.stream?.finish()
    case .full:
        response.stream?.finish()
        response.stream?.close()
        return tooManyStreams(server.maximumStreams)
    }
    state.upgrade = response.upgrade
    return response
}

func queue(_ response: HTTPResponse, on connection: OpaquePointer?, server: HTTPServer) -> MHD_Result {
    let mhdResponse: OpaquePointer?
    if response.upgrade != nil {
        mhdResponse = MHD_create_response_for_upgrade(
            upgradeHandler, Unmanaged.passUnretained(server.context).toOpaque())
    } else if let stream = response.stream {
        giveUpUnacknowledged(connection, after: server.heartbeat * 2)
        let box = StreamBox(
            source: stream, heartbeat: server.heartbeat, context: server.context, socket: connectionSocket(connection))
        mhdResponse = MHD_create_response_from_callback(
            perch_mhd_size_unknown(), 4096,
            { context, _, buffer, maximum in
                guard let context, let buffer else { return perch_mhd_end_of_stream() }
                let box = Unmanaged<StreamBox>.fromOpaque(context).takeUnretainedValue()
                if box.pending.isEmpty {
                    if box.finished { return perch_mhd_end_of_stream() }
                    switch box.source.next(timeout: box.heartbeat, socket: box.socket) {
                    case nil:
                        box.finished = true
                        return perch_mhd_end_of_stream()
                    case let chunk? where chunk.isEmpty:
                        box.pending = Array(": heartbeat\n\n".utf8)
                    case let chunk?:
                        box.pending = chunk
                    }
                }
                let count = min(maximum, box.pending.count)
                box.pending.withUnsafeBytes { bytes in
                    UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress!, byteCount: count)
                }
                box.pending.removeFirst(count)
                return count
            }, Unmanaged.passRetained(box).toOpaque(),
            { context in
                guard let context else { return }
                let box = Unmanaged<StreamBox>.fromOpaque(context).takeRetainedValue()
                box.context.closed(box.source)
                box.source.close()
            })
    } else {
        mhdResponse = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
    }
    guard let mhdResponse else {
        if let stream = response.stream { server.context.closed(stream) }
        return .NO
    }
    addHeaders(response.headers, to: mhdResponse)
    let result = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    MHD_destroy_response(mhdResponse)
    return result
}

/// Adds `headers` to a libmicrohttpd response (which copies each name and value): their C strings
/// are laid out in one buffer, instead of one C string made for each short name and value.
func addHeaders(_ headers: [(String, String)], to response: OpaquePointer) {
    var bytes = 0
    for (name, value) in headers { bytes += name.utf8.count + value.utf8.count + 2 }
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: max(bytes, 1)) { buffer in
        guard let base = buffer.baseAddress else { return }
        var used = 0
        func put(_ text: String) -> UnsafePointer<CChar> {
            let start = base + used
            for byte in text.utf8 {
                buffer[used] = CChar(bitPattern: byte)
                used += 1
            }
            buffer[used] = 0
            used += 1
            return UnsafePointer(start)
        }
        for (name, value) in headers {
            let name = put(name)
            MHD_add_response_header(response, name, put(value))
        }
    }
}

/// A connection's client address, kept from its start to its end.
final class AddressBox {
    let address: String
    init(_ address: String) { self.address = address }
}

/// libmicrohttpd's connections by client address, for the gate's limit per client.
let connectionNotifier: perch_mhd_connection_notifier = { context, connection, socketContext, code in
    guard let context, let socketContext else { return }
    let server = Unmanaged<ServerContext>.fromOpaque(context).takeUnretainedValue()
    if code.rawValue == 0 {  // MHD_CONNECTION_NOTIFY_STARTED
        var buffer = [CChar](repeating: 0, count: 64)
        let address = perch_mhd_client_address(connection, &buffer, 64) == 0 ? String(cString: buffer) : ""
        server.counts.opened(address)
        socketContext.pointee = Unmanaged.passRetained(AddressBox(address)).toOpaque()
    } else if let pointer = socketContext.pointee {  // MHD_CONNECTION_NOTIFY_CLOSED
        socketContext.pointee = nil
        server.counts.closed(Unmanaged<AddressBox>.fromOpaque(pointer).takeRetainedValue().address)
    }
}
