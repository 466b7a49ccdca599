import PerchChat

/// The conditions of a rule (`when`); all given conditions must hold.
public struct Conditions: Decodable, Sendable {
    /// `groups`: only in these groups (guids).
    public var groups: [String]?
    /// `one_on_one`: true, only in one-on-one conversations; false, only in groups.
    public var oneOnOne: Bool?
    /// `from`: only from these senders (uids).
    public var from: [String]?
    /// `sender_scope`: only from senders with one of these scopes in the group.
    public var senderScope: [GroupMemberScope]?
    /// `sender_is_bot`: true, only from bots; false, only from people.
    public var senderIsBot: Bool?
    /// `text_matches`: a regular expression (PCRE2) the text must match; named captures
    /// (`(?<word>...)`) are usable in templates as `{word}`.
    public var textMatches: String?
    /// `contains_words`: any of these words, whole and ignoring case (the moderation list).
    public var containsWords: [String]?
    /// `threaded`: true, only thread replies; false, only top-level messages.
    public var threaded: Bool?

    public init() {}

    enum CodingKeys: String, CodingKey {
        case groups, from, threaded
        case oneOnOne = "one_on_one"
        case senderScope = "sender_scope"
        case senderIsBot = "sender_is_bot"
        case textMatches = "text_matches"
        case containsWords = "contains_words"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        groups = try c.decodeIfPresent(StringList.self, forKey: .groups)?.values
        oneOnOne = try c.decodeIfPresent(Bool.self, forKey: .oneOnOne)
        from = try c.decodeIfPresent(StringList.self, forKey: .from)?.values
        senderScope = try c.decodeIfPresent(ScopeList.self, forKey: .senderScope)?.values
        senderIsBot = try c.decodeIfPresent(Bool.self, forKey: .senderIsBot)
        textMatches = try c.decodeIfPresent(String.self, forKey: .textMatches)
        containsWords = try c.decodeIfPresent([String].self, forKey: .containsWords)
        threaded = try c.decodeIfPresent(Bool.self, forKey: .threaded)
    }
}

struct ScopeList: Decodable {
    var values: [GroupMemberScope]

    init(from decoder: any Decoder) throws {
        if case .scalar? = decoder.configNode?.content {
            values = [try decoder.singleValueContainer().decode(GroupMemberScope.self)]
        } else {
            values = try decoder.singleValueContainer().decode([GroupMemberScope].self)
        }
    }
}
