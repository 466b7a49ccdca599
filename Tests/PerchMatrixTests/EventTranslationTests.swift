import Foundation
import PerchChat
import PerchService
import Testing

@testable import PerchMatrix

/// Matrix events as the store's facts: what a bot's rules read on the embedded service, they read
/// the same from a homeserver's events.
@Suite struct EventTranslationTests {
    static let translation = EventTranslation(
        bots: ["@helper:example.org": "helper"], homeserver: URL(string: "https://matrix.example.org")!)

    static func event(
        _ type: String, _ content: [String: JSONValue], from sender: String = "@alice:example.org", id: String = "$e",
        stateKey: String? = nil, unsigned: [String: JSONValue] = [:], redacts: String? = nil
    ) -> MatrixEvent {
        var json: [String: JSONValue] = [
            "type": .string(type), "sender": .string(sender), "event_id": .string(id), "content": .object(content),
            "origin_server_ts": .number(1_700_000_000_000), "unsigned": .object(unsigned),
        ]
        if let stateKey { json["state_key"] = .string(stateKey) }
        if let redacts { json["redacts"] = .string(redacts) }
        return MatrixEvent(.object(json))!
    }

    static func facts(_ event: MatrixEvent, state: inout RoomState, place: RoomPlace = .group("general"))
        -> [MirroredFact]
    {
        translation.facts(of: event, in: place, state: &state, history: false)
    }

    static func message(_ fact: MirroredFact?) -> MirroredMessage? {
        if case .message(let message)? = fact { return message }
        return nil
    }

    @Test func aThreadReplyHangsFromItsRootAndItsFallbackIsNoQuote() {
        var state = RoomState()
        let fallback = Self.event(
            "m.room.message",
            [
                "msgtype": "m.text", "body": "in the thread",
                "m.relates_to": .object([
                    "rel_type": "m.thread", "event_id": "$root", "is_falling_back": .bool(true),
                    "m.in_reply_to": .object(["event_id": "$latest"]),
                ]),
            ])
        let reply = Self.message(Self.facts(fallback, state: &state).first)
        #expect(reply?.threadRoot == "$root" && reply?.quoted == nil && reply?.text == "in the thread")
        let quoting = Self.event(
            "m.room.message",
            [
                "msgtype": "m.text", "body": "> <@bob:example.org> earlier\n\nquoting it",
                "m.relates_to": .object([
                    "rel_type": "m.thread", "event_id": "$root", "m.in_reply_to": .object(["event_id": "$earlier"]),
                ]),
            ])
        let quote = Self.message(Self.facts(quoting, state: &state).first)
        #expect(quote?.threadRoot == "$root" && quote?.quoted == "$earlier")
        // Older clients' quoted lines are not the reply's text.
        #expect(quote?.text == "quoting it")
    }

    @Test func mentionsComeFromMMentionsOrABotsIDInTheText() {
        var state = RoomState()
        let listed = Self.event(
            "m.room.message",
            [
                "msgtype": "m.text", "body": "hi",
                "m.mentions": .object(["user_ids": .array(["@helper:example.org", "@bob:example.org"])]),
            ])
        #expect(Self.message(Self.facts(listed, state: &state).first)?.mentions == ["helper", "@bob:example.org"])
        let plain = Self.event("m.room.message", ["msgtype": "m.text", "body": "@helper:example.org: help"])
        #expect(Self.message(Self.facts(plain, state: &state).first)?.mentions == ["helper"])
        // A client that sends m.mentions says whom it mentions: an id in its text is not a mention.
        let explicit = Self.event(
            "m.room.message",
            ["msgtype": "m.text", "body": "about @helper:example.org", "m.mentions": .object([:])])
        #expect(Self.message(Self.facts(explicit, state: &state).first)?.mentions == [])
    }

    @Test func aBotsOwnAccountIsItsUidAndADirectChatIsOneOnOne() {
        var state = RoomState()
        let fromBot = Self.event(
            "m.room.message", ["msgtype": "m.notice", "body": "hello"], from: "@helper:example.org")
        let toPerson = Self.message(
            Self.facts(fromBot, state: &state, place: .direct(bot: "helper", person: "@alice:example.org")).first)
        #expect(toPerson?.sender == "helper" && toPerson?.receiver == .user("@alice:example.org"))
        let fromPerson = Self.event("m.room.message", ["msgtype": "m.text", "body": "hi"])
        let toBot = Self.message(
            Self.facts(fromPerson, state: &state, place: .direct(bot: "helper", person: "@alice:example.org")).first)
        #expect(toBot?.sender == "@alice:example.org" && toBot?.receiver == .user("helper"))
    }

    @Test func editsRedactionsAndReactions() {
        var state = RoomState()
        let edit = Self.event(
            "m.room.message",
            [
                "msgtype": "m.text", "body": "* fixed",
                "m.new_content": .object(["msgtype": "m.text", "body": "fixed"]),
                "m.relates_to": .object(["rel_type": "m.replace", "event_id": "$original"]),
            ])
        #expect(
            Self.facts(edit, state: &state) == [
                .edit(of: "$original", text: "fixed", mentions: [], by: "@alice:example.org")
            ])
        let redaction = Self.event("m.room.redaction", [:], from: "@helper:example.org", redacts: "$gone")
        #expect(
            Self.facts(redaction, state: &state) == [
                .delete(of: "$gone", by: "helper"), .reactionRemoved(id: "$gone", by: "helper"),
            ])
        let reaction = Self.event(
            "m.reaction",
            ["m.relates_to": .object(["rel_type": "m.annotation", "event_id": "$liked", "key": "👍"])], id: "$r")
        #expect(
            Self.facts(reaction, state: &state) == [
                .reaction(id: "$r", on: "$liked", reaction: "👍", by: "@alice:example.org")
            ])
    }

    @Test func powerLevelsAreScopesAndMembershipsAreJoinsLeavesKicksAndBans() {
        var state = RoomState()
        state.apply(Self.event("m.room.create", ["room_version": "12"], from: "@owner:example.org", stateKey: ""))
        for member in ["@owner:example.org", "@alice:example.org", "@bob:example.org"] {
            state.apply(Self.event("m.room.member", ["membership": "join"], from: member, stateKey: member))
        }
        let levels = Self.event(
            "m.room.power_levels",
            ["users": .object(["@alice:example.org": 100, "@bob:example.org": 50]), "kick": 75],
            from: "@owner:example.org", stateKey: "")
        #expect(
            Set(Self.facts(levels, state: &state)) == [
                .membership(
                    guid: "general", uid: "@alice:example.org", state: .member(.admin), by: "@owner:example.org"),
                .membership(
                    guid: "general", uid: "@bob:example.org", state: .member(.moderator), by: "@owner:example.org"),
            ])
        #expect(state.scope(of: "@owner:example.org") == .owner)
        let kick = Self.event(
            "m.room.member", ["membership": "leave"], from: "@alice:example.org", stateKey: "@bob:example.org",
            unsigned: ["prev_content": .object(["membership": "join"])])
        #expect(
            Self.facts(kick, state: &state) == [
                .membership(guid: "general", uid: "@bob:example.org", state: .kicked, by: "@alice:example.org")
            ])
        let ban = Self.event(
            "m.room.member", ["membership": "ban"], from: "@alice:example.org", stateKey: "@eve:example.org")
        #expect(
            Self.facts(ban, state: &state) == [
                .membership(guid: "general", uid: "@eve:example.org", state: .banned, by: "@alice:example.org")
            ])
        let unban = Self.event(
            "m.room.member", ["membership": "leave"], from: "@alice:example.org", stateKey: "@eve:example.org",
            unsigned: ["prev_content": .object(["membership": "ban"])])
        #expect(
            Self.facts(unban, state: &state) == [
                .membership(guid: "general", uid: "@eve:example.org", state: .unbanned, by: "@alice:example.org")
            ])
        let pins = Self.event("m.room.pinned_events", ["pinned": .array(["$a", "$b"])], stateKey: "")
        #expect(
            Self.facts(pins, state: &state) == [.pins(guid: "general", pinned: ["$a", "$b"], by: "@alice:example.org")])
        #expect(state.allows("@bob:example.org", "kick") == false && state.allows("@alice:example.org", "ban"))
    }

    @Test func aFileIsAnAttachmentAtTheHomeserversDownloadAddress() {
        var state = RoomState()
        let file = Self.event(
            "m.room.message",
            [
                "msgtype": "m.file", "body": "report.pdf", "url": "mxc://example.org/AbCd",
                "info": .object(["size": 2048, "mimetype": "application/pdf"]),
            ])
        let message = Self.message(Self.facts(file, state: &state).first)
        #expect(message?.type == MessageType.file && message?.text == nil)
        #expect(
            message?.attachments == [
                Attachment(
                    name: "report.pdf", size: 2048, mimeType: "application/pdf", extension: "pdf",
                    url: "https://matrix.example.org/_matrix/client/v1/media/download/example.org/AbCd")
            ])
    }

    @Test func relayTransactionsNameTheMessageTheyCarry() {
        #expect(RelayTransaction.message(Int64(42)) == "perch-m42")
        #expect(RelayTransaction.message("perch-m42") == 42)
        #expect(RelayTransaction.message("perch-d42") == nil && RelayTransaction.message("other") == nil)
        #expect(
            MatrixClient.template("/v3/rooms/%21abc/send/m.room.message/perch-m1")
                == "/v3/rooms/{roomId}/send/m.room.message/{txnId}")
    }
}

// Events written as JSON literals.
extension JSONValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}
