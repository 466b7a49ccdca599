/// The conversation ids of CometChat: `group_<guid>`, or `<uidA>_user_<uidB>` with the uids sorted.
public enum ConversationID {
    public static func group(_ guid: String) -> String { "group_\(guid)" }

    public static func user(_ a: String, _ b: String) -> String {
        a <= b ? "\(a)_user_\(b)" : "\(b)_user_\(a)"
    }
}

/// Who a message is addressed to.
public enum Receiver: Sendable, Hashable {
    case user(String)
    case group(String)

    public var type: ReceiverType {
        switch self {
        case .user: return .user
        case .group: return .group
        }
    }

    public var id: String {
        switch self {
        case .user(let uid): return uid
        case .group(let guid): return guid
        }
    }

    /// The conversation between `sender` and this receiver.
    public func conversationId(sender: String) -> String {
        switch self {
        case .user(let uid): return ConversationID.user(sender, uid)
        case .group(let guid): return ConversationID.group(guid)
        }
    }
}

public enum ReceiverType: String, Sendable, Hashable, Codable, CaseIterable {
    case user
    case group
}
