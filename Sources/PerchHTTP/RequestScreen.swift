import CMicroHTTPD
import Foundation
import PerchChat

/// The checks every request passes once its head is in, before its body is read or a route sees
/// it: what one reader of a request could take one way and another reader another way is refused
/// (docs/security.md, "What the server refuses").
///
/// - A NUL anywhere in the path or the query (`%00`): decoded, it would cut the path or a value short
///   (`/v3/messages/1%00x` read as message 1, `/web/app.js%00.png` as app.js).
/// - A header that says who calls or how long the body is, given twice: two `Content-Length`s, two
///   `apikey`s, two `Host`s. Which of the two counts would depend on the reader.
/// - A body sent with `Transfer-Encoding` (chunked): refused at once with 411, so a chunk size
///   meant to hold the connection (or to be read differently by a proxy in front) never is.
/// - A `Content-Length` far over the largest body the server takes (by more than
///   ``drainAllowance``): 413 before any byte of it is read. One over it by less is read and
///   dropped first, then answered 413: a client still sending its body would otherwise see its
///   connection reset instead of the answer.
enum RequestScreen {
    /// Headers that may appear once: each names who calls, where the request goes, or how much
    /// body follows.
    /// By lowercased name, the name as a refusal spells it.
    static let singleHeaders: [String: String] = [
        "content-length": "Content-Length", "transfer-encoding": "Transfer-Encoding", "host": "Host",
        "apikey": "apikey", "onbehalfof": "onBehalfOf", "authtoken": "authtoken", "x-perch-session": "X-Perch-Session",
        "origin": "Origin", "content-type": "Content-Type", "last-event-id": "Last-Event-ID",
        "sec-websocket-key": "Sec-WebSocket-Key",
    ]

    /// The refusal of a request whose head fails a check, or nil.
    static func refusal(_ connection: OpaquePointer?, rawURI: String, maximumBodyBytes: Int) -> HTTPResponse? {
        if rawURI.range(of: "%00", options: .caseInsensitive) != nil {
            return answer(400, .badRequest("path", "a NUL (%00) in the path or the query"))
        }
        let counts = headerCounts(connection)
        if let repeated = counts.filter({ $0.value > 1 }).keys.compactMap({ singleHeaders[$0] }).sorted().first {
            return answer(400, .badRequest(repeated, "given more than once"))
        }
        if counts["transfer-encoding"] != nil {
            if counts["content-length"] != nil {
                return answer(400, .badRequest("Transfer-Encoding", "given with a Content-Length"))
            }
            return answer(
                411, .badRequest("Transfer-Encoding", "this server takes bodies with a Content-Length, not chunked"))
        }
        if let text = header(connection, "content-length"), let length = Int(text),
            length > maximumBodyBytes + drainAllowance
        {
            let reason = "larger than \(maximumBodyBytes) bytes"
            return answer(
                413,
                ChatError(
                    .badRequest, ["field": "body", "reason": .string(reason), "limit": .int(Int64(maximumBodyBytes))]))
        }
        return nil
    }

    static func answer(_ status: Int, _ error: ChatError) -> HTTPResponse {
        var response = HTTPResponse.json(status, APIJSON.error(error))
        response.headers.append(("Connection", "close"))
        return response
    }

    /// How far past the body limit a body is still read (and dropped) before its 413.
    static let drainAllowance = 1 << 20

    /// How many times each header (by lowercased name) was sent.
    static func headerCounts(_ connection: OpaquePointer?) -> [String: Int] {
        var counts: [String: Int] = [:]
        withUnsafeMutablePointer(to: &counts) { pointer in
            _ = MHD_get_connection_values(connection, .HEADER_KIND, countHeader, UnsafeMutableRawPointer(pointer))
        }
        return counts
    }

    static func header(_ connection: OpaquePointer?, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
    }
}

private let countHeader: MHD_KeyValueIterator = { context, _, key, _ in
    guard let context, let key else { return .YES }
    context.assumingMemoryBound(to: [String: Int].self).pointee[String(cString: key).lowercased(), default: 0] += 1
    return .YES
}

/// The request line's URI, before libmicrohttpd decodes it: a new request's state starts here.
let uriLogger: perch_mhd_uri_logger = { _, uri, _ in
    let state = RequestState()
    state.rawURI = uri.map { String(cString: $0) } ?? ""
    return Unmanaged.passRetained(state).toOpaque()
}
