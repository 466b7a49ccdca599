import CCrypto
import Foundation
import PerchChat
import PerchHost

/// A request body read strictly: every field a handler reads is checked for its type, and any
/// field it did not read is refused, so a typo is a 400 naming the field, never silently ignored.
struct JSONBody {
    let object: [String: JSONValue]
    let prefix: String
    private(set) var read: Set<String> = []

    init(_ bytes: [UInt8], allowEmpty: Bool = true) throws(ChatError) {
        prefix = ""
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            guard allowEmpty else { throw .badRequest("body", "a JSON object is required") }
            object = [:]
            return
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .badRequest("body", "malformed JSON: not UTF-8")
        }
        let parsed: JSONValue
        do {
            parsed = try JSONValue(parsing: text)
        } catch {
            throw .badRequest("body", "malformed \(error)")
        }
        guard case .object(let dictionary) = parsed else { throw .badRequest("body", "expected a JSON object") }
        object = dictionary
    }

    private init(object: [String: JSONValue], prefix: String) {
        self.object = object
        self.prefix = prefix
    }

    mutating func value(_ key: String) -> JSONValue? {
        // Only the fields present are remembered: a handler asks for a dozen a body mostly lacks.
        guard let value = object[key] else { return nil }
        if read.isEmpty { read.reserveCapacity(object.count) }
        read.insert(key)
        return value == .null ? nil : value
    }

    mutating func string(_ key: String, required: Bool = false) throws(ChatError) -> String? {
        guard let value = value(key) else {
            if required { throw .badRequest(prefix + key, "is required") }
            return nil
        }
        guard case .string(let text) = value else { throw .badRequest(prefix + key, "expected a string") }
        return text
    }

    mutating func int(_ key: String) throws(ChatError) -> Int64? {
        guard let value = value(key) else { return nil }
        switch value {
        case .number(let number) where number == number.rounded() && abs(number) < 9e15: return Int64(number)
        case .string(let text) where Int64(text) != nil: return Int64(text)
        default: throw .badRequest(prefix + key, "expected an integer")
        }
    }

    mutating func bool(_ key: String) throws(ChatError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw .badRequest(prefix + key, "expected true or false") }
        return flag
    }

    mutating func strings(_ key: String) throws(ChatError) -> [String]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else { throw .badRequest(prefix + key, "expected a list of strings") }
        var result: [String] = []
        for item in items {
            guard case .string(let text) = item else { throw .badRequest(prefix + key, "expected a list of strings") }
            result.append(text)
        }
        return result
    }

    mutating func json(_ key: String) -> JSONValue? { value(key) }

    mutating func object(_ key: String) throws(ChatError) -> JSONBody? {
        guard let value = value(key) else { return nil }
        guard case .object(let dictionary) = value else { throw .badRequest(prefix + key, "expected an object") }
        return JSONBody(object: dictionary, prefix: prefix + key + ".")
    }

    /// A list of objects, each read strictly under the name `key[index].`.
    mutating func objects(_ key: String) throws(ChatError) -> [JSONBody]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else { throw .badRequest(prefix + key, "expected a list of objects") }
        var result: [JSONBody] = []
        for (index, item) in items.enumerated() {
            guard case .object(let dictionary) = item else {
                throw .badRequest("\(prefix)\(key)[\(index)]", "expected an object")
            }
            result.append(JSONBody(object: dictionary, prefix: "\(prefix)\(key)[\(index)]."))
        }
        return result
    }

    /// Refuses fields nobody read.
    func finish() throws(ChatError) {
        // `read` holds only fields of the body: when it holds as many, every field was read.
        guard read.count < object.count else { return }
        if let unknown = object.keys.sorted().first(where: { !read.contains($0) }) {
            throw .badRequest(prefix + unknown, "unknown field")
        }
    }
}

/// Tokens, keys and their hashes.
enum Secrets {
    /// A new random token, 32 bytes as hex.
    static func newToken() -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        if RAND_bytes(&bytes, Int32(bytes.count)) != 1 {
            var generator = SystemRandomNumberGenerator()
            for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
        }
        return hex(bytes)
    }

    /// Lower-case hex of `bytes`.
    static func hex(_ bytes: [UInt8]) -> String { WebhookSignature.hex(bytes) }

    /// SHA-256 of `text`, as hex: what the database keeps of a token.
    static func hash(_ text: String) -> String { hex(digest(text)) }

    /// OpenSSL's SHA-256, fetched from its provider once. The one-shot `SHA256()` looks the
    /// algorithm up by name at every call (a lock shared by every thread, a hash-table search, the
    /// engine table), which costs more than the digest of a short key.
    /// An `EVP_MD` may be used by many threads at once.
    nonisolated(unsafe) private static let sha256: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil)

    /// SHA-256 of `text`.
    static func digest(_ text: String) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        var text = text
        text.withUTF8 { bytes in
            if let sha256, EVP_Digest(bytes.baseAddress, bytes.count, &digest, nil, sha256, nil) == 1 { return }
            _ = SHA256(bytes.baseAddress, bytes.count, &digest)
        }
        return digest
    }

    /// Whether `text` hashes to `digest`, compared in time independent of where the two differ
    /// (hashing first also hides the secret's length).
    static func matches(_ text: String, digest expected: [UInt8]) -> Bool {
        let presented = digest(text)
        return presented.count == expected.count && CRYPTO_memcmp(presented, expected, expected.count) == 0
    }
}

/// A refusal whose HTTP status is not its code's own: the API's error body (`ERR_BAD_REQUEST`), with
/// the status HTTP has for the case (404 for a path nothing serves, 413 for a body past a limit,
/// 415 for an upload of a type not allowed).
struct HTTPRefusal: Error {
    let status: Int
    let error: ChatError

    /// 404: no such endpoint or file, or no web chat served (`server.webDirectory` empty).
    static let notServed = HTTPRefusal(status: 404, error: .badRequest("path", "no such endpoint"))

    /// 413: the body is past `limit` bytes.
    static func tooLarge(_ reason: String, limit: Int) -> HTTPRefusal {
        HTTPRefusal(
            status: 413,
            error: ChatError(.badRequest, ["field": "body", "reason": .string(reason), "limit": .int(Int64(limit))]))
    }

    /// 415: an upload whose `Content-Type` is not one of `server.uploadTypes`.
    static func unsupportedType(_ mime: String) -> HTTPRefusal {
        HTTPRefusal(status: 415, error: .badRequest("Content-Type", "'\(mime)' is not an allowed upload type"))
    }
}

/// The HTTP status of each error code.
extension ChatError.Code {
    var httpStatus: Int {
        switch self {
        case .authNoCredentials, .authInvalidToken, .authInvalidAPIKey: return 401
        case .permissionDenied, .groupNoClearance, .groupNoScopeClearance, .messageNotASender, .featureNotAccessible,
            .messageNoAccess, .bannedGroupMember, .groupNotJoined, .groupJoinNotAllowed, .groupNoSelfAction:
            return 403
        case .messageIdNotFound, .uidNotFound, .guidNotFound, .notAMember, .webhookNotFound, .botNotFound,
            .pluginNotFound:
            return 404
        case .pinnedMessagesLimitExceeded, .savedMessagesLimitExceeded, .messageActionNotAllowed, .alreadyJoined,
            .uidAlreadyExists, .guidAlreadyExists, .sameScope, .messageThreadNesting, .wrongMessageThread:
            return 409
        case .tooManyRequests: return 429
        case .internalError: return 500
        case .serviceUnavailable: return 503
        default: return 400
        }
    }
}

/// JSON text of API answers.
enum APIJSON {
    static func error(_ error: ChatError) -> String {
        var writer = JSONWriter()
        writer.raw("{\"error\":{\"code\":")
        writer.string(error.code.rawValue)
        writer.raw(",\"message\":")
        writer.string(error.message)
        writer.raw(",\"details\":{")
        // Written by hand rather than as a JSONValue, whose numbers are doubles: an id keeps every
        // digit (a message id past 2^53 would come out rounded, in exponent form).
        for (index, (name, value)) in error.params.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { writer.raw(",") }
            writer.string(name)
            writer.raw(":")
            switch value {
            case .int(let number): writer.int(number)
            case .string(let text): writer.string(text)
            }
        }
        writer.raw("}}}")
        return writer.output
    }

    static func encode<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }

    static func data(_ inner: String) -> String { "{\"data\":\(inner)}" }

    static func list(_ items: [String], meta: String = "{}") -> String {
        "{\"data\":[\(items.joined(separator: ","))],\"meta\":\(meta)}"
    }
}
