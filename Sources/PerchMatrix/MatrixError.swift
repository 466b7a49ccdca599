/// A Matrix call that failed: the server's refusal (its status, `errcode` and message), or no
/// answer at all.
public struct MatrixError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The server answered with an error.
        case refused(status: Int, errcode: String, message: String)
        /// No answer: the connection failed or timed out.
        case unreachable(String)
        /// An answer that is not the JSON the call expects.
        case badAnswer(String)
        /// The caller was cancelled (the host stopping).
        case cancelled
    }

    public var kind: Kind
    /// What was called (`PUT /rooms/{roomId}/send`), for the log.
    public var call: String
    /// How long the server asked to wait before the next call (429's `retry_after_ms`).
    public var retryAfter: Duration?

    public init(_ kind: Kind, call: String, retryAfter: Duration? = nil) {
        self.kind = kind
        self.call = call
        self.retryAfter = retryAfter
    }

    /// The server's `errcode` (`M_FORBIDDEN`), when it refused.
    public var errcode: String? {
        if case .refused(_, let errcode, _) = kind { return errcode }
        return nil
    }

    /// The HTTP status, when the server answered.
    public var status: Int? {
        if case .refused(let status, _, _) = kind { return status }
        return nil
    }

    /// Whether the same call may succeed later: the server was unreachable, failed (5xx) or asked to
    /// wait (429). A refusal for cause (403, 404, 400) is final.
    public var isTransient: Bool {
        switch kind {
        case .unreachable, .badAnswer: return true
        case .refused(let status, _, _): return status == 429 || status >= 500
        case .cancelled: return false
        }
    }

    /// The label of `perch_matrix_errors_total{kind}`: the errcode, `unreachable` or `bad_answer`.
    public var metricKind: String {
        switch kind {
        case .refused(let status, let errcode, _): return errcode.isEmpty ? "HTTP_\(status)" : errcode
        case .unreachable: return "unreachable"
        case .badAnswer: return "bad_answer"
        case .cancelled: return "cancelled"
        }
    }

    public var description: String {
        switch kind {
        case .refused(let status, let errcode, let message):
            return "\(call): \(status) \(errcode)\(message.isEmpty ? "" : ": \(message)")"
        case .unreachable(let reason): return "\(call): the homeserver did not answer (\(reason))"
        case .badAnswer(let reason): return "\(call): an answer that is not what Matrix says (\(reason))"
        case .cancelled: return "\(call): cancelled"
        }
    }
}
