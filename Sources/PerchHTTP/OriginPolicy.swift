import Foundation
import PerchChat

#if canImport(Glibc)
    import Glibc
#endif

/// Which names the server answers to and which pages may change state through it: the defence
/// against DNS rebinding and cross-site requests (docs/security.md, "Browsers and other sites").
///
/// - **Host.** A request's `Host` must be `localhost`, an IP address, or one of `server.hostNames`.
///   A page on an attacker's domain whose name they re-point at 127.0.0.1 (DNS rebinding) sends its
///   own name as `Host`, and is refused (421) before it reaches anything: the development sign-in
///   included. `/healthz` and `/readyz` answer any `Host` (a load balancer checks by address).
/// - **Origin.** A request that changes state (any method but GET, HEAD, OPTIONS) and carries an
///   `Origin` must come from the server's own origin: the `Origin`'s host and port are the request's
///   `Host`, or one of `server.hostNames`. Browsers send `Origin` on every cross-site POST, so
///   another site's form or `fetch` is refused (403); a client that is not a browser sends none. The
///   WebSocket's handshake is checked the same way, as browsers let any page open one.
struct OriginPolicy: Sendable {
    /// `server.hostNames`, lowercased: a name alone takes any port, `name:port` that port only.
    let names: Set<String>

    init(hostNames: [String]) {
        names = Set(hostNames.map { $0.lowercased() })
    }

    /// The refusal of a request from a name or an origin this server does not answer for, or nil.
    func refusal(_ http: HTTPRequest, route: String) -> ChatError? {
        if route != "healthz", route != "readyz", let host = http.header("host"), !accepts(host: host) {
            let reason = "this server does not answer for that name (server.hostNames)"
            return ChatError(.badRequest, ["field": "Host", "reason": .string(reason)])
        }
        let changesState = !["GET", "HEAD", "OPTIONS"].contains(http.method) || route == "ws"
        if changesState, let origin = http.header("origin"), !accepts(origin: origin, host: http.header("host")) {
            let reason = "a page of another site may not do this"
            return ChatError(.permissionDenied, ["field": "Origin", "reason": .string(reason)])
        }
        return nil
    }

    /// Whether `host` (a `Host` header: a name or address, and a port) is one this server answers for.
    func accepts(host: String) -> Bool {
        let (name, port) = Self.split(host.lowercased())
        guard !name.isEmpty else { return false }
        if name == "localhost" || Self.isAddress(name) { return true }
        return names.contains(name) || port.map { names.contains(name + ":" + $0) } ?? false
    }

    /// Whether a page of `origin` (`scheme://host[:port]`) is this server's own: its authority is
    /// the request's `Host`, or a name of `server.hostNames`.
    func accepts(origin: String, host: String?) -> Bool {
        let lowered = origin.lowercased()
        guard let separator = lowered.range(of: "://") else { return false }
        let scheme = lowered[..<separator.lowerBound]
        guard scheme == "http" || scheme == "https" else { return false }
        let authority = String(lowered[separator.upperBound...].prefix { $0 != "/" })
        guard !authority.isEmpty else { return false }
        if let host, authority == host.lowercased() { return true }
        let (name, port) = Self.split(authority)
        return names.contains(name) || port.map { names.contains(name + ":" + $0) } ?? false
    }

    /// A `host[:port]` (an IPv6 address in brackets) as its name and its port.
    static func split(_ authority: String) -> (name: String, port: String?) {
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            let name = String(authority[...close])
            let rest = authority[authority.index(after: close)...]
            return (name, rest.hasPrefix(":") ? String(rest.dropFirst()) : nil)
        }
        guard let colon = authority.lastIndex(of: ":") else { return (authority, nil) }
        return (String(authority[..<colon]), String(authority[authority.index(after: colon)...]))
    }

    /// Whether `name` is an IP address (v4 dotted, or v6 in brackets): no page's domain.
    static func isAddress(_ name: String) -> Bool {
        var scratch = in6_addr()
        if name.hasPrefix("["), name.hasSuffix("]") {
            return inet_pton(AF_INET6, String(name.dropFirst().dropLast()), &scratch) == 1
        }
        return inet_pton(AF_INET, name, &scratch) == 1
    }
}
