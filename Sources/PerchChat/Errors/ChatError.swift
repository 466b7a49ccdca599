/// The one wire-safe error of the chat service: a stable CometChat code and its parameters.
///
/// Every refusal of the service is a `ChatError`; nothing else leaves it. Text for people is
/// rendered from `code` and `params` in one place (``ChatError/message``), never stored.
public struct ChatError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: Code
    public var params: [String: ParamValue]

    public init(_ code: Code, _ params: [String: ParamValue] = [:]) {
        self.code = code
        self.params = params
    }

    /// The codes, with CometChat's strings as raw values. An open set: a code Perch does not know
    /// (from a newer peer, say) still round-trips.
    public struct Code: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let messageIdNotFound = Code("ERR_MESSAGE_ID_NOT_FOUND")
        public static let messageNoAccess = Code("ERR_MESSAGE_NO_ACCESS")
        public static let messageActionNotAllowed = Code("ERR_MESSAGE_ACTION_NOT_ALLOWED")
        public static let messageNotASender = Code("ERR_MESSAGE_NOT_A_SENDER")
        public static let messageThreadNesting = Code("ERR_MESSAGE_THREAD_NESTING")
        public static let wrongMessageThread = Code("ERR_WRONG_MESSAGE_THREAD")
        public static let permissionDenied = Code("ERR_PERMISSION_DENIED")
        public static let pinnedMessagesLimitExceeded = Code("ERR_PINNED_MESSAGES_LIMIT_EXCEEDED")
        public static let savedMessagesLimitExceeded = Code("ERR_SAVED_MESSAGES_LIMIT_EXCEEDED")
        public static let featureNotAccessible = Code("ERR_FEATURE_NOT_ACCESSIBLE")
        public static let uidNotFound = Code("ERR_UID_NOT_FOUND")
        public static let uidAlreadyExists = Code("ERR_UID_ALREADY_EXISTS")
        public static let guidNotFound = Code("ERR_GUID_NOT_FOUND")
        public static let guidAlreadyExists = Code("ERR_GUID_ALREADY_EXISTS")
        public static let groupNotJoined = Code("ERR_GROUP_NOT_JOINED")
        public static let notAMember = Code("ERR_NOT_A_MEMBER")
        public static let alreadyJoined = Code("ERR_ALREADY_JOINED")
        public static let groupJoinNotAllowed = Code("ERR_GROUP_JOIN_NOT_ALLOWED")
        public static let bannedGroupMember = Code("ERR_BANNED_GROUPMEMBER")
        public static let groupNoClearance = Code("ERR_GROUP_NO_CLEARANCE")
        public static let groupNoScopeClearance = Code("ERR_GROUP_NO_SCOPE_CLEARANCE")
        public static let groupNoSelfAction = Code("ERR_GROUP_NO_SELF_ACTION")
        public static let sameScope = Code("ERR_SAME_SCOPE")
        public static let emptyMessageText = Code("ERR_EMPTY_MESSAGE_TEXT")
        public static let invalidReceiverType = Code("ERR_INVALID_RECEIVER_TYPE")
        public static let invalidMessageData = Code("ERR_INVALID_MESSAGE_DATA")
        /// No bot rule listens on the webhook name posted to.
        public static let webhookNotFound = Code("ERR_WEBHOOK_NOT_FOUND")
        /// No user with role `bot` has the uid a bot's send names (CometChat's Send Bot Message).
        public static let botNotFound = Code("ERR_BOT_NOT_FOUND")
        /// No running bot has the plugin a restart names.
        public static let pluginNotFound = Code("ERR_PLUGIN_NOT_FOUND")
        public static let badRequest = Code("ERR_BAD_REQUEST")
        public static let tooManyRequests = Code("ERR_TOO_MANY_REQUESTS")
        public static let internalError = Code("ERR_INTERNAL")
        /// The service is shutting down (its store is closed); the request may be tried again.
        public static let serviceUnavailable = Code("ERR_SERVICE_UNAVAILABLE")
        public static let authNoCredentials = Code("AUTH_ERR_AUTH_TOKEN_NOT_FOUND")
        public static let authInvalidToken = Code("AUTH_ERR_INVALID_TOKEN")
        public static let authInvalidAPIKey = Code("AUTH_ERR_APIKEY_NOT_FOUND")
    }

    /// A parameter value: errorParams hold numbers and short strings only.
    public enum ParamValue: Sendable, Hashable, Codable, CustomStringConvertible,
        ExpressibleByIntegerLiteral, ExpressibleByStringLiteral
    {
        case int(Int64)
        case string(String)

        public init(integerLiteral value: Int64) { self = .int(value) }
        public init(stringLiteral value: String) { self = .string(value) }

        public var description: String {
            switch self {
            case .int(let value): return String(value)
            case .string(let value): return value
            }
        }

        /// As a JSON value (a number is a double there: exact up to 2^53).
        public var json: JSONValue {
            switch self {
            case .int(let value): return .number(Double(value))
            case .string(let value): return .string(value)
            }
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Int64.self) {
                self = .int(value)
            } else {
                self = .string(try container.decode(String.self))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .int(let value): try container.encode(value)
            case .string(let value): try container.encode(value)
            }
        }
    }

    public var description: String { message }
}

extension ChatError {
    public static func badRequest(_ field: String, _ reason: String) -> ChatError {
        ChatError(.badRequest, ["field": .string(field), "reason": .string(reason)])
    }

    public static func messageNotFound(_ id: Int64) -> ChatError {
        ChatError(.messageIdNotFound, ["messageId": .int(id)])
    }

    public static func uidNotFound(_ uid: String) -> ChatError { ChatError(.uidNotFound, ["uid": .string(uid)]) }

    public static func guidNotFound(_ guid: String) -> ChatError { ChatError(.guidNotFound, ["guid": .string(guid)]) }

    public static func webhookNotFound(_ name: String) -> ChatError {
        ChatError(.webhookNotFound, ["name": .string(name)])
    }

    public static func botNotFound(_ uid: String) -> ChatError { ChatError(.botNotFound, ["uid": .string(uid)]) }
}
