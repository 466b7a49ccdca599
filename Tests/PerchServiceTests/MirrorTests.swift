import PerchChat
import PerchService
import PerchTestSupport
import Testing

/// The embedded store as another server's mirror: facts recorded with the embedded operations'
/// effects, once each, without their permission checks, and left out of the relay of whoever
/// caused them.
@Suite struct MirrorTests {
    static let connector = "matrix"

    /// The events `uid` reads after `seq` as `session`.
    static func events(_ chat: ChatFixture, for uid: String, session: String? = nil, after seq: Int64)
        async throws -> [ChatEvent]
    {
        try await chat.service.events(for: uid, session: session, after: seq, limit: 100).events
    }

    static func message(
        _ id: String, _ text: String, from sender: String = "dave", root: String? = nil,
        quoted: String? = nil, mentions: [String] = [], history: Bool = false
    ) -> MirroredFact {
        .message(
            MirroredMessage(
                id: id, sender: sender, receiver: .group("g"), text: text, mentions: mentions, threadRoot: root,
                quoted: quoted, sentAt: 1_800_000_000, history: history))
    }

    @Test func aThreadReplyIsPlacedAnnouncedAndSubscribesAsASentOneDoes() async throws {
        try await withChat { chat in
            let start = try await chat.service.store.latestEventSequence()
            let created = try await chat.service.mirror(
                [Self.message("$root", "the root"), Self.message("$reply", "a reply", from: "carol", root: "$root")],
                connector: Self.connector)
            let root = try #require(created["$root"])
            let reply = try #require(try await chat.service.localMessage(external: "$reply", connector: Self.connector))
            #expect(reply.parentMessageId == root && reply.sender == "carol")
            #expect(try await chat.service.message(root, as: "bob").replyCount == 1)
            // Starting a thread and replying in it subscribe, as in the embedded service.
            #expect(try await chat.service.message(root, as: "dave").threadSubscribed)
            #expect(try await chat.service.message(root, as: "carol").threadSubscribed)
            #expect(!(try await chat.service.message(root, as: "bob").threadSubscribed))
            let seen = try await Self.events(chat, for: "bob", after: start)
            #expect(seen.map(\.name) == [.textMessageReceived, .textMessageReceived])
            #expect(seen.last?.message?.parentMessageId == root)
            #expect(try await chat.service.externalId(ofMessage: root, connector: Self.connector) == "$root")
        }
    }

    @Test func aMessageSeenTwiceIsRecordedOnceAndHistoryIsNotAnnounced() async throws {
        try await withChat { chat in
            let start = try await chat.service.store.latestEventSequence()
            try await chat.service.mirror(
                [Self.message("$old", "before the bots", history: true)], connector: Self.connector)
            try await chat.service.mirror([Self.message("$new", "hi")], connector: Self.connector)
            try await chat.service.mirror([Self.message("$new", "hi")], connector: Self.connector)
            #expect(try await Self.events(chat, for: "bob", after: start).map(\.message?.text) == ["hi"])
            let old = try #require(try await chat.service.localMessage(external: "$old", connector: Self.connector))
            #expect(old.text == "before the bots")
        }
    }

    @Test func aQuoteAndMentionsKeepWhatTheConversationHolds() async throws {
        try await withChat { chat in
            try await chat.service.mirror(
                [
                    Self.message("$a", "first"),
                    Self.message("$b", "quoting", quoted: "$a", mentions: ["bob", "erin", "nobody", "bob"]),
                ],
                connector: Self.connector)
            let quoting = try #require(try await chat.service.localMessage(external: "$b", connector: Self.connector))
            let first = try #require(try await chat.service.localMessage(external: "$a", connector: Self.connector))
            #expect(quoting.quotedMessageId == first.id)
            // erin cannot read the group; nobody does not exist.
            #expect(quoting.mentionedUids == ["bob"])
            // A quote of a message the store does not know, and a thread it does not know, are kept as
            // top-level messages.
            try await chat.service.mirror(
                [Self.message("$c", "orphan", root: "$unknown", quoted: "$unknown")],
                connector: Self.connector)
            let orphan = try #require(try await chat.service.localMessage(external: "$c", connector: Self.connector))
            #expect(orphan.parentMessageId == 0 && orphan.quotedMessageId == 0)
        }
    }

    /// What a person did on the server is recorded even where the embedded rules would refuse it
    /// (deleting one's own message that has a quote reply), and each fact is left out of the relay
    /// of whoever did it, not out of anyone else's.
    @Test func editsDeletesReactionsAndPinsCarryTheirActorAndStayOutOfTheirRelay() async throws {
        try await withChat { chat in
            try await chat.service.mirror(
                [Self.message("$a", "hello"), Self.message("$q", "quote", from: "carol", quoted: "$a")],
                connector: Self.connector)
            let start = try await chat.service.store.latestEventSequence()
            try await chat.service.mirror(
                [
                    .edit(of: "$a", text: "hello again", mentions: ["carol"], by: "dave"),
                    .reaction(id: "$r1", on: "$a", reaction: "👍", by: "bob"),
                    .pins(guid: "g", pinned: ["$a"], by: "carol"),
                    .reactionRemoved(id: "$r1", by: "bob"),
                    .pins(guid: "g", pinned: [], by: "carol"),
                    .delete(of: "$a", by: "dave"),
                ], connector: Self.connector)
            let all = try await Self.events(chat, for: "bob", after: start)
            #expect(
                all.map(\.name) == [
                    .messageEdited, .messageReactionAdded, .messagePinned, .messageReactionRemoved, .messageUnpinned,
                    .messageDeleted,
                ])
            #expect(all.map(\.actor) == ["dave", nil, "carol", nil, "carol", "dave"])
            #expect(all[0].message?.mentionedUids == ["carol"] && all[0].message?.text == "hello again")
            #expect(all[1].reaction?.uid == "bob" && all[3].reaction?.reaction == "👍")
            let relayOfCarol = try await Self.events(
                chat, for: "carol", session: ChatService.relaySession(of: "carol"), after: start)
            #expect(
                relayOfCarol.map(\.name) == [
                    .messageEdited, .messageReactionAdded, .messageReactionRemoved, .messageDeleted,
                ])
            let deleted = try #require(try await chat.service.localMessage(external: "$a", connector: Self.connector))
            #expect(deleted.isDeleted && deleted.deletedBy == "dave" && deleted.text == nil)
        }
    }

    @Test func membershipsFollowTheServer() async throws {
        try await withChat { chat in
            let start = try await chat.service.store.latestEventSequence()
            try await chat.service.mirror(
                [
                    .user(uid: "@frank:example.org", name: "Frank"),
                    .membership(
                        guid: "g", uid: "@frank:example.org", state: .member(.participant), by: "@frank:example.org"),
                    .membership(guid: "g", uid: "@frank:example.org", state: .member(.moderator), by: "alice"),
                    .membership(guid: "g", uid: "dave", state: .kicked, by: "carol"),
                    .membership(guid: "g", uid: "erin", state: .banned, by: "carol"),
                    .membership(guid: "g", uid: "@frank:example.org", state: .left, by: "@frank:example.org"),
                    .membership(guid: "nowhere", uid: "dave", state: .member(.participant), by: "dave"),
                ], connector: Self.connector)
            let names = try await Self.events(chat, for: "bob", after: start).map(\.name)
            #expect(
                names == [
                    .groupMemberJoined, .groupMemberScopeChanged, .groupMemberKicked, .groupMemberBanned,
                    .groupMemberLeft,
                ])
            #expect(try await chat.service.user("@frank:example.org").name == "Frank")
            let members = try await chat.service.members(of: "g", as: "alice").map(\.uid)
            #expect(members.sorted() == ["alice", "bob", "carol"])
        }
    }

    @Test func startingStateIsRecordedQuietlyAndConnectorValuesCommitWithTheFacts() async throws {
        try await withChat { chat in
            let start = try await chat.service.store.latestEventSequence()
            try await chat.service.mirror(
                [
                    .group(guid: "room", name: "Room", type: .private, owner: "@owner:example.org"),
                    .membership(
                        guid: "room", uid: "@owner:example.org", state: .member(.owner), by: "@owner:example.org"),
                    .connectorValue(key: "since:helper", value: "s72594_4483_1934"),
                ], connector: Self.connector, announcing: false)
            #expect(try await chat.service.store.latestEventSequence() == start)
            #expect(
                try await chat.service.connectorValue("since:helper", connector: Self.connector) == "s72594_4483_1934")
            #expect(try await chat.service.connectorValue("since:helper", connector: "other") == nil)
            #expect(try await chat.service.group("room", as: "@owner:example.org").type == .private)
        }
    }
}
