import PerchChat
import PerchHost
import PerchService
import PerchTestSupport
import PerchTesting
import Testing

/// Every trigger, condition and action of the bot-file vocabulary.
@Suite struct TriggerTests {
    @Test func messageAndThreadReply() async throws {
        let rules = """
              - on: message
                do: [{ reply: "m:{message.text}" }]
              - on: thread_reply
                do: [{ reply: "t:{message.text}<{parent.text}" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            let root = try await chat.post("root", as: "carol", to: .group("room"))
            try await chat.post("reply", as: "carol", to: .group("room"), thread: root.id)
            let texts = try await chat.botMessages(in: .group("room")).compactMap(\.text)
            #expect(texts == ["m:root", "m:reply", "t:reply<root"])
        }
    }

    /// A bot repeating a text does not mention its people again: the shipped thread watcher quoted
    /// a root that mentioned bob at every reply, so bob was notified of every reply by the bot.
    @Test func aQuotedTextMentionsNoOneAgain() async throws {
        let rules = """
              - on: thread_reply
                when: { sender_is_bot: false }
                do: [{ reply_in_thread: "re {parent.text} / {message.text} / <@uid:{sender.uid}>" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            let root = try await chat.post("ask <@uid:bob>", as: "carol", to: .group("room"))
            try await chat.post("me too <@uid:carol>", as: "bob", to: .group("room"), thread: root.id)
            let answer = try #require(try await chat.botMessages(in: .group("room")).first)
            #expect(answer.text == "re ask @bob / me too @carol / <@uid:bob>")
            #expect(answer.mentionedUids == ["bob"])
        }
    }

    /// A template's text is cut to the longest text the service takes: a watcher quoting a root
    /// near the limit was refused (`ERR_BAD_REQUEST`) and answered nothing.
    @Test func aTextOverTheLimitIsCutWithAnEllipsis() async throws {
        let rules = """
              - on: thread_reply
                when: { sender_is_bot: false }
                do: [{ reply_in_thread: "re “{parent.text}”" }]
            """
        let config = hostConfig + "\nlimits:\n  messageTextBytes: 24\n"
        try await withTestHost(config: config, bots: ["b.yaml": botFile(rules)]) { chat in
            let root = try await chat.post("ééééééééééé", as: "carol", to: .group("room"))
            try await chat.post("ok", as: "bob", to: .group("room"), thread: root.id)
            let answer = try #require(try await chat.botMessages(in: .group("room")).first)
            // "re “" is 6 bytes and "…" 3: seven two-byte letters fit in the 15 left.
            #expect(answer.text == "re “ééééééé…")
            #expect(answer.parentMessageId == root.id)
        }
    }

    @Test func mentionOfTheBotOrOfListedUsers() async throws {
        let rules = """
              - on: mention
                do: [{ reply: "me" }]
              - on: { mention: [bob] }
                do: [{ reply: "bob" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            try await chat.post("hi <@uid:bot>", as: "carol", to: .group("room"))
            try await chat.post("hi <@uid:bob>", as: "carol", to: .group("room"))
            try await chat.post("hi nobody", as: "carol", to: .group("room"))
            #expect(try await chat.botMessages(in: .group("room")).compactMap(\.text) == ["me", "bob"])
        }
    }

    @Test func commandsWithArguments() async throws {
        let rules = """
              - on: { command: ping }
                do: [{ reply: "pong {args}" }]
              - on: { command: Echo }
                do: [{ reply: "echo {args}" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules, extra: "command_prefix: \"!\"")]) {
            chat in
            try await chat.post("!ping 42", as: "carol", to: .group("room"))
            try await chat.post("!pingpong", as: "carol", to: .group("room"))
            try await chat.post("ping 1", as: "carol", to: .group("room"))
            try await chat.post("!ping", as: "carol", to: .group("room"))
            // A capital a phone's keyboard put in, and a space before the prefix, are the same command.
            try await chat.post("!Ping Seven", as: "carol", to: .group("room"))
            try await chat.post(" !ping 8", as: "carol", to: .group("room"))
            // A name written with capitals in the bot file matches as well.
            try await chat.post("!echo hi", as: "carol", to: .group("room"))
            #expect(
                try await chat.botMessages(in: .group("room")).compactMap(\.text) == [
                    "pong 42", "pong ", "pong Seven", "pong 8", "echo hi",
                ])
        }
    }

    @Test func pinnedUnpinnedEditedDeletedAndMemberJoined() async throws {
        let rules = """
              - on: pinned
                do: [{ reply: "pinned {message.id}" }]
              - on: unpinned
                do: [{ reply: "unpinned" }]
              - on: edited
                do: [{ reply: "edited to {message.text}" }]
              - on: deleted
                do: [{ reply: "deleted" }]
              - on: member_joined
                when: { groups: [other] }
                do: [{ reply: "welcome" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            let message = try await chat.post("x", as: "carol", to: .group("room"))
            _ = try await chat.service.pin(message.id, as: "bob")
            _ = try await chat.service.unpin(message.id, as: "bob")
            _ = try await chat.service.edit(message.id, text: "y", as: "carol")
            _ = try await chat.service.delete(message.id, as: "carol")
            _ = try await chat.service.join("other", as: "bob")
            #expect(
                try await chat.botMessages(in: .group("room")).compactMap(\.text) == [
                    "pinned \(message.id)", "unpinned", "edited to y", "deleted",
                ])
            let welcomes = try await chat.botMessages(in: .group("other")).compactMap(\.text)
            #expect(welcomes == ["welcome"])
        }
    }

    /// A pin, unpin or deletion is its doer's, not the message's author's: someone pinning, unpinning
    /// or deleting the bot's own message starts its rules, and the bot's own pin as app_system and
    /// its own unpin do not (they did both: the first was taken for the bot's own message, the
    /// others for someone else's doing, since the message's pinnedBy read app_system or nothing).
    /// `{actor...}` names the doer, `{sender...}` the message's sender.
    @Test func pinsAndDeletionsAreTheirDoersNotTheAuthors() async throws {
        let rules = """
              - on: { command: announce }
                do: [{ pin: { as: app_system } }]
              - on: { command: notice }
                do: [{ reply: "notice" }]
              - on: { reaction_added: "❌" }
                do: [unpin]
              - on: pinned
                do: [{ reply: "{actor.name} pinned {message.text} by {sender.uid}" }]
              - on: unpinned
                do: [{ reply: "{actor.uid} unpinned {message.text}" }]
              - on: deleted
                do: [{ reply: "{actor.name} deleted {message.id}" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            let announcement = try await chat.post("!announce", as: "carol", to: .group("room"))
            try await chat.settle()
            #expect(try await chat.service.message(announcement.id, as: "alice").pinnedBy == User.system)
            try await chat.post("!notice", as: "carol", to: .group("room"))
            let notice = try #require(try await chat.botMessages(in: .group("room")).first { $0.text == "notice" })
            _ = try await chat.service.pin(notice.id, as: "bob")
            try await chat.settle()
            _ = try await chat.service.unpin(notice.id, as: "bob")
            try await chat.settle()
            let plain = try await chat.post("plain", as: "carol", to: .group("room"))
            _ = try await chat.service.pin(plain.id, as: "bob")
            try await chat.settle()
            _ = try await chat.service.addReaction("❌", to: plain.id, as: "bob")
            try await chat.settle()
            #expect(try await chat.service.message(plain.id, as: "alice").pinnedAt == 0)
            _ = try await chat.service.delete(notice.id, as: "bob")
            // The deleted notice has no text left.
            let texts = try await chat.botMessages(in: .group("room")).compactMap(\.text)
            #expect(
                texts == [
                    "Bob pinned notice by bot", "bob unpinned notice", "Bob pinned plain by carol",
                    "Bob deleted \(notice.id)",
                ])
        }
    }

    /// A kick or a ban on `member_joined` removes the member who joined (there is no message).
    @Test func aMemberJoinedRuleBansTheMember() async throws {
        let rules = """
              - on: member_joined
                when: { groups: [other], from: [bob] }
                do: [ban, { direct_message: "You are banned from {group.guid}" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            _ = try await chat.service.join("other", as: "bob")
            try await chat.settle()
            #expect(try await chat.service.bannedUsers(of: "other", as: "bot") == ["bob"])
            let notes = try await chat.botMessages(in: .user("bot"), viewer: "bob").compactMap(\.text)
            #expect(notes == ["You are banned from other"])
        }
    }

    /// Reactions start rules as Slack's reaction_added and reaction_removed do: the message is the
    /// one reacted to and the sender whoever reacted, so a moderator's 📌 pins (a participant's does
    /// not), taking it back unpins, and 🔔 makes whoever reacted follow the thread. The bot's own
    /// reaction (its ✅) starts nothing.
    @Test func reactionsAddedAndRemoved() async throws {
        let rules = """
              - on: { reaction_added: "📌" }
                when: { sender_scope: [owner, admin, moderator] }
                do: [pin, { react: "✅" }]
              - on: { reaction_removed: "📌" }
                when: { sender_scope: [owner, admin, moderator] }
                do: [unpin, { unreact: "✅" }]
              - on: { reaction_added: ["🔔", "bell"] }
                do: [{ subscribe: sender }, { direct_message: "{sender.name} follows {message.id} ({reaction})" }]
              - on: reaction_added
                do: [{ reply: "{sender.uid} {reaction} on {message.sender}'s" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            let message = try await chat.post("ship it", as: "carol", to: .group("room"))
            func current() async throws -> Message { try await chat.service.message(message.id, as: "alice") }
            _ = try await chat.service.addReaction("📌", to: message.id, as: "carol")
            try await chat.settle()
            #expect(try await current().pinnedAt == 0)
            _ = try await chat.service.addReaction("📌", to: message.id, as: "bob")
            try await chat.settle()
            let pinned = try await current()
            #expect(pinned.pinnedAt != 0 && pinned.pinnedBy == "bot")
            #expect(pinned.reactions.map(\.reaction) == ["📌", "✅"])
            _ = try await chat.service.removeReaction("📌", from: message.id, as: "bob")
            try await chat.settle()
            let unpinned = try await current()
            #expect(unpinned.pinnedAt == 0)
            #expect(unpinned.reactions == [ReactionCount(reaction: "📌", count: 1)])
            _ = try await chat.service.addReaction("bell", to: message.id, as: "alice")
            try await chat.settle()
            #expect(try await current().threadSubscribed)
            #expect(try await chat.service.message(message.id, as: "carol").threadSubscribed == false)
            let notes = try await chat.botMessages(in: .user("bot"), viewer: "alice").compactMap(\.text)
            #expect(notes == ["Alice follows \(message.id) (bell)"])
            #expect(
                try await chat.botMessages(in: .group("room")).compactMap(\.text) == [
                    "carol 📌 on carol's", "bob 📌 on carol's", "alice bell on carol's",
                ])
        }
    }

    @Test func schedulesRunOnTheManualClock() async throws {
        let rules = """
              - name: standup
                on: { schedule: "30 9 * * 1-5", group: room }
                do: [{ reply: "Standup time" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            let monday0930: Int64 = 1_796_031_000
            await chat.host.runSchedules(at: monday0930 - 60)
            await chat.host.runSchedules(at: monday0930 + 15)
            await chat.host.runSchedules(at: monday0930 + 30)  // the same minute again: no second post
            await chat.host.runSchedules(at: monday0930 + 5 * 86_400)  // Saturday
            let texts = try await chat.botMessages(in: .group("room")).compactMap(\.text)
            #expect(texts == ["Standup time"])
        }
    }

    /// `timezone`: nine thirty in Berlin, not in UTC.
    @Test func aScheduleRunsOnItsTimeZonesClock() async throws {
        let rules = """
              - name: standup
                on: { schedule: "30 9 * * 1-5", group: room, timezone: Europe/Berlin }
                do: [{ reply: "Standup time" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            let monday0930UTC: Int64 = 1_796_031_000  // 10:30 in Berlin (CET, UTC+1)
            await chat.host.runSchedules(at: monday0930UTC)
            let early = try await chat.botMessages(in: .group("room"))
            #expect(early.isEmpty)
            await chat.host.runSchedules(at: monday0930UTC - 3600)
            let texts = try await chat.botMessages(in: .group("room")).compactMap(\.text)
            #expect(texts == ["Standup time"])
        }
    }

    @Test func webhooksTemplateTheirBody() async throws {
        let rules = """
              - on: { webhook: deploy, group: room }
                do: [{ reply: "Deployed {webhook.version} by {webhook.who.name}" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            let fired = await chat.host.webhook(
                "deploy", body: .object(["version": .string("1.2"), "who": .object(["name": .string("CI")])]))
            #expect(fired == 1)
            #expect(await chat.host.webhook("unknown", body: .null) == 0)
            let texts = try await chat.botMessages(in: .group("room")).compactMap(\.text)
            #expect(texts == ["Deployed 1.2 by CI"])
        }
    }

    /// A webhook's sender decides its numbers: one past Int64's range trapped the host.
    @Test func webhookNumbersOfAnySizeAreWrittenOut() async throws {
        let rules = """
              - on: { webhook: build, group: room }
                do: [{ reply: "{webhook.count} {webhook.ratio} {webhook.huge} {webhook.tiny}" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            let body = JSONValue.object([
                "count": .number(42), "ratio": .number(1.5), "huge": .number(1e300), "tiny": .number(-1e300),
            ])
            #expect(await chat.host.webhook("build", body: body) == 1)
            let texts = try await chat.botMessages(in: .group("room")).compactMap(\.text)
            #expect(texts == ["42 1.5 1e+300 -1e+300"])
        }
    }
}

@Suite struct ConditionTests {
    @Test func groupsOneOnOneFromScopeBotThreadedAndText() async throws {
        let rules = """
              - on: message
                when: { groups: [other] }
                do: [{ reply: "groups" }]
              - on: message
                when: { one_on_one: true }
                do: [{ reply: "dm" }]
              - on: message
                when: { from: [bob], groups: [room] }
                do: [{ reply: "from bob" }]
              - on: message
                when: { sender_scope: [owner, admin], groups: [room] }
                do: [{ reply: "admin" }]
              - on: message
                when: { threaded: true }
                do: [{ reply: "threaded" }]
              - on: message
                when: { text_matches: "#(?<ticket>[0-9]+)" }
                do: [{ reply: "ticket {ticket}" }]
              - on: message
                when: { contains_words: [Spam, "bad word"] }
                do: [{ reply: "words" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            try await chat.post("plain", as: "carol", to: .group("other"))
            try await chat.post("hello", as: "carol", to: .user("bot"))
            try await chat.post("hi", as: "bob", to: .group("room"))
            let root = try await chat.post("see #42", as: "carol", to: .group("room"))
            try await chat.post("so SPAM. and a Bad Word", as: "carol", to: .group("room"), thread: root.id)
            try await chat.post("spammer is not spam-free", as: "carol", to: .group("room"))
            #expect(try await chat.botMessages(in: .group("other")).compactMap(\.text) == ["groups"])
            #expect(try await chat.botMessages(in: .user("bot"), viewer: "carol").compactMap(\.text) == ["dm"])
            let room = try await chat.botMessages(in: .group("room")).compactMap(\.text)
            #expect(room == ["from bob", "admin", "ticket 42", "threaded", "words", "words"])
        }
    }

    /// Two edits within one second of the clock: the second, adding a listed word, is judged on its
    /// own text (the word-list cache took it for the first, whose `editedAt` second it shares).
    @Test func aSecondEditWithinTheSameSecondIsScannedAgain() async throws {
        let rules = """
              - on: edited
                when: { contains_words: [spamword] }
                do: [delete]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            let message = try await chat.post("first draft", as: "carol", to: .group("room"))
            let first = try await chat.service.edit(message.id, text: "second draft", as: "carol")
            try await chat.settle()
            let second = try await chat.service.edit(message.id, text: "now with spamword", as: "carol")
            #expect(first.editedAt == second.editedAt)
            try await chat.settle()
            #expect(try await chat.service.message(message.id, as: "alice").deletedAt != 0)
        }
    }

    @Test func senderIsBotAndHears() async throws {
        let other = """
            name: echo
            user: { uid: echo, name: Echo }
            groups: [room]
            hears: mentions
            rules:
              - on: message
                when: { sender_is_bot: false }
                do: [{ reply: "echo heard" }]
            """
        let rules = """
              - on: message
                when: { sender_is_bot: true }
                do: [{ reply: "a bot spoke" }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules), "echo.yaml": other]) { chat in
            try await chat.post("no mention", as: "carol", to: .group("room"))
            try await chat.post("hey <@uid:echo>", as: "carol", to: .group("room"))
            #expect(try await chat.botMessages(in: .group("room"), bot: "echo").compactMap(\.text) == ["echo heard"])
            #expect(try await chat.botMessages(in: .group("room")).compactMap(\.text) == ["a bot spoke"])
        }
    }
}

@Suite struct ActionTests {
    @Test func repliesOfEveryKind() async throws {
        let rules = """
              - on: { command: all }
                do:
                  - reply: "plain"
                  - reply_in_thread: "in thread"
                  - quote_reply: "quoted"
                  - direct_message: "private"
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            let root = try await chat.post("root", as: "carol", to: .group("room"))
            let command = try await chat.post("!all", as: "carol", to: .group("room"), thread: root.id)
            let messages = try await chat.botMessages(in: .group("room"))
            #expect(messages.map(\.text) == ["plain", "in thread", "quoted"])
            #expect(messages[0].parentMessageId == 0)
            #expect(messages[1].parentMessageId == root.id)
            #expect(messages[2].quotedMessageId == command.id && messages[2].parentMessageId == root.id)
            let direct = try await chat.botMessages(in: .user("bot"), viewer: "carol")
            #expect(direct.map(\.text) == ["private"])
        }
    }

    @Test func pinSaveSubscribeDeleteKickBan() async throws {
        let rules = """
              - on: { command: pin }
                do: [{ pin: { as: app_system } }, save, { subscribe: sender }, { subscribe: self }]
              - on: pinned
                when: { from: [bob] }
                do: [unpin]
              - on: { command: unsub }
                do: [{ unsubscribe: sender }]
              - on: { command: kick }
                do: [delete, kick]
              - on: { command: ban }
                do: [ban]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": botFile(rules)]) { chat in
            let pin = try await chat.post("!pin", as: "carol", to: .group("room"))
            try await chat.settle()
            let pinned = try await chat.service.message(pin.id, as: "carol")
            #expect(pinned.pinnedBy == "app_system" && pinned.threadSubscribed)
            #expect(try await chat.service.message(pin.id, as: "bot").savedAt != 0)
            #expect(try await chat.service.message(pin.id, as: "bot").threadSubscribed)
            // `unpin`: the bot undoes pins of bob's messages.
            let bobs = try await chat.post("by bob", as: "bob", to: .group("room"))
            _ = try await chat.service.pin(bobs.id, as: "alice")
            _ = try await chat.waitFor("the unpin") {
                try await chat.service.message(bobs.id, as: "alice").pinnedAt == 0 ? true : nil
            }
            // `unsubscribe`: carol, subscribed by replying, asks to be unsubscribed from the thread.
            let root = try await chat.post("root", as: "alice", to: .group("room"))
            try await chat.post("a reply", as: "carol", to: .group("room"), thread: root.id)
            #expect(try await chat.service.message(root.id, as: "carol").threadSubscribed)
            try await chat.post("!unsub", as: "carol", to: .group("room"), thread: root.id)
            try await chat.settle()
            #expect(!(try await chat.service.message(root.id, as: "carol").threadSubscribed))
            let kick = try await chat.post("!kick", as: "carol", to: .group("other"))
            try await chat.settle()
            #expect(try await chat.service.message(kick.id, as: "alice").deletedAt != 0)
            #expect(try await chat.service.scope(of: "carol", in: "other") == nil)
            try await chat.post("!ban", as: "carol", to: .group("room"))
            try await chat.settle()
            #expect(try await chat.service.bannedUsers(of: "room", as: "alice") == ["carol"])
        }
    }

    @Test func theThreadSubscriptionGateTurnsCommandsOffButNotAutomaticSubscription() async throws {
        let closed = hostConfig + "\nui:\n  threadSubscription:\n    enabled: false\n"
        let follow = """
            name: f
            user: { uid: follow, name: Follow }
            groups: [room]
            plugins: [{ name: thread-follow }]
            rules:
              - on: { command: follow }
                do: [{ plugin: thread-follow }]
              - on: { command: sub }
                do: [{ subscribe: sender }]
            """
        try await withTestHost(config: closed, bots: ["f.yaml": follow]) { chat in
            let root = try await chat.post("root", as: "alice", to: .group("room"))
            try await chat.post("!follow", as: "carol", to: .group("room"), thread: root.id)
            let quiet = try await chat.post("quiet root", as: "alice", to: .group("room"))
            try await chat.post("!sub", as: "bob", to: .group("room"), quote: quiet.id)
            // Its help lists no command the gate turned off, so it says nothing at all.
            try await chat.post("!help", as: "bob", to: .group("room"))
            try await chat.settle()
            #expect(try await chat.botMessages(in: .group("room"), bot: "follow").isEmpty)
            #expect(!(try await chat.service.message(quiet.id, as: "bob").threadSubscribed))
            // The server's automatic subscription goes on: carol replied in the thread.
            #expect(try await chat.service.message(root.id, as: "carol").threadSubscribed)
        }
        // The per-bot flag alone does the same.
        try await withTestHost(config: hostConfig, bots: ["f.yaml": follow + "\nthread_subscription: false\n"]) {
            chat in
            let root = try await chat.post("root", as: "alice", to: .group("room"))
            try await chat.post("!follow", as: "carol", to: .group("room"), thread: root.id)
            #expect(try await chat.botMessages(in: .group("room"), bot: "follow").isEmpty)
        }
    }
}
