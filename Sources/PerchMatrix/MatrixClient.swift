import Foundation
import PerchChat
import PerchHTTPClient

/// One account's calls to a homeserver's client-server API (spec v1.x), on libcurl (``CurlLane``).
///
/// Every call answers the server's JSON or throws a ``MatrixError``: the server's refusal with its
/// `errcode` (and, for 429, `retry_after_ms` as ``MatrixError/retryAfter``), or no answer. Nothing
/// here retries: the caller knows whether a call may be repeated (a send with the same transaction
/// id may; Matrix answers it with the first event).
public final class MatrixClient: Sendable {
    public let homeserver: URL
    let token: String
    /// The account's calls, one at a time, and its `/sync` long-polls, on a lane of their own so a
    /// long-poll never holds up a send.
    private let calls: CurlLane
    private let polls: CurlLane

    /// Which lane a call goes on.
    public enum Lane: Sendable { case calls, polls }

    public init(homeserver: URL, token: String) {
        self.homeserver = homeserver
        self.token = token
        calls = CurlLane(name: "perch-matrix")
        polls = CurlLane(name: "perch-matrix-sync")
    }

    deinit {
        calls.close()
        polls.close()
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
        authenticated: Bool = true, timeout: Duration = .seconds(30), lane: Lane = .calls
    ) async throws(MatrixError) -> JSONValue {
        // What was called, for an error: the path's ids as their names.
        var name: String { "\(method) \(Self.template(path))" }
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
        let answer: CurlLane.Answer
        do {
            answer = try await (lane == .calls ? calls : polls).perform(
                method, url.absoluteString, headers: authenticated ? [("Authorization", "Bearer \(token)")] : [],
                body: body?.encoded, timeout: timeout)
        } catch {
            if Task.isCancelled || error.cancelled { throw MatrixError(.cancelled, call: name) }
            throw MatrixError(.unreachable(error.reason), call: name)
        }
        let json = try? JSONValue.parse(answer.body)
        guard (200..<300).contains(answer.status) else {
            let errcode = json?["errcode"]?.stringValue ?? ""
            let message = json?["error"]?.stringValue ?? ""
            let retry = (json?["retry_after_ms"]?.intValue).map { Duration.milliseconds($0) }
            throw MatrixError(
                .refused(status: answer.status, errcode: errcode, message: message), call: name, retryAfter: retry)
        }
        guard let json else { throw MatrixError(.badAnswer("not JSON"), call: name) }
        return json
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
