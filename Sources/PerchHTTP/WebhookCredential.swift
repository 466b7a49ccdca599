import CCrypto
import PerchHost

/// What a request to `POST /v3/hooks/{name}` presents instead of the app's API key: the body's
/// HMAC-SHA256 under the rule's secret (`X-Hub-Signature-256: sha256=HEX`, GitHub's and Gitea's
/// signature), or the secret itself (`X-Gitlab-Token`, or `Authorization: Bearer`). Each is
/// compared in time independent of where it differs.
enum WebhookCredential: Sendable {
    /// The signature's hex digits, in lower case.
    case signature(String)
    case token(String)

    static let wanted =
        "this endpoint needs the apikey, or the webhook's secret: X-Hub-Signature-256 (the body's HMAC-SHA256), "
        + "X-Gitlab-Token or Authorization: Bearer"

    init?(_ http: HTTPRequest) {
        if let signature = http.header("x-hub-signature-256") {
            // A signature that is not one stays a credential that matches nothing.
            self = .signature(signature.hasPrefix("sha256=") ? signature.dropFirst(7).lowercased() : "")
        } else if let token = http.header("x-gitlab-token") {
            self = .token(token)
        } else if let authorization = http.header("authorization"), authorization.hasPrefix("Bearer ") {
            self = .token(String(authorization.dropFirst("Bearer ".count)))
        } else {
            return nil
        }
    }

    func accepts(secret: String, body: [UInt8]) -> Bool {
        switch self {
        case .signature(let presented):
            // Compared as hex, the form it came in (Secrets.hex writes lower case).
            let expected = Array(Secrets.hex(WebhookSignature.hmacSHA256(key: secret, body)).utf8)
            let given = Array(presented.utf8)
            return given.count == expected.count && CRYPTO_memcmp(given, expected, expected.count) == 0
        case .token(let token):
            return Secrets.matches(token, digest: Secrets.digest(secret))
        }
    }
}
