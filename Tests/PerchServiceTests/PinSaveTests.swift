import Foundation
import PerchChat
import PerchSQLite
import PerchService
import PerchTestSupport
import Testing

/// Pins and saves, as CometChat documents them, table by table: the pin/save comparison, the message fields, fetching, events, the
/// feature gates, the error codes and the edge cases.
@Suite struct PinSaveComparisonTests {
    @Test func pinIsVisibleToEveryoneSaveIsPrivate() async throws {
        try await withChat { chat in
            let message = try await chat.say("important", as: "dave")
            let pinned = try await chat.service.pin(message.id, as: "carol")
            #expect(pinned.pinnedAt == chat.clock.now() && pinned.pinnedBy == "carol")
            let seenByDave = try await chat.service.message(message.id, as: "dave")
            #expect(seenByDave.pinnedAt != 0 && seenByDave.pinnedBy == "carol")

            let saved = try await chat.service.save(message.id, as: "bob")
            #expect(saved.savedAt == chat.clock.now())
            #expect(try await chat.service.message(message.id, as: "bob").savedAt != 0)
            #expect(try await chat.service.message(message.id, as: "dave").savedAt == 0)
        }
    }

    @Test func pinIsPerConversationSaveSpansConversations() async throws {
        try await withChat { chat in
            _ = try await chat.service.createGroup(guid: "h", name: "H", owner: "alice")
            let inG = try await chat.say("in g", as: "alice")
            let inH = try await chat.say("in h", as: "alice", to: .group("h"))
            let direct = try await chat.say("dm", as: "dave", to: .user("alice"))
            for id in [inG.id, inH.id, direct.id] { _ = try await chat.service.pin(id, as: "alice") }
            let pinsG = try await chat.service.fetchPrevious(MessagesRequest(guid: "g", pinned: true), as: "alice")
            #expect(pinsG.messages.map(\.id) == [inG.id])

            chat.clock.advance()
            for id in [inG.id, inH.id, direct.id] {
                _ = try await chat.service.save(id, as: "alice")
                chat.clock.advance()
            }
            let saved = try await chat.service.fetchPrevious(MessagesRequest(saved: true), as: "alice")
            #expect(saved.messages.map(\.id) == [direct.id, inH.id, inG.id])
            #expect(saved.messages.map(\.receiverType) == [.user, .group, .group])
            #expect(saved.messages.map(\.receiverUid) == ["alice", "h", "g"])
            #expect(saved.messages.allSatisfy { $0.savedAt != 0 })
        }
    }

    @Test func pinPermissionIsScopedSaveHasNone() async throws {
        try await withChat { chat in
            let message = try await chat.say("m", as: "dave")
            await expectRefusal(.permissionDenied, params: ["messageId": .int(message.id)]) {
                _ = try await chat.service.pin(message.id, as: "dave")
            }
            for uid in ["alice", "bob", "carol"] { _ = try await chat.service.pin(message.id, as: uid) }
            await expectRefusal(.permissionDenied) { _ = try await chat.service.unpin(message.id, as: "dave") }
            _ = try await chat.service.save(message.id, as: "dave")
            // One-on-one: both participants pin.
            let direct = try await chat.say("dm", as: "dave", to: .user("erin"))
            _ = try await chat.service.pin(direct.id, as: "erin")
            _ = try await chat.service.pin(direct.id, as: "dave")
            await expectRefusal(.messageNoAccess) { _ = try await chat.service.pin(direct.id, as: "bob") }
        }
    }

    @Test func limitsComeFromConfigAndTheErrorCarriesThem() async throws {
        try await withChat(settings: ChatSettings(pinsPerConversation: 3, savesPerUser: 2)) { chat in
            var ids: [Int64] = []
            for index in 0..<4 { ids.append(try await chat.say("m\(index)", as: "alice").id) }
            for id in ids.prefix(3) { _ = try await chat.service.pin(id, as: "alice") }
            await expectRefusal(.pinnedMessagesLimitExceeded, params: ["limit": 3]) {
                _ = try await chat.service.pin(ids[3], as: "alice")
            }
            // Re-pinning takes no new place; another conversation has its own count.
            _ = try await chat.service.pin(ids[0], as: "bob")
            let direct = try await chat.say("dm", as: "alice", to: .user("erin"))
            _ = try await chat.service.pin(direct.id, as: "alice")

            _ = try await chat.service.save(ids[0], as: "dave")
            _ = try await chat.service.save(ids[1], as: "dave")
            await expectRefusal(.savedMessagesLimitExceeded, params: ["limit": 2]) {
                _ = try await chat.service.save(ids[2], as: "dave")
            }
            _ = try await chat.service.save(ids[1], as: "dave")
        }
    }

    /// `whenFull: .unpinOldest` (an announcer's `pin: {when_full: unpin_oldest}`): at the limit the
    /// pinner's own oldest pin makes room, in the same transaction and with its unpin event;
    /// people's pins are never released for it, and a refusal unpins nothing.
    @Test func aFullConversationReleasesThePinnersOwnOldestPin() async throws {
        try await withChat(settings: ChatSettings(pinsPerConversation: 3)) { chat in
            var ids: [Int64] = []
            for index in 0..<6 { ids.append(try await chat.say("m\(index)", as: "alice").id) }
            _ = try await chat.service.pin(ids[0], as: "bob")
            chat.clock.advance()
            _ = try await chat.service.pin(ids[1], as: User.system)
            chat.clock.advance()
            _ = try await chat.service.pin(ids[2], as: User.system)
            chat.clock.advance()
            // The default still refuses.
            await expectRefusal(.pinnedMessagesLimitExceeded, params: ["limit": 3]) {
                _ = try await chat.service.pin(ids[3], as: User.system)
            }
            let before = try await chat.store.latestEventSequence()
            let pinned = try await chat.service.pin(ids[3], as: User.system, whenFull: .unpinOldest)
            #expect(pinned.pinnedBy == User.system)
            let pins = try await chat.service.fetchPrevious(MessagesRequest(guid: "g", pinned: true), as: "dave")
            // Bob's older pin stays; app_system's oldest goes.
            #expect(pins.messages.map(\.id) == [ids[3], ids[2], ids[0]])
            let released = try await chat.service.message(ids[1], as: "dave")
            #expect(released.pinnedAt == 0 && released.pinnedBy == "")
            let events = try await chat.service.events(for: "dave", after: before).events
            #expect(events.map(\.name) == [.messageUnpinned, .messagePinned])
            #expect(events.map { $0.message?.id } == [ids[1], ids[3]])

            // Re-pinning a pinned message takes no place and releases nothing.
            _ = try await chat.service.pin(ids[3], as: User.system, whenFull: .unpinOldest)
            #expect(try await chat.service.message(ids[2], as: "dave").pinnedAt != 0)

            // Bob holds one pin of three: he makes room with it, then has none left to give.
            _ = try await chat.service.pin(ids[4], as: "bob", whenFull: .unpinOldest)
            #expect(try await chat.service.message(ids[0], as: "dave").pinnedAt == 0)
            _ = try await chat.service.unpin(ids[4], as: "carol")
            _ = try await chat.service.pin(ids[4], as: "carol")
            let quiet = try await chat.store.latestEventSequence()
            await expectRefusal(.pinnedMessagesLimitExceeded, params: ["limit": 3]) {
                _ = try await chat.service.pin(ids[5], as: "bob", whenFull: .unpinOldest)
            }
            #expect(try await chat.service.events(for: "dave", after: quiet).events.isEmpty)
            let after = try await chat.service.fetchPrevious(MessagesRequest(guid: "g", pinned: true), as: "dave")
            #expect(after.messages.map(\.id) == [ids[4], ids[3], ids[2]])
        }
    }

    /// A limit lowered below the pins already there: one new pin releases as many of the pinner's
    /// oldest as the conversation needs to be back at the limit.
    @Test func aLoweredLimitIsReachedAgainByOnePin() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-pins-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualClock()
        var ids: [Int64] = []
        do {
            let store = try SQLiteChatStore(path: directory + "/perch.sqlite")
            let service = ChatService(store: store, clock: clock, settings: ChatSettings(pinsPerConversation: 10))
            _ = try await service.createUser(uid: "alice", name: "Alice")
            _ = try await service.createGroup(guid: "g", name: "G", owner: "alice")
            for index in 0..<6 {
                ids.append(try await service.send(MessageDraft(to: .group("g"), text: "m\(index)"), as: "alice").id)
            }
            for id in ids.prefix(5) {
                _ = try await service.pin(id, as: User.system)
                clock.advance()
            }
            await store.close()
        }
        let store = try SQLiteChatStore(path: directory + "/perch.sqlite")
        let service = ChatService(store: store, clock: clock, settings: ChatSettings(pinsPerConversation: 2))
        _ = try await service.pin(ids[5], as: User.system, whenFull: .unpinOldest)
        let pins = try await service.fetchPrevious(MessagesRequest(guid: "g", pinned: true), as: "alice")
        #expect(pins.messages.map(\.id) == [ids[5], ids[4]])
        await store.close()
    }

    @Test func concurrentPinsNeverPassTheLimit() async throws {
        try await withChat(settings: ChatSettings(pinsPerConversation: 5)) { chat in
            var ids: [Int64] = []
            for index in 0..<20 { ids.append(try await chat.say("m\(index)", as: "alice").id) }
            let snapshot = ids
            let successes = await withTaskGroup(of: Bool.self) { group in
                for id in snapshot {
                    group.addTask { (try? await chat.service.pin(id, as: "bob")) != nil }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(successes == 5)
            let pins = try await chat.service.fetchPrevious(
                MessagesRequest(guid: "g", limit: 100, pinned: true), as: "bob")
            #expect(pins.messages.count == 5)
        }
    }
}

@Suite struct PinSaveFieldTests {
    @Test func unpinAndUnsaveClearTheFields() async throws {
        try await withChat { chat in
            let message = try await chat.say("m", as: "dave")
            _ = try await chat.service.pin(message.id, as: "carol")
            let unpinned = try await chat.service.unpin(message.id, as: "carol")
            #expect(unpinned.pinnedAt == 0 && unpinned.pinnedBy == "")
            _ = try await chat.service.save(message.id, as: "dave")
            let unsaved = try await chat.service.unsave(message.id, as: "dave")
            #expect(unsaved.savedAt == 0)
            #expect(try await chat.service.message(message.id, as: "dave").savedAt == 0)
            // Both are idempotent.
            _ = try await chat.service.unpin(message.id, as: "carol")
            _ = try await chat.service.unsave(message.id, as: "dave")
        }
    }

    @Test func aSystemPinReadsAppSystem() async throws {
        try await withChat { chat in
            let message = try await chat.say("announcement", as: "bob")
            let pinned = try await chat.service.pin(message.id, as: User.system)
            #expect(pinned.pinnedBy == "app_system")
            let direct = try await chat.say("dm", as: "dave", to: .user("erin"))
            #expect(try await chat.service.pin(direct.id, as: User.system).pinnedBy == "app_system")
        }
    }

    @Test func rePinningMakesTheCallerTheNewPinnedBy() async throws {
        try await withChat { chat in
            let message = try await chat.say("m", as: "dave")
            let first = try await chat.service.pin(message.id, as: "carol")
            chat.clock.advance(by: 10)
            let again = try await chat.service.pin(message.id, as: "bob")
            #expect(again.pinnedBy == "bob")
            #expect(again.pinnedAt == first.pinnedAt)
        }
    }
}

/// Every page of a pinned list, each after the last message of the one before, as ids.
private func pinnedPages(_ chat: ChatFixture, _ first: MessagesRequest, as viewer: String) async throws -> [Int64] {
    var request = first
    var ids: [Int64] = []
    while true {
        let page = try await chat.service.fetchPrevious(request, as: viewer)
        ids += page.messages.map(\.id)
        guard page.hasMore else { return ids }
        request.messageId = page.messages.last?.id
    }
}

@Suite struct PinSaveFetchTests {
    @Test func pinnedNewestFirstWithTheParentOfAPinnedReply() async throws {
        try await withChat { chat in
            let root = try await chat.say("root", as: "dave")
            let reply = try await chat.say("reply", as: "dave", parent: root.id)
            let other = try await chat.say("other", as: "dave")
            _ = try await chat.service.pin(other.id, as: "carol")
            chat.clock.advance()
            _ = try await chat.service.pin(reply.id, as: "carol")
            let page = try await chat.service.fetchPrevious(MessagesRequest(guid: "g", pinned: true), as: "dave")
            #expect(page.messages.map(\.id) == [reply.id, other.id])
            #expect(page.messages[0].parentMessage?.id == root.id)
            #expect(page.messages[0].parentMessage?.text == "root")
            #expect(page.messages[1].parentMessage == nil)
            // One-on-one pins by uid.
            let direct = try await chat.say("dm", as: "dave", to: .user("erin"))
            _ = try await chat.service.pin(direct.id, as: "dave")
            let pins = try await chat.service.fetchPrevious(MessagesRequest(uid: "dave", pinned: true), as: "erin")
            #expect(pins.messages.map(\.id) == [direct.id])
        }
    }

    @Test func pinnedPagesContinueAfterTheCursor() async throws {
        try await withChat { chat in
            var ids: [Int64] = []
            for index in 0..<7 {
                let id = try await chat.say("m\(index)", as: "alice").id
                _ = try await chat.service.pin(id, as: "alice")
                ids.append(id)
            }
            let seen = try await pinnedPages(chat, MessagesRequest(guid: "g", limit: 3, pinned: true), as: "dave")
            #expect(seen == ids.reversed())
        }
    }

    /// CometChat fetches pins and saves with a `MessagesRequest` "filtered by" `pinned` or `saved`:
    /// its other filters narrow those lists as they narrow a conversation's, paging included.
    @Test func pinnedAndSavedListingsTakeTheListingFilters() async throws {
        try await withChat { chat in
            let start = chat.clock.now()
            let root = try await chat.say("release notes", as: "alice")
            let reply = try await chat.say("notes in the thread", as: "bob", parent: root.id)
            chat.clock.advance(by: 10)
            let quote = try await chat.say("quoting the notes", as: "bob", quote: root.id)
            let tagged = try await chat.service.send(
                MessageDraft(to: .group("g"), text: "ops", tags: ["ops"]), as: "dave")
            let file = Attachment(
                name: "a.png", size: 3, mimeType: "image/png", extension: "png", url: "https://example.com/a.png")
            let image = try await chat.service.send(
                MessageDraft(to: .group("g"), type: "image", attachments: [file]), as: "bob")
            let direct = try await chat.say("notes for dave", as: "bob", to: .user("dave"))
            let all = [root, reply, quote, tagged, image]
            for message in all {
                _ = try await chat.service.pin(message.id, as: "alice")
                chat.clock.advance()
            }
            for message in all + [direct] {
                _ = try await chat.service.save(message.id, as: "dave")
                chat.clock.advance()
            }

            func ids(_ request: MessagesRequest, _ configure: (inout MessagesRequest) -> Void) async throws -> [Int64] {
                var request = request
                configure(&request)
                return try await chat.service.fetchPrevious(request, as: "dave").messages.map(\.id)
            }
            let pinned = MessagesRequest(guid: "g", pinned: true)
            let saved = MessagesRequest(saved: true)
            // Newest pin (and save) first, as without filters.
            #expect(try await ids(pinned) { $0.sender = "bob" } == [image.id, quote.id, reply.id])
            #expect(try await ids(saved) { $0.sender = "bob" } == [direct.id, image.id, quote.id, reply.id])
            #expect(try await ids(pinned) { $0.searchKeyword = "NOTES" } == [quote.id, reply.id, root.id])
            #expect(try await ids(saved) { $0.searchKeyword = "notes" } == [direct.id, quote.id, reply.id, root.id])
            #expect(try await ids(pinned) { $0.hideReplies = true } == [image.id, tagged.id, quote.id, root.id])
            #expect(
                try await ids(saved) { $0.hideReplies = true } == [direct.id, image.id, tagged.id, quote.id, root.id])
            #expect(try await ids(pinned) { $0.parentMessageId = root.id } == [reply.id])
            #expect(try await ids(pinned) { $0.types = ["image"] } == [image.id])
            #expect(try await ids(saved) { $0.hasAttachments = true } == [image.id])
            #expect(try await ids(pinned) { $0.tags = ["ops"] } == [tagged.id])
            #expect(try await ids(saved) { $0.hideQuotedMessages = true }.contains(quote.id) == false)
            #expect(try await ids(pinned) { $0.toTimestamp = start } == [reply.id, root.id])
            #expect(try await ids(saved) { $0.fromTimestamp = start + 10 }.count == 4)
            #expect(try await ids(pinned) { $0.categories = [.action] } == [])
            // A page of a filtered list goes on after its last message, through that filter.
            var request = MessagesRequest(guid: "g", limit: 2, pinned: true)
            request.sender = "bob"
            let walked = try await pinnedPages(chat, request, as: "dave")
            #expect(walked == [image.id, quote.id, reply.id])
            // A filter's own refusals hold on these lists too.
            await expectRefusal(.badRequest, params: ["field": "fromTimestamp", "reason": "after toTimestamp"]) {
                _ = try await ids(saved) {
                    $0.fromTimestamp = start + 10
                    $0.toTimestamp = start
                }
            }
            // A thread of another conversation is refused on the pinned list, as on the listing.
            let elsewhere = try await chat.say("elsewhere", as: "dave", to: .user("erin"))
            await expectRefusal(.wrongMessageThread) {
                _ = try await ids(pinned) { $0.parentMessageId = elsewhere.id }
            }
        }
    }

    @Test func fetchRequestsAreChecked() async throws {
        try await withChat { chat in
            await expectRefusal(.badRequest) {
                _ = try await chat.service.fetchPrevious(MessagesRequest(pinned: true), as: "dave")
            }
            await expectRefusal(.badRequest) {
                _ = try await chat.service.fetchPrevious(MessagesRequest(guid: "g", saved: true), as: "dave")
            }
            await expectRefusal(.badRequest) {
                _ = try await chat.service.fetchPrevious(MessagesRequest(uid: "bob", saved: true), as: "dave")
            }
            // A thread is one conversation's too: the saved list would ignore it.
            await expectRefusal(.badRequest) {
                _ = try await chat.service.fetchPrevious(MessagesRequest(parentMessageId: 1, saved: true), as: "dave")
            }
            await expectRefusal(.groupNotJoined) {
                _ = try await chat.service.fetchPrevious(MessagesRequest(guid: "g", pinned: true), as: "erin")
            }
        }
    }
}

@Suite struct PinSaveEventTests {
    @Test func pinEventsReachEveryParticipant() async throws {
        try await withChat { chat in
            let message = try await chat.say("m", as: "dave")
            let before = try await chat.store.latestEventSequence()
            _ = try await chat.service.pin(message.id, as: "carol")
            _ = try await chat.service.unpin(message.id, as: "bob")
            for uid in ["alice", "bob", "carol", "dave"] {
                let events = try await chat.service.events(for: uid, after: before).events
                #expect(events.map(\.name) == [.messagePinned, .messageUnpinned], "\(uid)")
                #expect(events.first?.message?.pinnedBy == "carol")
                // Who unpinned is in the event alone: the message's pinnedBy is cleared.
                #expect(events.map(\.actor) == ["carol", "bob"])
                #expect(events.map(\.author) == ["carol", "bob"])
            }
            #expect(try await chat.service.events(for: "erin", after: before).events.isEmpty)
        }
    }

    /// A pin as app_system names the bot behind it as the event's actor, while the message reads
    /// `pinnedBy == "app_system"`; edits, deletions and saves name whoever made them, and the
    /// message's sender is then not the event's author.
    @Test func eventsNameWhoeverActed() async throws {
        try await withChat { chat in
            let message = try await chat.say("m", as: "dave")
            let before = try await chat.store.latestEventSequence()
            let pinned = try await chat.service.pin(message.id, as: User.system, by: "carol")
            #expect(pinned.pinnedBy == User.system)
            _ = try await chat.service.edit(message.id, text: "n", as: "dave")
            _ = try await chat.service.save(message.id, as: "bob")
            _ = try await chat.service.delete(message.id, as: "bob")
            let events = try await chat.service.events(for: "bob", after: before).events
            #expect(events.map(\.name) == [.messagePinned, .messageEdited, .messageSaved, .messageDeleted])
            #expect(events.map(\.actor) == ["carol", "dave", "bob", "bob"])
            // A save is no one's doing for a listener ignoring its own: the saver's other sessions
            // are to hear it.
            #expect(events.map(\.author) == ["carol", "dave", nil, "bob"])
            #expect(events.allSatisfy { $0.senderUid == "dave" })
            // The JSON the log keeps reads back with its actor.
            let decoded = try events.map { try ChatEvent(json: $0.json) }
            #expect(decoded == events)
        }
    }

    @Test func saveEventsReachOnlyTheSaversOtherSessions() async throws {
        try await withChat { chat in
            let message = try await chat.say("m", as: "dave")
            let before = try await chat.store.latestEventSequence()
            _ = try await chat.service.save(message.id, as: "bob", session: "phone")
            _ = try await chat.service.unsave(message.id, as: "bob", session: "phone")
            let laptop = try await chat.service.events(for: "bob", session: "laptop", after: before).events
            #expect(laptop.map(\.name) == [.messageSaved, .messageUnsaved])
            #expect(laptop.first?.message?.id == message.id)
            let phone = try await chat.service.events(for: "bob", session: "phone", after: before)
            #expect(phone.events.isEmpty)
            #expect(phone.scannedThrough > before)
            for uid in ["alice", "carol", "dave"] {
                #expect(try await chat.service.events(for: uid, after: before).events.isEmpty, "\(uid)")
            }
        }
    }
}

@Suite struct PinSaveGateTests {
    @Test func featureGatesRefuseEveryCall() async throws {
        try await withChat(settings: ChatSettings(pinEnabled: false, saveEnabled: false)) { chat in
            #expect(!chat.service.isPinMessageEnabled() && !chat.service.isSaveMessageEnabled())
            let message = try await chat.say("m", as: "alice")
            await expectRefusal(.featureNotAccessible, params: ["feature": "pin"]) {
                _ = try await chat.service.pin(message.id, as: "alice")
            }
            await expectRefusal(.featureNotAccessible) { _ = try await chat.service.unpin(message.id, as: "alice") }
            await expectRefusal(.featureNotAccessible, params: ["feature": "save"]) {
                _ = try await chat.service.save(message.id, as: "alice")
            }
            await expectRefusal(.featureNotAccessible) { _ = try await chat.service.unsave(message.id, as: "alice") }
        }
        try await withChat { chat in
            #expect(chat.service.isPinMessageEnabled() && chat.service.isSaveMessageEnabled())
        }
    }
}

@Suite struct PinSaveErrorAndEdgeCaseTests {
    @Test func errorCodes() async throws {
        try await withChat { chat in
            await expectRefusal(.messageIdNotFound) { _ = try await chat.service.pin(404, as: "alice") }
            await expectRefusal(.messageIdNotFound) { _ = try await chat.service.save(404, as: "alice") }
            let message = try await chat.say("m", as: "alice")
            await expectRefusal(.messageNoAccess) { _ = try await chat.service.save(message.id, as: "erin") }
            await expectRefusal(.messageNoAccess) { _ = try await chat.service.pin(message.id, as: "erin") }
            let actions = try await chat.service.fetchPrevious(
                MessagesRequest(guid: "g", categories: [.action]), as: "alice")
            let action = try #require(actions.messages.first)
            await expectRefusal(.messageActionNotAllowed) { _ = try await chat.service.pin(action.id, as: "alice") }
        }
    }

    @Test func aDeletedPinnedMessageIsUnpinnedAndLeavesNothing() async throws {
        try await withChat { chat in
            let message = try await chat.say("m", as: "dave")
            _ = try await chat.service.pin(message.id, as: "carol")
            _ = try await chat.service.save(message.id, as: "bob")
            let deleted = try await chat.service.delete(message.id, as: "dave")
            #expect(deleted.pinnedAt == 0 && deleted.pinnedBy == "")
            #expect(
                try await chat.service.fetchPrevious(MessagesRequest(guid: "g", pinned: true), as: "dave").messages
                    .isEmpty)
            #expect(try await chat.service.fetchPrevious(MessagesRequest(saved: true), as: "bob").messages.isEmpty)
        }
    }

    @Test func anEditedMessageKeepsItsPin() async throws {
        try await withChat { chat in
            let message = try await chat.say("m", as: "dave")
            _ = try await chat.service.pin(message.id, as: "carol")
            let edited = try await chat.service.edit(message.id, text: "m2", as: "dave")
            #expect(edited.pinnedAt != 0 && edited.pinnedBy == "carol")
        }
    }

    @Test func anInaccessibleSavedMessageIsDroppedAndFreesItsPlace() async throws {
        try await withChat(settings: ChatSettings(savesPerUser: 1)) { chat in
            let message = try await chat.say("m", as: "alice")
            _ = try await chat.service.save(message.id, as: "dave")
            try await chat.service.leave("g", as: "dave")
            #expect(try await chat.service.fetchPrevious(MessagesRequest(saved: true), as: "dave").messages.isEmpty)
            let direct = try await chat.say("dm", as: "dave", to: .user("erin"))
            _ = try await chat.service.save(direct.id, as: "dave")
            #expect(
                try await chat.service.fetchPrevious(MessagesRequest(saved: true), as: "dave").messages.map(\.id) == [
                    direct.id
                ])
        }
    }

    @Test func threadRepliesCanBePinnedAndSaved() async throws {
        try await withChat { chat in
            let root = try await chat.say("root", as: "dave")
            let reply = try await chat.say("reply", as: "bob", parent: root.id)
            #expect(try await chat.service.pin(reply.id, as: "carol").pinnedAt != 0)
            #expect(try await chat.service.save(reply.id, as: "dave").savedAt != 0)
        }
    }

    @Test func someoneElseMayUnpinYourPin() async throws {
        try await withChat { chat in
            let message = try await chat.say("m", as: "dave")
            _ = try await chat.service.pin(message.id, as: "alice")
            let unpinned = try await chat.service.unpin(message.id, as: "carol")
            #expect(unpinned.pinnedAt == 0)
        }
    }
}
