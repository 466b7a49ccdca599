import PerchChat
import Testing

struct RoutingCase: CustomTestStringConvertible, Sendable {
    var name: String
    var preferences: ConversationPreferences
    var message: Message
    var subscribers: Set<String> = []
    var quotedAuthor: String? = nil
    var expected: NotificationReason?
    var testDescription: String { name }
}

func prefs(
    _ m: MessagesOption = .dontSubscribe, _ r: RepliesOption = .dontSubscribe,
    _ q: QuotedRepliesOption = .dontSubscribe
) -> ConversationPreferences {
    ConversationPreferences(messages: m, replies: r, quotedReplies: q)
}

func routed(_ text: String = "hi", parent: Int64 = 0, quoted: Int64 = 0, mentions: [String] = []) -> Message {
    Message(
        id: 10, conversationId: "group_g", sender: "sender", receiverType: .group, receiverUid: "g", text: text,
        mentionedUids: mentions, parentMessageId: parent, quotedMessageId: quoted)
}

/// Each preference value, as seen by the user "u".
let routingCases: [RoutingCase] = [
    RoutingCase(
        name: "messages DONT_SUBSCRIBE", preferences: prefs(.dontSubscribe, .subscribeToAll, .subscribeToAll),
        message: routed(), expected: nil),
    RoutingCase(
        name: "messages SUBSCRIBE_TO_ALL", preferences: prefs(.subscribeToAll), message: routed(), expected: .message),
    RoutingCase(
        name: "messages SUBSCRIBE_TO_ALL, mentioned", preferences: prefs(.subscribeToAll),
        message: routed(mentions: ["u"]), expected: .mention),
    RoutingCase(
        name: "messages SUBSCRIBE_TO_MENTIONS, not mentioned", preferences: prefs(.subscribeToMentions),
        message: routed(), expected: nil),
    RoutingCase(
        name: "messages SUBSCRIBE_TO_MENTIONS, mentioned", preferences: prefs(.subscribeToMentions),
        message: routed(mentions: ["u"]), expected: .mention),
    RoutingCase(
        name: "replies DONT_SUBSCRIBE", preferences: prefs(.subscribeToAll, .dontSubscribe),
        message: routed(parent: 1), subscribers: ["u"], expected: nil),
    RoutingCase(
        name: "replies SUBSCRIBE_TO_ALL", preferences: prefs(.dontSubscribe, .subscribeToAll),
        message: routed(parent: 1), expected: .reply),
    RoutingCase(
        name: "replies SUBSCRIBE_TO_MENTIONS", preferences: prefs(.dontSubscribe, .subscribeToMentions),
        message: routed(parent: 1), expected: nil),
    RoutingCase(
        name: "replies SUBSCRIBE_TO_MENTIONS, mentioned", preferences: prefs(.dontSubscribe, .subscribeToMentions),
        message: routed(parent: 1, mentions: ["u"]), expected: .mention),
    RoutingCase(
        name: "replies SUBSCRIBE_TO_SUBSCRIBED_THREADS, subscribed",
        preferences: prefs(.dontSubscribe, .subscribeToSubscribedThreads), message: routed(parent: 1),
        subscribers: ["u"],
        expected: .subscribedThread),
    RoutingCase(
        name: "replies SUBSCRIBE_TO_SUBSCRIBED_THREADS, not subscribed",
        preferences: prefs(.subscribeToAll, .subscribeToSubscribedThreads), message: routed(parent: 1), expected: nil),
    RoutingCase(
        name: "quotedReplies DONT_SUBSCRIBE", preferences: prefs(.subscribeToAll, .subscribeToAll, .dontSubscribe),
        message: routed(quoted: 1), quotedAuthor: "u", expected: nil),
    RoutingCase(
        name: "quotedReplies SUBSCRIBE_TO_ALL", preferences: prefs(.dontSubscribe, .dontSubscribe, .subscribeToAll),
        message: routed(quoted: 1), expected: .reply),
    RoutingCase(
        name: "quotedReplies SUBSCRIBE_TO_MENTIONS, mentioned",
        preferences: prefs(.dontSubscribe, .dontSubscribe, .subscribeToMentions),
        message: routed(quoted: 1, mentions: ["u"]),
        expected: .mention),
    RoutingCase(
        name: "quotedReplies SUBSCRIBE_TO_QUOTES_ON_OWN_MESSAGES, own",
        preferences: prefs(.dontSubscribe, .dontSubscribe, .subscribeToQuotesOnOwnMessages), message: routed(quoted: 1),
        quotedAuthor: "u", expected: .quoteOnOwnMessage),
    RoutingCase(
        name: "quotedReplies SUBSCRIBE_TO_QUOTES_ON_OWN_MESSAGES, another's",
        preferences: prefs(.subscribeToAll, .dontSubscribe, .subscribeToQuotesOnOwnMessages),
        message: routed(quoted: 1),
        quotedAuthor: "x", expected: nil),
    RoutingCase(
        name: "both a reply and a quote: the union (reply side)",
        preferences: prefs(.dontSubscribe, .subscribeToSubscribedThreads, .dontSubscribe),
        message: routed(parent: 1, quoted: 2), subscribers: ["u"], expected: .subscribedThread),
    RoutingCase(
        name: "both a reply and a quote: the union (quote side)",
        preferences: prefs(.dontSubscribe, .dontSubscribe, .subscribeToQuotesOnOwnMessages),
        message: routed(parent: 1, quoted: 2), quotedAuthor: "u", expected: .quoteOnOwnMessage),
    RoutingCase(
        name: "both a reply and a quote: neither",
        preferences: prefs(.subscribeToAll, .subscribeToMentions, .dontSubscribe),
        message: routed(parent: 1, quoted: 2), subscribers: ["u"], quotedAuthor: "u", expected: nil),
]

@Suite struct NotificationRoutingTests {
    @Test(arguments: routingCases)
    func routesByPreference(_ routing: RoutingCase) {
        let input = NotificationRouting.Input(
            message: routing.message, audience: ["sender", "u"], preferences: ["u": routing.preferences],
            defaults: .groupDefault, threadSubscribers: routing.subscribers, quotedAuthor: routing.quotedAuthor)
        let recipients = NotificationRouting.recipients(input)
        #expect(recipients.map(\.reason) == (routing.expected.map { [$0] } ?? []))
        #expect(!recipients.contains { $0.uid == "sender" })
    }

    @Test func theSenderIsNeverNotifiedAndDefaultsApply() {
        let input = NotificationRouting.Input(
            message: routed(mentions: ["sender"]), audience: ["sender", "a", "b"], preferences: [:],
            defaults: prefs(.subscribeToAll))
        #expect(NotificationRouting.recipients(input).map(\.uid) == ["a", "b"])
    }

    @Test func rawValuesMatchTheSpec() {
        #expect(MessagesOption.subscribeToMentions.rawValue == 3)
        #expect(RepliesOption.subscribeToSubscribedThreads.rawValue == 4)
        #expect(QuotedRepliesOption.subscribeToQuotesOnOwnMessages.rawValue == 4)
        #expect(RepliesOption(rawValue: 4)?.name == "SUBSCRIBE_TO_SUBSCRIBED_THREADS")
        #expect(QuotedRepliesOption(rawValue: 4)?.name == "SUBSCRIBE_TO_QUOTES_ON_OWN_MESSAGES")
    }
}
