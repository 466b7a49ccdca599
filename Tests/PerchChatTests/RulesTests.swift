import PerchChat
import Testing

func message(
    id: Int64, conversation: String = "group_g", sender: String = "alice", parent: Int64 = 0,
    quoted: Int64 = 0, deleted: Bool = false, category: MessageCategory = .message, group: Bool = true
) -> Message {
    Message(
        id: id, conversationId: conversation, sender: sender, receiverType: group ? .group : .user,
        receiverUid: group ? "g" : "bob", category: category, text: "t", parentMessageId: parent,
        quotedMessageId: quoted, deletedAt: deleted ? 1 : 0)
}

func member(_ uid: String, _ scope: GroupMemberScope) -> Participation {
    Participation(uid: uid, receiverType: .group, standing: .member(scope))
}

func code(_ body: () throws -> Void) -> ChatError.Code? {
    do {
        try body()
        return nil
    } catch {
        return (error as? ChatError)?.code ?? ChatError.Code("not a ChatError: \(error)")
    }
}

@Suite struct ConversationTests {
    @Test func oneOnOneIdsSortTheUids() {
        #expect(ConversationID.user("bob", "alice") == "alice_user_bob")
        #expect(ConversationID.user("alice", "bob") == "alice_user_bob")
        #expect(ConversationID.group("general") == "group_general")
        #expect(Receiver.user("zed").conversationId(sender: "amy") == "amy_user_zed")
    }

    @Test func scopesAreOrdered() {
        #expect(GroupMemberScope.owner > .admin)
        #expect(GroupMemberScope.admin > .moderator)
        #expect(GroupMemberScope.moderator > .participant)
        #expect(GroupMemberScope.moderator.canModerate && !GroupMemberScope.participant.canModerate)
    }

    @Test func uids() {
        #expect(User.isValidUID("a-b_C9"))
        #expect(!User.isValidUID(""))
        #expect(!User.isValidUID("a b"))
        #expect(!User.isValidUID(String(repeating: "a", count: 101)))
        #expect(code { try User.validateNewUID("app_system") } == .badRequest)
    }
}

@Suite struct MentionTests {
    @Test func extractsUniqueWellFormedTokensInOrder() {
        let text = "hi <@uid:bob> and <@uid:carol>, again <@uid:bob>; <@uid:bad uid> <@uid:> <@uid:dave"
        #expect(Mentions.extract(from: text) == ["bob", "carol"])
        #expect(Mentions.extract(from: nil) == [])
        #expect(Mentions.extract(from: "<@uid:x>") == ["x"])
        // A small string (held inline), text around multi-byte characters, a token at the very end.
        #expect(Mentions.extract(from: "<@uid:ab>") == ["ab"])
        #expect(Mentions.extract(from: "é🎉<@uid:zoë-1> ünï <@uid:bob>") == ["bob"])
        #expect(Mentions.extract(from: "🎉 <@uid:carol_2> <@uid:dave>") == ["carol_2", "dave"])
        #expect(Mentions.extract(from: String(repeating: "x", count: 5_000) + "<@uid:erin>") == ["erin"])
        #expect(Mentions.token(for: "bob") == "<@uid:bob>")
    }

    @Test func aQuotedTextKeepsItsWordsAndMentionsNoOne() {
        let text = "hi <@uid:bob> and <@uid:carol>, <@uid:bad uid> <@uid:> é<@uid:dave"
        let quoted = Mentions.quoted(text)
        #expect(quoted == "hi @bob and @carol, <@uid:bad uid> <@uid:> é<@uid:dave")
        #expect(Mentions.extract(from: quoted) == [])
        #expect(Mentions.quoted("<@uid:x>") == "@x")
        #expect(Mentions.quoted("<@uid:<@uid:erin>>") == "<@uid:@erin>")
        #expect(Mentions.quoted("plain 🎉 text") == "plain 🎉 text")
        let long = "<@uid:" + String(repeating: "a", count: 101) + ">"
        #expect(Mentions.quoted(long) == long)
    }
}

@Suite struct ThreadAndQuoteRuleTests {
    @Test func replies() {
        #expect(
            code { try ThreadRules.checkReply(to: nil, parentId: 9, conversationId: "group_g") } == .messageIdNotFound)
        #expect(
            code {
                try ThreadRules.checkReply(to: message(id: 1, deleted: true), parentId: 1, conversationId: "group_g")
            }
                == .messageIdNotFound)
        #expect(
            code { try ThreadRules.checkReply(to: message(id: 1), parentId: 1, conversationId: "group_h") }
                == .wrongMessageThread)
        #expect(
            code { try ThreadRules.checkReply(to: message(id: 2, parent: 1), parentId: 2, conversationId: "group_g") }
                == .messageThreadNesting)
        #expect(code { try ThreadRules.checkReply(to: message(id: 1), parentId: 1, conversationId: "group_g") } == nil)
        #expect(
            code {
                try ThreadRules.checkReply(
                    to: message(id: 1, category: .action), parentId: 1, conversationId: "group_g")
            }
                == .messageActionNotAllowed)
    }

    @Test func quotes() {
        #expect(
            code { try QuoteRules.checkQuote(of: nil, quotedId: 3, conversationId: "group_g") } == .messageIdNotFound)
        #expect(
            code { try QuoteRules.checkQuote(of: message(id: 3, quoted: 1), quotedId: 3, conversationId: "group_g") }
                == .messageActionNotAllowed)
        #expect(
            code { try QuoteRules.checkQuote(of: message(id: 3), quotedId: 3, conversationId: "a_user_b") }
                == .wrongMessageThread)
        #expect(
            code {
                try QuoteRules.checkQuote(of: message(id: 3, category: .action), quotedId: 3, conversationId: "group_g")
            }
                == .messageActionNotAllowed)
        // A thread reply can be quoted; a quote reply can itself be a thread reply.
        #expect(
            code { try QuoteRules.checkQuote(of: message(id: 3, parent: 1), quotedId: 3, conversationId: "group_g") }
                == nil)
    }
}

struct DeleteCase: CustomTestStringConvertible, Sendable {
    var name: String
    var actor: Participation
    var quotes: Int
    var expected: ChatError.Code?
    var testDescription: String { name }
}

@Suite struct MessageRuleTests {
    static let deleteCases: [DeleteCase] = [
        DeleteCase(name: "sender, no quotes", actor: member("alice", .participant), quotes: 0, expected: nil),
        DeleteCase(
            name: "sender with a live quote reply", actor: member("alice", .participant), quotes: 2,
            expected: .messageActionNotAllowed),
        DeleteCase(name: "moderator overrides the guard", actor: member("mod", .moderator), quotes: 2, expected: nil),
        DeleteCase(name: "admin overrides the guard", actor: member("adm", .admin), quotes: 1, expected: nil),
        DeleteCase(
            name: "app_system overrides the guard",
            actor: Participation(uid: "app_system", receiverType: .group, standing: .system), quotes: 1, expected: nil),
        DeleteCase(
            name: "another participant", actor: member("bob", .participant), quotes: 0, expected: .messageNotASender),
        DeleteCase(
            name: "after leaving", actor: Participation(uid: "alice", receiverType: .group, standing: .outsider),
            quotes: 0, expected: .messageNoAccess),
        DeleteCase(
            name: "banned", actor: Participation(uid: "alice", receiverType: .group, standing: .banned), quotes: 0,
            expected: .messageNoAccess),
    ]

    @Test(arguments: deleteCases)
    func deleteGuard(_ deleteCase: DeleteCase) {
        let target = message(id: 5, sender: "alice")
        #expect(
            code {
                try MessageRules.checkDelete(target, id: 5, by: deleteCase.actor, liveQuoteReplies: deleteCase.quotes)
            }
                == deleteCase.expected)
    }

    @Test func deleteGuardCarriesTheQuoteCount() {
        do {
            try MessageRules.checkDelete(message(id: 5), id: 5, by: member("alice", .participant), liveQuoteReplies: 3)
            Issue.record("expected a refusal")
        } catch {
            #expect(error.params["quoteReplyCount"] == .int(3))
            #expect(error.code == .messageActionNotAllowed)
        }
    }

    @Test func edits() {
        #expect(
            code { try MessageRules.checkEdit(message(id: 1), id: 1, by: member("bob", .admin)) } == .messageNotASender)
        #expect(
            code { try MessageRules.checkEdit(message(id: 1, deleted: true), id: 1, by: member("alice", .owner)) }
                == .messageIdNotFound)
        #expect(code { try MessageRules.checkEdit(message(id: 1), id: 1, by: member("alice", .participant)) } == nil)
    }

    @Test func content() {
        #expect(
            code { try MessageRules.checkContent(MessageDraft(to: .group("g"), text: "  "), maximumTextBytes: 10) }
                == .emptyMessageText)
        #expect(
            code { try MessageRules.checkContent(MessageDraft(to: .group("g"), text: nil), maximumTextBytes: 10) }
                == .emptyMessageText)
        #expect(
            code {
                try MessageRules.checkContent(MessageDraft(to: .group("g"), text: "12345678901"), maximumTextBytes: 10)
            }
                == .badRequest)
        #expect(
            code { try MessageRules.checkContent(MessageDraft(to: .group("g"), type: "image"), maximumTextBytes: 10) }
                == .invalidMessageData)
        #expect(
            code {
                try MessageRules.checkContent(
                    MessageDraft(to: .group("g"), type: "poll", category: .custom), maximumTextBytes: 10)
            } == nil)
        #expect(
            code {
                try MessageRules.checkContent(
                    MessageDraft(to: .group("g"), text: "x", category: .action), maximumTextBytes: 10)
            } == .badRequest)
    }
}

@Suite struct GroupRuleTests {
    @Test func scopeChanges() {
        #expect(
            code {
                try GroupRules.checkScopeChange(
                    actor: member("o", .owner), target: "a", current: .admin, to: .moderator)
            } == nil)
        #expect(
            code {
                try GroupRules.checkScopeChange(
                    actor: member("a", .admin), target: "b", current: .admin, to: .participant)
            }
                == .groupNoScopeClearance)
        #expect(
            code {
                try GroupRules.checkScopeChange(
                    actor: member("a", .admin), target: "p", current: .participant, to: .admin)
            }
                == .groupNoScopeClearance)
        #expect(
            code {
                try GroupRules.checkScopeChange(
                    actor: member("a", .admin), target: "p", current: .participant, to: .moderator)
            } == nil)
        #expect(
            code {
                try GroupRules.checkScopeChange(
                    actor: member("m", .moderator), target: "p", current: .participant, to: .moderator)
            }
                == .groupNoClearance)
        #expect(
            code {
                try GroupRules.checkScopeChange(actor: member("o", .owner), target: "o", current: .owner, to: .admin)
            }
                == .groupNoSelfAction)
        #expect(
            code {
                try GroupRules.checkScopeChange(
                    actor: member("o", .owner), target: "p", current: .participant, to: .participant)
            }
                == .sameScope)
    }

    @Test func updatesOfTheGroupItself() {
        for scope in [GroupMemberScope.owner, .admin] {
            #expect(code { try GroupRules.checkUpdate(actor: member("a", scope), guid: "g") } == nil)
        }
        for scope in [GroupMemberScope.moderator, .participant] {
            #expect(code { try GroupRules.checkUpdate(actor: member("m", scope), guid: "g") } == .groupNoClearance)
        }
        let system = Participation(uid: "app_system", receiverType: .group, standing: .system)
        #expect(code { try GroupRules.checkUpdate(actor: system, guid: "g") } == nil)
        for standing in [Participation.Standing.outsider, .banned] {
            let actor = Participation(uid: "x", receiverType: .group, standing: standing)
            #expect(code { try GroupRules.checkUpdate(actor: actor, guid: "g") } == .groupNotJoined)
        }
    }

    @Test func removals() {
        #expect(
            code { try GroupRules.checkRemoval(actor: member("m", .moderator), target: "p", targetScope: .participant) }
                == nil)
        #expect(
            code { try GroupRules.checkRemoval(actor: member("m", .moderator), target: "n", targetScope: .moderator) }
                == .groupNoScopeClearance)
        #expect(
            code {
                try GroupRules.checkRemoval(actor: member("p", .participant), target: "q", targetScope: .participant)
            }
                == .groupNoClearance)
        #expect(
            code { try GroupRules.checkRemoval(actor: member("m", .moderator), target: "m", targetScope: .moderator) }
                == .groupNoSelfAction)
    }

    @Test func pins() {
        let groupMessage = message(id: 1)
        #expect(code { try PinRules.checkPin(groupMessage, id: 1, by: member("p", .participant)) } == .permissionDenied)
        #expect(code { try PinRules.checkPin(groupMessage, id: 1, by: member("m", .moderator)) } == nil)
        let direct = message(id: 2, conversation: "alice_user_bob", group: false)
        #expect(
            code {
                try PinRules.checkPin(
                    direct, id: 2, by: Participation(uid: "bob", receiverType: .user, standing: .oneOnOneParticipant))
            } == nil)
        #expect(
            code { try PinRules.checkPinLimit(pinned: 3, limit: 3, alreadyPinned: false) }
                == .pinnedMessagesLimitExceeded)
        #expect(code { try PinRules.checkPinLimit(pinned: 3, limit: 3, alreadyPinned: true) } == nil)
        #expect(PinRules.pinsToRelease(pinned: 2, limit: 3, alreadyPinned: false) == 0)
        #expect(PinRules.pinsToRelease(pinned: 3, limit: 3, alreadyPinned: false) == 1)
        #expect(PinRules.pinsToRelease(pinned: 3, limit: 3, alreadyPinned: true) == 0)
        #expect(PinRules.pinsToRelease(pinned: 7, limit: 3, alreadyPinned: false) == 5)
        #expect(
            code { try PinRules.checkSaveLimit(saved: 3, limit: 3, alreadySaved: false) } == .savedMessagesLimitExceeded
        )
    }
}

@Suite struct ErrorTextTests {
    /// The text a client shows names what the refusal is about: the quoted message of a quote
    /// reply, not a thread's parent, and one quote reply in the singular.
    @Test func theTextNamesTheMessageAndCountsInEnglish() {
        #expect(
            ChatError(.wrongMessageThread, ["quotedMessageId": 7]).message
                == "The quoted message belongs to another conversation.")
        #expect(
            ChatError(.wrongMessageThread, ["parentMessageId": 7]).message
                == "The parent message belongs to another conversation.")
        #expect(
            ChatError(.messageActionNotAllowed, ["messageId": 7, "quoteReplyCount": 1]).message
                == "The message has a quote reply; delete it first.")
        #expect(
            ChatError(.messageActionNotAllowed, ["messageId": 7, "quoteReplyCount": 3]).message
                == "The message has 3 quote replies; delete them first.")
        // The same code answers a deleted message (CometChat's docs: "for example, it was deleted").
        #expect(ChatError.messageNotFound(7).message == "Message 7 does not exist or was deleted.")
    }

    /// A kick or a ban out of the actor's reach says so, and names the scope at stake, instead
    /// of speaking of a scope change.
    @Test func aRemovalOutOfReachNamesTheScope() throws {
        do {
            try GroupRules.checkRemoval(
                actor: member("m", .moderator), target: "o", targetScope: .owner)
            Issue.record("a moderator removed the owner")
        } catch {
            #expect(error.params["scope"] == "owner")
            #expect(error.message == "Your scope does not allow this for a group owner.")
        }
        do {
            try GroupRules.checkScopeChange(
                actor: member("a", .admin), target: "p", current: .participant, to: .admin)
            Issue.record("an admin made an admin")
        } catch {
            #expect(error.message == "Your scope does not allow this for a group admin.")
        }
    }
}

@Suite struct MuteRulesTests {
    @Test func aSilencedMemberGetsNothingAndTheRestAsBefore() {
        var message = Message(id: 9, conversationId: "group_g", sender: "alice", receiverType: .group, receiverUid: "g")
        message.mentionedUids = ["bob"]
        let input = NotificationRouting.Input(
            message: message, audience: ["alice", "bob", "carol", "dave"], preferences: [:], defaults: .groupDefault,
            silenced: ["bob", "dave"])
        #expect(NotificationRouting.recipients(input) == [NotificationRecipient(uid: "carol", reason: .message)])
    }

    @Test func aMuteEndsWhenItsSecondComes() throws {
        #expect(MutedConversation.holds(until: 0, at: 1_000))
        #expect(MutedConversation.holds(until: 1_001, at: 1_000))
        #expect(!MutedConversation.holds(until: 1_000, at: 1_000))
        #expect(throws: ChatError.self) { try MuteRules.checkUntil(1_000, now: 1_000) }
        try MuteRules.checkUntil(0, now: 1_000)
        try MuteRules.checkUntil(1_001, now: 1_000)
    }
}
