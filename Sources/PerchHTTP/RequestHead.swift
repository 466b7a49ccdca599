import PerchChat

/// The head of a connection's first request (its request line and headers), read by the
/// ``ConnectionGate`` before libmicrohttpd gets the connection, so that what the server refuses in
/// a head it refuses as a JSON error, like every other refusal, and never in libmicrohttpd's own
/// HTML answers (400, 414, 431, 505).
///
/// It checks what it must to decide whether the request is one libmicrohttpd and the API will read
/// as it was meant; it parses nothing more (libmicrohttpd reads the request again, whole).
struct RequestHead {
    var method: String
    /// The request-target as sent (not decoded).
    var target: String
    /// `HTTP/1.1` or `HTTP/1.0`.
    var version: String
    /// Header names lowercased, in order, with their values trimmed.
    var headers: [(name: String, value: String)]

    /// The path of the target: before `?`.
    var path: Substring { target.prefix { $0 != "?" } }

    func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// The longest request-target taken (414 past it).
    static let maximumTargetBytes = 8_192
    /// The longest head taken, the request line and every header (431 past it).
    static let maximumHeadBytes = 16_384

    /// A head refused: its status and its error.
    struct Refusal: Error {
        var status: Int
        var error: ChatError

        init(_ status: Int, _ field: String, _ reason: String) {
            self.status = status
            error = .badRequest(field, reason)
        }
    }

    /// Where the head ends in `bytes` (the index past its blank line), or nil while it is not all in.
    static func end(in bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var index = bytes.startIndex
        while index <= bytes.endIndex - 4 {
            if bytes[index] == 13, bytes[index + 1] == 10, bytes[index + 2] == 13, bytes[index + 3] == 10 {
                return index + 4
            }
            index += 1
        }
        return nil
    }

    /// What can be refused before the head is all in: a request line too long to be one, or one
    /// that is not HTTP/1 (checked once its line end is in).
    static func refusalSoFar(_ bytes: ArraySlice<UInt8>) -> Refusal? {
        guard let lineEnd = bytes.firstIndex(of: 10) else {
            return bytes.count > maximumTargetBytes + 64
                ? Refusal(414, "path", "the request line is longer than \(maximumTargetBytes) bytes") : nil
        }
        if case .failure(let refusal) = requestLine(bytes[bytes.startIndex..<lineEnd]) { return refusal }
        return nil
    }

    /// Parses and checks a whole head (without its blank line).
    static func parse(_ bytes: ArraySlice<UInt8>) -> Result<RequestHead, Refusal> {
        guard bytes.count <= maximumHeadBytes else {
            return .failure(Refusal(431, "headers", "the request's head is longer than \(maximumHeadBytes) bytes"))
        }
        var lines = bytes.split(separator: 10, omittingEmptySubsequences: false).map { line in
            line.last == 13 ? line.dropLast() : line
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first else { return .failure(Refusal(400, "request", "an empty request")) }
        let (method, target, version): (String, String, String)
        switch requestLine(first) {
        case .success(let line): (method, target, version) = line
        case .failure(let refusal): return .failure(refusal)
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else {
                return .failure(Refusal(400, "headers", "a header line without a name and a colon"))
            }
            let name = line[line.startIndex..<colon]
            // No space before the colon (RFC 9112 §5.1), nor folded lines: readers differ on them.
            guard name.allSatisfy(isTokenByte) else {
                return .failure(Refusal(400, "headers", "a header name that is not a token"))
            }
            let value = line[(colon + 1)...]
            guard value.allSatisfy({ $0 == 9 || ($0 >= 0x20 && $0 != 0x7F) }) else {
                return .failure(Refusal(400, String(decoding: name, as: UTF8.self), "a control character in the value"))
            }
            headers.append(
                (
                    String(decoding: name, as: UTF8.self).lowercased(),
                    String(decoding: value, as: UTF8.self).trimmingCharacters(in: .whitespaces)
                ))
        }
        let head = RequestHead(method: method, target: target, version: version, headers: headers)
        if let refusal = head.refusal() { return .failure(refusal) }
        return .success(head)
    }

    /// The method and target of a request line, or its refusal: 505 for another HTTP version, 414
    /// for a target too long, 400 for anything that is not a request line.
    static func requestLine(_ line: ArraySlice<UInt8>) -> Result<(String, String, String), Refusal> {
        let line = line.last == 13 ? line.dropLast() : line
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenByte) else {
            return .failure(Refusal(400, "request", "not an HTTP request line"))
        }
        let version = String(decoding: parts[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            if version.hasPrefix("HTTP/") {
                return .failure(Refusal(505, "version", "this server speaks HTTP/1.1 (and 1.0), not \(version)"))
            }
            return .failure(Refusal(400, "request", "not an HTTP request line"))
        }
        guard parts[1].count <= maximumTargetBytes else {
            return .failure(Refusal(414, "path", "the request's target is longer than \(maximumTargetBytes) bytes"))
        }
        let target = parts[1]
        guard target.first == UInt8(ascii: "/") || target.elementsEqual("*".utf8),
            target.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            return .failure(Refusal(400, "path", "a request's target is a path (origin-form)"))
        }
        return .success(
            (String(decoding: parts[0], as: UTF8.self), String(decoding: target, as: UTF8.self), version))
    }

    /// The checks of a whole head past its syntax: a NUL in the target, a header that may come once
    /// given twice, a body framed other than by one `Content-Length` (``RequestScreen`` makes the
    /// same checks on every later request of the connection), and no `Host` in an HTTP/1.1 request.
    func refusal() -> Refusal? {
        if target.range(of: "%00", options: .caseInsensitive) != nil {
            return Refusal(400, "path", "a NUL (%00) in the path or the query")
        }
        var counts: [String: Int] = [:]
        for (name, _) in headers { counts[name, default: 0] += 1 }
        if let repeated = counts.filter({ $0.value > 1 }).keys.compactMap({ RequestScreen.singleHeaders[$0] }).sorted()
            .first
        {
            return Refusal(400, repeated, "given more than once")
        }
        if counts["transfer-encoding"] != nil {
            if counts["content-length"] != nil {
                return Refusal(400, "Transfer-Encoding", "given with a Content-Length")
            }
            return Refusal(411, "Transfer-Encoding", "this server takes bodies with a Content-Length, not chunked")
        }
        if let length = header("content-length"),
            length.isEmpty || !length.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        {
            return Refusal(400, "Content-Length", "not a number of bytes")
        }
        if header("host") == nil, version == "HTTP/1.1" {
            return Refusal(400, "Host", "an HTTP/1.1 request names its Host")
        }
        return nil
    }

    /// RFC 9110's `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        default: return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
