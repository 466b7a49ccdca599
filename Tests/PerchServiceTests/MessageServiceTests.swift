import PerchChat
import PerchSQLite
import PerchService
import PerchTestSupport
import Testing

@Suite struct MessageServiceTests {
    @Test func sendsToAGroupAndOneOnOne() async throws {
        try await withChat { chat in
            let group = try await chat.say("hello", as: "dave")
            #expect(group.conversationId == "group_g")
            #expect(group.receiverType == .group && group.receiverUid == "g")
            #expect(group.sentAt == chat.clock.now() && group.updatedAt == group.sentAt)
            let direct = try await chat.say("hi", as: "erin", to: .user("bob"))
            #expect(direct.conversationId == "bob_user_erin")
            #expect(direct.id > group.id)
            let fetched = try await chat.service.message(direct.id, as: "bob")
            #expect(fetched.text == "hi")
            await expectRefusal(.messageNoAccess) { _ = try await chat.service.message(direct.id, as: "carol") }
        }
    }

    /// Text goes to SQLite with its length, from one scratch buffer a statement: what is read back
    /// from the file after a restart is what was sent, a U+0000 inside it, a text far longer than
    /// the buffer's stack size and several text values of one statement included.
    @Test func textIsStoredWholeAndReadBackFromTheFile() async throws {
        let chat = try await ChatFixture.make()
        let texts = ["nul \u{0} inside", "\u{0}", "é 🎉 ünïcödé", String(repeating: "long ✓ ", count: 3_000)]
        var sent: [Message] = []
        for (index, text) in texts.enumerated() {
            sent.append(try await chat.say(text, muid: "client-\(index)-\u{0}-✓"))
        }
        await chat.store.close()
        let reopened = try SQLiteChatStore(path: chat.path)
        let service = ChatService(store: reopened)
        for (message, text) in zip(sent, texts) {
            let stored = try await service.message(message.id, as: "bob")
            #expect(stored.text == text)
            #expect(stored.text?.utf8.count == text.utf8.count)
            #expect(stored.muid == message.muid)
        }
        // The muid is looked up by a bound text too: a retry after the restart finds the first.
        let retry = try await service.send(
            MessageDraft(to: .group("g"), text: "retry", muid: sent[0].muid), as: "dave")
        #expect(retry.id == sent[0].id)
        await reopened.close()
        await chat.close()
    }

    @Test func aResendWithTheSameMuidReturnsTheFirstMessage() async throws {
        try await withChat { chat in
            let first = try await chat.say("once", muid: "client-1")
            let again = try await chat.say("once (retry)", muid: "client-1")
            #expect(again.id == first.id)
            #expect(again.text == "once")
            // Another sender may use the same muid.
            let other = try await chat.say("mine", as: "carol", muid: "client-1")
            #expect(other.id != first.id)
            let page = try await chat.service.fetchPrevious(
                MessagesRequest(guid: "g", categories: [.message]), as: "dave")
            #expect(page.messages.map(\.text) == ["once", "mine"])
            let events = try await chat.service.events(for: "dave", after: 0).events.filter { $0.name.isNewMessage }
            #expect(events.count == 2)
        }
    }

    @Test func refusesBadContentAndUnknownReceivers() async throws {
        try await withChat { chat in
            await expectRefusal(.emptyMessageText) { try await chat.say("   ") }
            await expectRefusal(.invalidMessageData) {
                _ = try await chat.service.send(MessageDraft(to: .group("g"), type: MessageType.image), as: "dave")
            }
            await expectRefusal(.uidNotFound, params: ["uid": "nobody"]) {
                try await chat.say("x", to: .user("nobody"))
            }
            await expectRefusal(.guidNotFound, params: ["guid": "nope"]) { try await chat.say("x", to: .group("nope")) }
            await expectRefusal(.uidNotFound) { try await chat.say("x", as: "ghost") }
            await expectRefusal(.badRequest) { _ = try await chat.service.createUser(uid: "app_system", name: "S") }
            await expectRefusal(.uidAlreadyExists) { _ = try await chat.service.createUser(uid: "bob", name: "B") }
        }
    }

    @Test func mediaAndCustomMessages() async throws {
        try await withChat { chat in
            let file = Attachment(
                name: "a.pdf", size: 10, mimeType: "application/pdf", extension: "pdf",
                url: "https://files.example/a.pdf")
            let media = try await chat.service.send(
                MessageDraft(to: .group("g"), type: MessageType.file, attachments: [file]), as: "dave")
            #expect(media.attachments == [file])
            let custom = try await chat.service.send(
                MessageDraft(to: .group("g"), type: "poll", category: .custom, data: .object(["q": .string("?")])),
                as: "dave")
            let events = try await chat.service.events(for: "bob", after: 0).events.map(\.name)
            #expect(events.suffix(2) == [.mediaMessageReceived, .customMessageReceived])
            #expect(custom.data?["q"] == .string("?"))
            // An attachment pointing into Perch's own media store must name an upload.
            let forged = Attachment(name: "x", size: 1, mimeType: "text/plain", extension: "txt", url: "/v3/media/nope")
            await expectRefusal(.badRequest) {
                _ = try await chat.service.send(
                    MessageDraft(to: .group("g"), type: MessageType.file, attachments: [forged]), as: "dave")
            }
        }
    }

    @Test func threadsAreOneLevelDeepInOneConversation() async throws {
        try await withChat { chat in
            let root = try await chat.say("root")
            let reply = try await chat.say("reply", as: "bob", parent: root.id)
            #expect(reply.parentMessageId == root.id)
            #expect(try await chat.service.message(root.id, as: "dave").replyCount == 1)
            await expectRefusal(.messageThreadNesting) { try await chat.say("nested", parent: reply.id) }
            let direct = try await chat.say("dm", as: "dave", to: .user("erin"))
            await expectRefusal(.wrongMessageThread) { try await chat.say("across", parent: direct.id) }
            await expectRefusal(.messageIdNotFound) { try await chat.say("missing", parent: 9_999) }
            _ = try await chat.service.delete(reply.id, as: "bob")
            #expect(try await chat.service.message(root.id, as: "dave").replyCount == 0)
            _ = try await chat.service.delete(root.id, as: "dave")
            await expectRefusal(.messageIdNotFound) { try await chat.say("late", parent: root.id) }
        }
    }

    @Test func quoteRepliesAreOneDeepAndQuoteFilesToo() async throws {
        try await withChat { chat in
            let original = try await chat.say("original")
            let quote = try await chat.say("quoting", as: "bob", quote: original.id)
            #expect(quote.quotedMessageId == original.id)
            #expect(quote.quotedMessage?.text == "original")
            await expectRefusal(.messageActionNotAllowed) { try await chat.say("quote of quote", quote: quote.id) }
            let file = try await chat.service.send(
                MessageDraft(
                    to: .user("erin"), type: MessageType.file,
                    attachments: [
                        Attachment(
                            name: "f.png", size: 1, mimeType: "image/png", extension: "png",
                            url: "https://files.example/f.png")
                    ]),
                as: "dave")
            let quotesFile = try await chat.say("nice file", as: "erin", to: .user("dave"), quote: file.id)
            #expect(quotesFile.quotedMessage?.attachments.first?.name == "f.png")
            await expectRefusal(.wrongMessageThread) { try await chat.say("across", quote: file.id) }
            // Both a thread reply and a quote reply.
            let root = try await chat.say("root")
            let inThread = try await chat.say("first", parent: root.id)
            let both = try await chat.say("both", as: "carol", parent: root.id, quote: inThread.id)
            #expect(both.parentMessageId == root.id && both.quotedMessageId == inThread.id)
        }
    }

    @Test func theDeleteGuardOnQuotedMessagesAndTheModeratorOverride() async throws {
        try await withChat { chat in
            let original = try await chat.say("original", as: "dave")
            let quote = try await chat.say("quoting", as: "bob", quote: original.id)
            await expectRefusal(
                .messageActionNotAllowed, params: ["messageId": .int(original.id), "quoteReplyCount": 1]
            ) {
                _ = try await chat.service.delete(original.id, as: "dave")
            }
            // Nothing was half-applied.
            #expect(try await chat.service.message(original.id, as: "dave").deletedAt == 0)
            let removed = try await chat.service.delete(original.id, as: "carol")
            #expect(removed.deletedBy == "carol" && removed.deletedAt != 0 && removed.text == nil)
            let shown = try await chat.service.message(quote.id, as: "dave")
            #expect(shown.quotedMessage?.deletedAt != 0)
            // Once the quote replies are gone the sender may delete.
            let second = try await chat.say("second", as: "dave")
            let quote2 = try await chat.say("q", as: "bob", quote: second.id)
            _ = try await chat.service.delete(quote2.id, as: "bob")
            _ = try await chat.service.delete(second.id, as: "dave")
            await expectRefusal(.messageIdNotFound) { _ = try await chat.service.delete(second.id, as: "dave") }
            // app_system moderates anywhere, also one-on-one.
            let direct = try await chat.say("dm", as: "dave", to: .user("erin"))
            _ = try await chat.say("q", as: "erin", to: .user("dave"), quote: direct.id)
            _ = try await chat.service.delete(direct.id, as: User.system)
        }
    }

    @Test func onlyTheSenderEditsAndMentionsAreReExtracted() async throws {
        try await withChat { chat in
            let message = try await chat.say("hello", as: "dave")
            await expectRefusal(.messageNotASender) {
                _ = try await chat.service.edit(message.id, text: "x", as: "alice")
            }
            chat.clock.advance(by: 5)
            let edited = try await chat.service.edit(message.id, text: "hello <@uid:bob>", as: "dave")
            #expect(edited.editedAt == chat.clock.now() && edited.editedBy == "dave")
            #expect(edited.mentionedUids == ["bob"])
            await expectRefusal(.emptyMessageText) {
                _ = try await chat.service.edit(message.id, text: " ", as: "dave")
            }
            let events = try await chat.service.events(for: "bob", after: 0).events
            #expect(events.last?.name == .messageEdited)
        }
    }

    @Test func mentionsKeepOnlyUsersWhoCanSeeTheConversation() async throws {
        try await withChat { chat in
            let message = try await chat.say("hey <@uid:bob> <@uid:erin> <@uid:ghost> <@uid:carol>")
            #expect(message.mentionedUids == ["bob", "carol"])
            #expect(try await chat.service.message(message.id, as: "bob").hasMentionedMe)
            #expect(!(try await chat.service.message(message.id, as: "dave").hasMentionedMe))
            let direct = try await chat.say("<@uid:erin> <@uid:bob>", as: "dave", to: .user("erin"))
            #expect(direct.mentionedUids == ["erin"])
        }
    }

    @Test func accessEndsWithLeaveKickAndBan() async throws {
        try await withChat { chat in
            try await chat.service.leave("g", as: "dave")
            await expectRefusal(.groupNotJoined) { try await chat.say("after leaving", as: "dave") }
            await expectRefusal(.groupNotJoined) {
                _ = try await chat.service.fetchPrevious(MessagesRequest(guid: "g"), as: "dave")
            }
            _ = try await chat.service.join("g", as: "dave")
            try await chat.service.kick("dave", from: "g", by: "carol")
            await expectRefusal(.groupNotJoined) { try await chat.say("after the kick", as: "dave") }
            _ = try await chat.service.join("g", as: "dave")
            let old = try await chat.say("before the ban", as: "dave")
            try await chat.service.ban("dave", from: "g", by: "bob")
            await expectRefusal(.bannedGroupMember) { try await chat.say("after the ban", as: "dave") }
            await expectRefusal(.bannedGroupMember) { _ = try await chat.service.join("g", as: "dave") }
            await expectRefusal(.messageNoAccess) { _ = try await chat.service.message(old.id, as: "dave") }
            await expectRefusal(.bannedGroupMember) {
                _ = try await chat.service.fetchPrevious(MessagesRequest(guid: "g"), as: "dave")
            }
            try await chat.service.unban("dave", from: "g", by: "carol")
            _ = try await chat.service.join("g", as: "dave")
            _ = try await chat.say("back", as: "dave")
        }
    }
}

@Suite struct GroupServiceTests {
    @Test func scopeChangesFollowCometChat() async throws {
        try await withChat { chat in
            await expectRefusal(.groupNoClearance) {
                _ = try await chat.service.changeScope(of: "dave", in: "g", to: .moderator, by: "carol")
            }
            await expectRefusal(.groupNoScopeClearance) {
                _ = try await chat.service.changeScope(of: "dave", in: "g", to: .admin, by: "bob")
            }
            let promoted = try await chat.service.changeScope(of: "dave", in: "g", to: .moderator, by: "bob")
            #expect(promoted.scope == .moderator)
            await expectRefusal(.sameScope) {
                _ = try await chat.service.changeScope(of: "dave", in: "g", to: .moderator, by: "alice")
            }
            await expectRefusal(.notAMember) {
                _ = try await chat.service.changeScope(of: "erin", in: "g", to: .moderator, by: "alice")
            }
            let events = try await chat.service.events(for: "dave", after: 0).events
            #expect(events.last?.name == .groupMemberScopeChanged)
            #expect(events.last?.member?.oldScope == .participant && events.last?.member?.scope == .moderator)
        }
    }

    /// Someone who may not change scopes (an outsider, a participant, a moderator) gets one answer
    /// whether the user named is in the group or not: the members of a private group are not theirs
    /// to learn by trying.
    @Test func aScopeChangeTellsNoOutsiderWhoIsInTheGroup() async throws {
        try await withChat { chat in
            _ = try await chat.service.createGroup(guid: "hidden", name: "H", type: .private, owner: "alice")
            try await chat.service.addMembers(to: "hidden", [("bob", .participant)], by: "alice")
            for actor in ["erin", "dave", "carol"] {
                for target in ["bob", "dave", "erin"] where target != actor {
                    await expectRefusal(.groupNoClearance) {
                        _ = try await chat.service.changeScope(of: target, in: "hidden", to: .moderator, by: actor)
                    }
                }
            }
        }
    }

    /// A scope given by configuration (a seed's or a bot's) is announced as one given by a person:
    /// members see the change live and in the group's history.
    @Test func aScopeSetByConfigurationIsAnnounced() async throws {
        try await withChat { chat in
            let before = try await chat.service.events(for: "carol", after: 0).events.last?.seq ?? 0
            try await chat.service.ensureSeededMember(guid: "g", uid: "dave", scope: .moderator)
            let events = try await chat.service.events(for: "carol", after: before).events
            #expect(events.map(\.name) == [.groupMemberScopeChanged])
            // The configuration did it: the app, never the group's owner, who did nothing.
            #expect(events.first?.member?.uid == "dave" && events.first?.member?.actor == User.system)
            #expect(events.first?.member?.oldScope == .participant && events.first?.member?.scope == .moderator)
            let history = try await chat.service.fetchPrevious(MessagesRequest(guid: "g", limit: 1), as: "carol")
            #expect(history.messages.last?.category == .action)
            #expect(history.messages.last?.text == "app_system made dave moderator")
            // The same seed again changes nothing and announces nothing.
            try await chat.service.ensureSeededMember(guid: "g", uid: "dave", scope: .moderator)
            try await chat.service.ensureMember(guid: "g", uid: "dave", scope: .moderator)
            #expect(try await chat.service.events(for: "carol", after: before).events.count == 1)
        }
    }

    @Test func kicksAndBansNeedScope() async throws {
        try await withChat { chat in
            await expectRefusal(.groupNoClearance) { try await chat.service.kick("carol", from: "g", by: "dave") }
            await expectRefusal(.groupNoScopeClearance) { try await chat.service.kick("bob", from: "g", by: "carol") }
            await expectRefusal(.groupNoSelfAction) { try await chat.service.kick("carol", from: "g", by: "carol") }
            await expectRefusal(.notAMember) { try await chat.service.kick("erin", from: "g", by: "carol") }
            // A uid nobody has is named as such, for a kick, a ban, an unban or a scope change alike.
            await expectRefusal(.uidNotFound) { try await chat.service.kick("ghost", from: "g", by: "carol") }
            await expectRefusal(.uidNotFound) { try await chat.service.ban("ghost", from: "g", by: "carol") }
            await expectRefusal(.uidNotFound) { try await chat.service.unban("ghost", from: "g", by: "carol") }
            await expectRefusal(.uidNotFound) {
                _ = try await chat.service.changeScope(of: "ghost", in: "g", to: .moderator, by: "alice")
            }
            await expectRefusal(.badRequest) { try await chat.service.leave("g", as: "alice") }
            await expectRefusal(.groupNotJoined) { try await chat.service.leave("g", as: "erin") }
            await expectRefusal(.alreadyJoined) { _ = try await chat.service.join("g", as: "dave") }
        }
    }

    /// CometChat's Update Group: the owner and admins change the name, type and metadata.
    @Test func theOwnerAndAdminsUpdateTheGroup() async throws {
        try await withChat { chat in
            chat.clock.advance(by: 60)
            let renamed = try await chat.service.updateGroup("g", name: "General", by: "bob")
            #expect(renamed.name == "General" && renamed.type == .public && renamed.owner == "alice")
            #expect(renamed.updatedAt == chat.clock.now() && renamed.createdAt < renamed.updatedAt)
            let closed = try await chat.service.updateGroup(
                "g", type: .private, metadata: .object(["topic": .string("ops")]), by: "alice")
            #expect(closed.name == "General" && closed.type == .private)
            let read = try await chat.service.group("g", as: "dave")
            #expect(read.name == "General" && read.metadata?["topic"]?.stringValue == "ops" && read.membersCount == 4)
            _ = try await chat.service.updateGroup("g", name: "By the app", by: User.system)

            await expectRefusal(.groupNoClearance) {
                _ = try await chat.service.updateGroup("g", name: "x", by: "carol")
            }
            await expectRefusal(.groupNoClearance) {
                _ = try await chat.service.updateGroup("g", name: "x", by: "dave")
            }
            // Private now: an outsider is told there is no such group.
            await expectRefusal(.guidNotFound) { _ = try await chat.service.updateGroup("g", name: "x", by: "erin") }
            _ = try await chat.service.updateGroup("g", type: .public, by: "alice")
            await expectRefusal(.groupNotJoined) { _ = try await chat.service.updateGroup("g", name: "x", by: "erin") }
            await expectRefusal(.badRequest, params: ["field": "name", "reason": "must be 1–100 characters"]) {
                _ = try await chat.service.updateGroup("g", name: "  ", by: "alice")
            }
            await expectRefusal(.guidNotFound) {
                _ = try await chat.service.updateGroup("nope", name: "x", by: "alice")
            }
            #expect(try await chat.service.group("g", as: "dave").name == "By the app")
        }
    }

    @Test func privateGroupsAreInvisibleToOutsiders() async throws {
        try await withChat { chat in
            _ = try await chat.service.createGroup(guid: "secret", name: "S", type: .private, owner: "alice")
            await expectRefusal(.guidNotFound) { _ = try await chat.service.group("secret", as: "erin") }
            await expectRefusal(.groupJoinNotAllowed) { _ = try await chat.service.join("secret", as: "erin") }
            await expectRefusal(.guidNotFound) { _ = try await chat.service.bannedUsers(of: "secret", as: "erin") }
            await expectRefusal(.groupNoClearance) { _ = try await chat.service.bannedUsers(of: "g", as: "erin") }
            #expect(try await chat.service.groups(as: "erin").map(\.guid) == ["g"])
            #expect(try await chat.service.groups(as: "alice").map(\.guid) == ["g", "secret"])
            #expect(try await chat.service.group("g", as: "erin").membersCount == 4)
        }
    }
}
