import PerchChat
import PerchService
import PerchTestSupport
import Testing

@Suite struct NotificationServiceTests {
    func reasons(_ chat: ChatFixture, _ uid: String, after seq: Int64 = 0) async throws -> [String] {
        try await chat.service.notifications(for: uid, after: seq).records.map {
            "\($0.messageId):\($0.reason.rawValue)"
        }
    }

    @Test func preferencesDefaultFromSettingsAndUpdate() async throws {
        let defaults = NotificationPreferences(
            group: ConversationPreferences(
                messages: .subscribeToMentions, replies: .subscribeToSubscribedThreads,
                quotedReplies: .subscribeToQuotesOnOwnMessages),
            oneOnOne: .oneOnOneDefault)
        try await withChat(settings: ChatSettings(notificationDefaults: defaults)) { chat in
            #expect(try await chat.service.notificationPreferences(of: "dave") == defaults)
            var mine = defaults
            mine.oneOnOne.messages = .dontSubscribe
            _ = try await chat.service.updateNotificationPreferences(mine, of: "dave")
            #expect(try await chat.service.notificationPreferences(of: "dave") == mine)
            await expectRefusal(.uidNotFound) { _ = try await chat.service.notificationPreferences(of: "ghost") }
        }
    }

    @Test func aChangeReplacesOnlyTheFieldsItNames() async throws {
        try await withChat { chat in
            var stored = NotificationPreferences()
            stored.group.replies = .subscribeToSubscribedThreads
            _ = try await chat.service.updateNotificationPreferences(stored, of: "dave")
            let change = NotificationPreferencesChange(
                oneOnOne: .init(quotedReplies: .dontSubscribe), doNotDisturb: true)
            let changed = try await chat.service.changeNotificationPreferences(change, of: "dave")
            var expected = stored
            expected.oneOnOne.quotedReplies = .dontSubscribe
            expected.doNotDisturb = true
            #expect(changed == expected)
            #expect(try await chat.service.notificationPreferences(of: "dave") == expected)
            #expect(try await chat.service.notificationPreferences(of: "carol") == NotificationPreferences())
            await expectRefusal(.uidNotFound) {
                _ = try await chat.service.changeNotificationPreferences(change, of: "ghost")
            }
        }
    }

    @Test func botUsersAreRecipientsLikeAnyoneWithAccess() async throws {
        // SPEC: every new message yields its recipients among the users with access; a bot is a
        // user (`role: bot`), and its plugins may read its outbox.
        try await withChat { chat in
            _ = try await chat.service.createUser(uid: "robo", name: "Robo", role: User.botRole)
            try await chat.service.addMembers(to: "g", [("robo", .participant)], by: "alice")
            let inGroup = try await chat.say("hello <@uid:robo> and all", as: "bob")
            let direct = try await chat.say("just you", as: "dave", to: .user("robo"))
            #expect(try await reasons(chat, "robo") == ["\(inGroup.id):mention", "\(direct.id):message"])
            #expect(try await reasons(chat, "dave") == ["\(inGroup.id):message"])
        }
    }

    @Test func groupsAndOneOnOneRouteByTheirOwnPreferences() async throws {
        try await withChat { chat in
            var quiet = NotificationPreferences()
            quiet.group.messages = .subscribeToMentions
            quiet.oneOnOne.messages = .dontSubscribe
            _ = try await chat.service.updateNotificationPreferences(quiet, of: "bob")
            let plain = try await chat.say("plain", as: "dave")
            let mention = try await chat.say("hey <@uid:bob>", as: "dave")
            let direct = try await chat.say("dm", as: "dave", to: .user("bob"))
            #expect(try await reasons(chat, "bob") == ["\(mention.id):mention"])
            #expect(try await reasons(chat, "carol") == ["\(plain.id):message", "\(mention.id):message"])
            #expect(try await reasons(chat, "dave") == [])
            #expect(try await reasons(chat, "erin") == [])
            _ = direct
        }
    }

    @Test func aReplyAndQuoteIsRoutedByTheUnion() async throws {
        try await withChat { chat in
            var preferences = NotificationPreferences()
            preferences.group = ConversationPreferences(
                messages: .dontSubscribe, replies: .dontSubscribe, quotedReplies: .subscribeToQuotesOnOwnMessages)
            for uid in ["alice", "bob", "carol", "dave"] {
                _ = try await chat.service.updateNotificationPreferences(preferences, of: uid)
            }
            let root = try await chat.say("root", as: "alice")
            let first = try await chat.say("first", as: "carol", parent: root.id)
            let before = try await chat.service.notifications(for: "carol").records.last?.seq ?? 0
            let both = try await chat.say("both", as: "bob", parent: root.id, quote: first.id)
            #expect(try await reasons(chat, "carol", after: before) == ["\(both.id):quote_on_own_message"])
            #expect(try await reasons(chat, "alice") == [])
        }
    }

    @Test func subscribedThreadsOnlyAfterUnsubscribeUntilReplyOrMention() async throws {
        try await withChat { chat in
            var preferences = NotificationPreferences()
            preferences.group.replies = .subscribeToSubscribedThreads
            preferences.group.messages = .dontSubscribe
            _ = try await chat.service.updateNotificationPreferences(preferences, of: "bob")
            let root = try await chat.say("root", as: "dave")
            let r1 = try await chat.say("r1", as: "bob", parent: root.id)
            let r2 = try await chat.say("r2", as: "carol", parent: root.id)
            #expect(try await reasons(chat, "bob") == ["\(r2.id):subscribed_thread"])
            _ = r1
            _ = try await chat.service.unsubscribeFromThread(root.id, as: "bob")
            let mark = try await chat.service.notifications(for: "bob").records.last?.seq ?? 0
            _ = try await chat.say("r3", as: "carol", parent: root.id)
            _ = try await chat.say("r4", as: "dave", parent: root.id)
            #expect(try await reasons(chat, "bob", after: mark) == [])
            let mention = try await chat.say("r5 <@uid:bob>", as: "carol", parent: root.id)
            let r6 = try await chat.say("r6", as: "dave", parent: root.id)
            #expect(
                try await reasons(chat, "bob", after: mark) == [
                    "\(mention.id):subscribed_thread", "\(r6.id):subscribed_thread",
                ])
        }
    }

    /// With the default preferences (every reply notifies), an explicit unsubscribe still means
    /// what its copy says: nothing of that thread until the user replies or is mentioned there.
    @Test func anUnsubscribeMutesTheThreadInAGroupUntilAReplyOrAMention() async throws {
        try await withChat { chat in
            let root = try await chat.say("root", as: "dave")
            _ = try await chat.say("bob's answer", as: "bob", parent: root.id)
            _ = try await chat.service.unsubscribeFromThread(root.id, as: "bob")
            let mark = try await chat.service.notifications(for: "bob").records.last?.seq ?? 0
            _ = try await chat.say("carol's", as: "carol", parent: root.id)
            let other = try await chat.say("elsewhere", as: "carol")
            // Other messages of the group still notify; the thread does not.
            #expect(try await reasons(chat, "bob", after: mark) == ["\(other.id):message"])
            let mention = try await chat.say("what do you think <@uid:bob>", as: "carol", parent: root.id)
            let next = try await chat.say("and then", as: "dave", parent: root.id)
            #expect(
                try await reasons(chat, "bob", after: mark) == [
                    "\(other.id):message", "\(mention.id):mention", "\(next.id):reply",
                ])
            // Unsubscribed again, then replying lifts it too.
            _ = try await chat.service.unsubscribeFromThread(root.id, as: "bob")
            let quiet = try await chat.say("quiet", as: "dave", parent: root.id)
            _ = try await chat.say("me again", as: "bob", parent: root.id)
            let heard = try await chat.say("heard", as: "dave", parent: root.id)
            let after = try await reasons(chat, "bob", after: mark)
            #expect(!after.contains("\(quiet.id):reply") && after.last == "\(heard.id):reply")
        }
    }

    @Test func anUnsubscribeMutesAOneOnOneThreadToo() async throws {
        try await withChat { chat in
            let root = try await chat.say("a question", as: "dave", to: .user("bob"))
            _ = try await chat.say("an answer", as: "bob", to: .user("dave"), parent: root.id)
            _ = try await chat.service.unsubscribeFromThread(root.id, as: "bob")
            let mark = try await chat.service.notifications(for: "bob").records.last?.seq ?? 0
            _ = try await chat.say("more", as: "dave", to: .user("bob"), parent: root.id)
            let direct = try await chat.say("not in the thread", as: "dave", to: .user("bob"))
            #expect(try await reasons(chat, "bob", after: mark) == ["\(direct.id):message"])
            _ = try await chat.say("ok", as: "bob", to: .user("dave"), parent: root.id)
            let later = try await chat.say("later", as: "dave", to: .user("bob"), parent: root.id)
            #expect(try await reasons(chat, "bob", after: mark) == ["\(direct.id):message", "\(later.id):reply"])
            // The other person's own unsubscription is theirs alone.
            #expect(try await reasons(chat, "dave").contains { $0.hasSuffix(":reply") })
        }
    }

    @Test func onlyUsersWithAccessAreNotified() async throws {
        try await withChat { chat in
            try await chat.service.kick("dave", from: "g", by: "bob")
            _ = try await chat.say("after", as: "carol")
            #expect(try await reasons(chat, "dave") == [])
            await expectRefusal(.badRequest) { _ = try await chat.service.notifications(for: "dave", limit: 0) }
        }
    }

    /// A large group's rows are written many to a statement: every member still gets exactly one
    /// row, with the reason of their own preferences, and the rows keep the routing's order.
    @Test func aLargeGroupGetsOneRowPerMemberInOrder() async throws {
        try await withChat { chat in
            let uids = (0..<130).map { String(format: "m%03d", $0) }
            for uid in uids { _ = try await chat.service.createUser(uid: uid, name: uid) }
            for start in stride(from: 0, to: uids.count, by: 65) {
                let part = uids[start..<min(start + 65, uids.count)]
                try await chat.service.addMembers(to: "g", part.map { ($0, .participant) }, by: "alice")
            }
            var quiet = try await chat.service.notificationPreferences(of: "m064")
            quiet.group.messages = .subscribeToMentions
            _ = try await chat.service.updateNotificationPreferences(quiet, of: "m064")
            let before = try await chat.service.notifications(for: "m000").records.count
            let message = try await chat.say("hello <@uid:m064>", as: "alice")
            var seqs: [Int64] = []
            for uid in uids {
                let rows = try await chat.service.notifications(for: uid).records.filter { $0.messageId == message.id }
                #expect(rows.count == 1, "\(uid)")
                #expect(rows.first?.reason == (uid == "m064" ? .mention : .message), "\(uid)")
                seqs += rows.map(\.seq)
            }
            #expect(seqs == seqs.sorted())
            #expect(Set(seqs).count == uids.count)
            #expect(try await chat.service.notifications(for: "m000").records.count == before + 1)
            // The sender gets none.
            #expect(
                try await chat.service.notifications(for: "alice").records.allSatisfy { $0.messageId != message.id })
        }
    }
}

/// Muting (CometChat's `muteConversations` and `mutePreferences.dnd`): a muted conversation, or a
/// user in do-not-disturb, gets no notification; the rest of the audience is routed as before.
@Suite struct MuteTests {
    func reasons(_ chat: ChatFixture, _ uid: String) async throws -> [String] {
        try await chat.service.notifications(for: uid).records.map { "\($0.messageId):\($0.reason.rawValue)" }
    }

    @Test func aMutedConversationNotifiesNothingUntilItsEnd() async throws {
        try await withChat { chat in
            let now = chat.clock.now()
            // A send before the mute (the writer then remembers the group's mutes: none).
            let before = try await chat.say("before", as: "dave")
            #expect(try await reasons(chat, "bob") == ["\(before.id):message"])
            try await chat.service.muteConversations(
                [
                    MutedConversation(receiver: .group("g"), until: now + 60),
                    MutedConversation(receiver: .user("dave"), until: 0),
                ], as: "bob")
            // By conversation id: `bob_user_dave`, then `group_g`.
            let muted = try await chat.service.mutedConversations(of: "bob")
            #expect(
                muted == [
                    MutedConversation(receiver: .user("dave"), until: 0), .init(receiver: .group("g"), until: now + 60),
                ])
            // A mention, a reply and a quote of bob's own message are muted alike.
            let own = try await chat.say("mine", as: "bob")
            let mention = try await chat.say("hey <@uid:bob>", as: "dave")
            _ = try await chat.say("a reply", as: "dave", parent: own.id)
            _ = try await chat.say("a quote", as: "dave", quote: own.id)
            _ = try await chat.say("dm", as: "dave", to: .user("bob"))
            #expect(try await reasons(chat, "bob") == ["\(before.id):message"])
            // Only bob muted them: carol hears the group as before.
            #expect(try await reasons(chat, "carol").contains("\(own.id):message"))
            #expect(try await reasons(chat, "carol").contains("\(mention.id):message"))
            // The group's mute ends at its second; the one-on-one stays muted until unmuted.
            chat.clock.advance(by: 60)
            let after = try await chat.say("after the mute", as: "dave")
            let direct = try await chat.say("dm again", as: "dave", to: .user("bob"))
            #expect(try await reasons(chat, "bob") == ["\(before.id):message", "\(after.id):message"])
            #expect(try await chat.service.mutedConversations(of: "bob") == [.init(receiver: .user("dave"), until: 0)])
            try await chat.service.unmuteConversations([.user("dave")], as: "bob")
            let unmuted = try await chat.say("dm at last", as: "dave", to: .user("bob"))
            #expect(
                try await reasons(chat, "bob") == [
                    "\(before.id):message", "\(after.id):message", "\(unmuted.id):message",
                ])
            #expect(try await chat.service.mutedConversations(of: "bob") == [])
            _ = direct
            // Unmuting what is not muted, and muting again, are quiet.
            try await chat.service.unmuteConversations([.group("g")], as: "bob")
            try await chat.service.muteConversations([MutedConversation(receiver: .group("g"), until: 0)], as: "bob")
            try await chat.service.muteConversations([MutedConversation(receiver: .group("g"), until: 0)], as: "bob")
            #expect(try await chat.service.mutedConversations(of: "bob") == [.init(receiver: .group("g"), until: 0)])
            // A mute of a group one has left can still be undone; a new one cannot be made.
            try await chat.service.leave("g", as: "bob")
            await expectRefusal(.groupNotJoined) {
                try await chat.service.muteConversations(
                    [MutedConversation(receiver: .group("g"), until: 0)], as: "bob")
            }
            try await chat.service.unmuteConversations([.group("g")], as: "bob")
            #expect(try await chat.service.mutedConversations(of: "bob") == [])
            await expectRefusal(.groupNotJoined) {
                try await chat.service.unmuteConversations([.group("g")], as: "bob")
            }
        }
    }

    @Test func doNotDisturbSilencesEveryConversation() async throws {
        try await withChat { chat in
            var preferences = try await chat.service.notificationPreferences(of: "bob")
            #expect(!preferences.doNotDisturb)
            preferences.doNotDisturb = true
            _ = try await chat.service.updateNotificationPreferences(preferences, of: "bob")
            #expect(try await chat.service.notificationPreferences(of: "bob").doNotDisturb)
            _ = try await chat.say("hey <@uid:bob>", as: "dave")
            _ = try await chat.say("dm", as: "dave", to: .user("bob"))
            #expect(try await reasons(chat, "bob") == [])
            preferences.doNotDisturb = false
            _ = try await chat.service.updateNotificationPreferences(preferences, of: "bob")
            let back = try await chat.say("hey again <@uid:bob>", as: "dave")
            #expect(try await reasons(chat, "bob") == ["\(back.id):mention"])
        }
    }

    @Test func mutesAreChecked() async throws {
        try await withChat { chat in
            let now = chat.clock.now()
            _ = try await chat.service.createGroup(guid: "secret", name: "Secret", type: .private, owner: "alice")
            _ = try await chat.service.createGroup(guid: "open", name: "Open", owner: "alice")
            await expectRefusal(
                .badRequest,
                params: ["field": "until", "reason": "must lie ahead (epoch seconds), or be 0 for until unmuted"]
            ) {
                try await chat.service.muteConversations(
                    [MutedConversation(receiver: .group("g"), until: now)], as: "bob")
            }
            await expectRefusal(.badRequest, params: ["field": "conversations", "reason": "give 1–100 conversations"]) {
                try await chat.service.muteConversations([], as: "bob")
            }
            await expectRefusal(.guidNotFound, params: ["guid": "nowhere"]) {
                try await chat.service.muteConversations(
                    [MutedConversation(receiver: .group("nowhere"), until: 0)], as: "bob")
            }
            // A private group is not found to an outsider; a public one is not joined.
            await expectRefusal(.guidNotFound, params: ["guid": "secret"]) {
                try await chat.service.muteConversations(
                    [MutedConversation(receiver: .group("secret"), until: 0)], as: "bob")
            }
            await expectRefusal(.groupNotJoined, params: ["guid": "open"]) {
                try await chat.service.unmuteConversations([.group("open")], as: "bob")
            }
            await expectRefusal(.uidNotFound) {
                try await chat.service.muteConversations(
                    [MutedConversation(receiver: .user("ghost"), until: 0)], as: "bob")
            }
            await expectRefusal(.uidNotFound) { _ = try await chat.service.mutedConversations(of: "ghost") }
            // All or none: the good conversation before the refused one is not muted.
            await expectRefusal(.guidNotFound) {
                try await chat.service.muteConversations(
                    [MutedConversation(receiver: .group("g"), until: 0), .init(receiver: .group("secret"), until: 0)],
                    as: "bob")
            }
            #expect(try await chat.service.mutedConversations(of: "bob") == [])
        }
    }
}
