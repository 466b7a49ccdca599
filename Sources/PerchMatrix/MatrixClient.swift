import Foundation
import PerchChat

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One account's calls to a homeserver's client-server API (spec v1.x), over URLSession.
///
/// Every call answers the server's JSON or throws a ``MatrixError``: the server's refusal with its
/// `errcode` (and, for 429, `retry_after_ms` as ``MatrixError/retryAfter``), or no answer. Nothing
/// here retries: the caller knows whether a call may be repeated (a send with the same transaction
/// id may; Matrix answers it with the first event).
public final class MatrixClient: Sendable {
    public let homeserver: URL
    let token: String

    /// One session for every account: libcurl keeps the connections to the homeserver alive.
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["User-Agent": "Perch"]
        configuration.httpMaximumConnectionsPerHost = 64
        return URLSession(configuration: configuration)
    }()

    public init(homeserver: URL, token: String) {
        self.homeserver = homeserver
        self.token = token
    }

    /// A path segment with everything but unreserved characters escaped (`!room:server` →
    /// `%21room%3Aserver`).
    static func segment(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// Calls `method path` (below `/_matrix/client`), with `query` and a JSON `body`, and answers
    /// the JSON the server sent. `timeout`: how long the answer may take (a long-poll waits longer
    /// than its own timeout).
    /// - Throws: ``MatrixError``.
    public func call(
        _ method: String, _ path: String, query: [(String, String)] = [], body: JSONValue? = nil,
        authenticated: Bool = true, timeout: Duration = .seconds(30)
    ) async throws(MatrixError) -> JSONValue {
        let name = "\(method) \(Self.template(path))"
        var components = URLComponents(url: homeserver, resolvingAgainstBaseURL: false)!
        let base =
            components.percentEncodedPath.hasSuffix("/")
            ? String(components.percentEncodedPath.dropLast()) : components.percentEncodedPath
        components.percentEncodedPath = base + "/_matrix/client" + path
        if !query.isEmpty {
            components.percentEncodedQuery = query.map { "\(Self.segment($0.0))=\(Self.segment($0.1))" }
                .joined(separator: "&")
        }
        guard let url = components.url else { throw MatrixError(.badAnswer("no URL for \(path)"), call: name) }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = Double(timeout.components.seconds) + 1
        if authenticated { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = body.encoded
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await Self.session.data(for: request)
        } catch {
            if Task.isCancelled || error is CancellationError { throw MatrixError(.cancelled, call: name) }
            throw MatrixError(.unreachable(error.localizedDescription), call: name)
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let answer = try? JSONValue.parse(data)
        guard (200..<300).contains(status) else {
            let errcode = answer?["errcode"]?.stringValue ?? ""
            let message = answer?["error"]?.stringValue ?? ""
            let retry =
                (answer?["retry_after_ms"]?.intValue).map { Duration.milliseconds($0) }
                ?? (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Retry-After").flatMap(Int64.init)
                .map { Duration.seconds($0) }
            throw MatrixError(
                .refused(status: status, errcode: errcode, message: message), call: name, retryAfter: retry)
        }
        guard let answer else { throw MatrixError(.badAnswer("not JSON"), call: name) }
        return answer
    }

    /// `path` with its ids replaced by their names, for the log and the metrics
    /// (`/v3/rooms/{roomId}/send/m.room.message/{txnId}`).
    static func template(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { part in
            let text = part.removingPercentEncoding ?? String(part)
            if text.hasPrefix("!") { return "{roomId}" }
            if text.hasPrefix("$") { return "{eventId}" }
            if text.hasPrefix("@") { return "{userId}" }
            if text.hasPrefix("#") { return "{roomAlias}" }
            if text.hasPrefix("perch-") { return "{txnId}" }
            return String(part)
        }.joined(separator: "/")
    }
}
