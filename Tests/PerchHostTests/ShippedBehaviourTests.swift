import Foundation
import PerchChat
import PerchHost
import PerchService
import PerchTestSupport
import PerchTesting
import Testing

/// The four behaviours every install shows, end to end on the shipped config.yaml and bots/.
@Suite struct ShippedBehaviourTests {
    func withShippedHost(_ body: (TestChat) async throws -> Void) async throws {
        try await withTestHost(configPath: repositoryRoot + "/config.yaml", body)
    }

    @Test func theThreadWatcherReactsToThreadedReplies() async throws {
        try await withShippedHost { chat in
            let root = try await chat.post("Lunch plans?", as: "alice", to: .group("general"))
            try await chat.post("Top level, not a reply", as: "carol", to: .group("general"))
            let reply = try await chat.post("Tacos!", as: "bob", to: .group("general"), thread: root.id)
            let reaction = try await chat.waitForMessage(in: .group("general")) { $0.sender == "threadwatch" }
            #expect(reaction.parentMessageId == root.id)
            #expect(reaction.text == "👀 Bob replied in the thread of “Lunch plans?”.")
            try await chat.settle()
            let fromWatcher = try await chat.messages(in: .group("general")).filter { $0.sender == "threadwatch" }
            #expect(fromWatcher.count == 1)
            _ = reply
        }
    }

    @Test func theAnnouncerPinsAdminPostsAsAppSystem() async throws {
        try await withShippedHost { chat in
            let byAdmin = try await chat.post("Office closed Friday", as: "bob", to: .group("announcements"))
            let byMember = try await chat.post("Thanks!", as: "carol", to: .group("announcements"))
            let pinned = try await chat.waitFor("the pin") {
                let message = try await chat.service.message(byAdmin.id, as: "carol")
                return message.pinnedAt != 0 ? message : nil
            }
            #expect(pinned.pinnedBy == "app_system")
            try await chat.settle()
            #expect(try await chat.service.message(byMember.id, as: "carol").pinnedAt == 0)
            let reply = try await chat.post("In the thread", as: "bob", to: .group("announcements"), thread: byAdmin.id)
            try await chat.settle()
            #expect(try await chat.service.message(reply.id, as: "carol").pinnedAt == 0)
        }
    }

    /// The shipped announcer keeps pinning once the channel is full: its own oldest pin makes room,
    /// and a pin a person made stays (the pin limit, with the config's lower one here).
    @Test func theAnnouncerMakesRoomWithItsOwnOldestPinWhenTheChannelIsFull() async throws {
        let config = try String(contentsOfFile: repositoryRoot + "/config.yaml", encoding: .utf8)
            .replacingOccurrences(of: "pinsPerConversation: 100", with: "pinsPerConversation: 2")
        let announcer = try String(contentsOfFile: repositoryRoot + "/bots/announcer.yaml", encoding: .utf8)
        try await withTestHost(config: config, bots: ["announcer.yaml": announcer]) { chat in
            let byPerson = try await chat.post("Pinned by hand", as: "carol", to: .group("announcements"))
            _ = try await chat.service.pin(byPerson.id, as: "bob")
            var posts: [Message] = []
            for text in ["First", "Second", "Third"] {
                let post = try await chat.post(text, as: "alice", to: .group("announcements"))
                posts.append(post)
                _ = try await chat.waitFor("the pin of \(text)") {
                    try await chat.service.message(post.id, as: "carol").pinnedAt != 0 ? true : nil
                }
            }
            try await chat.settle()
            let pins = try await chat.service.fetchPrevious(
                MessagesRequest(guid: "announcements", pinned: true), as: "carol")
            #expect(Set(pins.messages.map(\.id)) == [posts[2].id, byPerson.id])
            #expect(try await chat.service.message(byPerson.id, as: "carol").pinnedBy == "bob")
        }
    }

    @Test func theHelperQuoteRepliesToMentions() async throws {
        try await withShippedHost { chat in
            let question = try await chat.post(
                "<@uid:helper> how do I follow a thread?", as: "carol", to: .group("general"))
            let answer = try await chat.waitForMessage(in: .group("general")) { $0.sender == "helper" }
            #expect(answer.quotedMessageId == question.id)
            #expect(answer.text?.hasPrefix("Hi Carol!") == true)
            // A quote reply cannot be quoted: the helper falls back to a plain reply.
            let quoting = try await chat.post(
                "<@uid:helper> and this?", as: "dave", to: .group("general"), quote: question.id)
            let plain = try await chat.waitForMessage(in: .group("general")) {
                $0.sender == "helper" && $0.text?.contains("Dave") == true
            }
            #expect(plain.quotedMessageId == 0)
            _ = quoting
        }
    }

    /// The follow bot answers the asker alone, by direct message: nothing in the thread, so the
    /// thread's other people are not notified of someone else's choice.
    @Test func followAndUnfollowInAThreadAnswerTheAskerPrivatelyWithTheSeedCopy() async throws {
        try await withShippedHost { chat in
            let root = try await chat.post("Release notes", as: "alice", to: .group("general"))
            _ = try await chat.post("!follow", as: "dave", to: .group("general"), thread: root.id)
            let subscribed = try await chat.waitForMessage(in: .user("follow"), viewer: "dave") {
                $0.sender == "follow"
            }
            #expect(subscribed.text == "Subscribed. You'll be notified about new replies in this thread.")
            #expect(try await chat.service.message(root.id, as: "dave").threadSubscribed)

            _ = try await chat.post("!unfollow", as: "dave", to: .group("general"), thread: root.id)
            let unsubscribed = try await chat.waitForMessage(in: .user("follow"), viewer: "dave") {
                $0.sender == "follow" && $0.text?.hasPrefix("Unsubscribed") == true
            }
            #expect(unsubscribed.text == "Unsubscribed. Notifications are off until you reply or are mentioned.")
            #expect(!(try await chat.service.message(root.id, as: "dave").threadSubscribed))
            try await chat.settle()
            // Nothing of the follow bot's in the thread. The thread-watcher echoes each reply there,
            // quietly: nobody is notified of a bot's message, once per reply is the people's own.
            let thread = try await chat.messages(in: .group("general"), viewer: "alice").filter {
                $0.parentMessageId == root.id
            }
            #expect(thread.map(\.sender) == ["dave", "threadwatch", "dave", "threadwatch"])
            let alices = try await chat.service.notifications(for: "alice").records
            #expect(alices.compactMap { $0.message?.sender } == ["dave", "dave"])
            let daves = try await chat.service.notifications(for: "dave").records
            #expect(daves.allSatisfy { $0.message?.sender != "follow" && $0.message?.sender != "threadwatch" })
            // No bot follows the thread it answered in.
            #expect(try await chat.service.threadSubscribers(of: root.id) == ["alice"])
        }
    }

    @Test func helpListsTheFollowCommands() async throws {
        try await withShippedHost { chat in
            let asked = try await chat.post("!help", as: "carol", to: .group("general"))
            let answer = try await chat.waitForMessage(in: .group("general")) { $0.sender == "follow" }
            #expect(answer.quotedMessageId == asked.id)
            let lines = answer.text?.split(separator: "\n").map(String.init) ?? []
            #expect(lines.first == "Thread Follow's commands:")
            #expect(lines.dropFirst().map { $0.prefix { $0 != " " } } == ["!follow", "!unfollow"])
            #expect(lines.allSatisfy { !$0.isEmpty })
        }
    }

    @Test func followByQuoteOrByIdReachesThreadsWithNoReplies() async throws {
        try await withShippedHost { chat in
            let quiet = try await chat.post("No replies yet", as: "alice", to: .group("general"))
            _ = try await chat.post("!follow", as: "carol", to: .group("general"), quote: quiet.id)
            _ = try await chat.waitForMessage(in: .user("follow"), viewer: "carol") { $0.sender == "follow" }
            #expect(try await chat.service.message(quiet.id, as: "carol").threadSubscribed)

            let other = try await chat.post("Another", as: "alice", to: .group("general"))
            _ = try await chat.post("!follow \(other.id)", as: "bob", to: .group("general"))
            _ = try await chat.waitFor("bob following") {
                try await chat.service.message(other.id, as: "bob").threadSubscribed ? true : nil
            }
            let answer = try await chat.waitForMessage(in: .user("follow"), viewer: "bob") { $0.sender == "follow" }
            #expect(answer.text == "Subscribed. You'll be notified about new replies in this thread.")

            // A reply's id follows the thread it is in (a reply has no thread of its own).
            let reply = try await chat.post("a reply", as: "alice", to: .group("general"), thread: quiet.id)
            _ = try await chat.post("!follow \(reply.id)", as: "dave", to: .group("general"))
            _ = try await chat.waitFor("dave following the reply's thread") {
                try await chat.service.message(quiet.id, as: "dave").threadSubscribed ? true : nil
            }
        }
    }

    /// Trying again would not help, and the answer says why: a message that is not there (deleted,
    /// or never sent) is not found; a thread the asker cannot read is unavailable to them.
    @Test func followOfAMessageThatIsNotThereAnswersNotFound() async throws {
        try await withShippedHost { chat in
            let gone = try await chat.post("soon deleted", as: "carol", to: .group("general"))
            _ = try await chat.service.delete(gone.id, as: "carol")
            _ = try await chat.post("!follow \(gone.id)", as: "carol", to: .group("general"))
            let answer = try await chat.waitForMessage(in: .user("follow"), viewer: "carol") { $0.sender == "follow" }
            #expect(answer.text == "That thread does not exist.")
            _ = try await chat.post("!follow 999999", as: "carol", to: .group("general"))
            _ = try await chat.waitFor(timeout: .seconds(20), "the second answer") {
                let answers = try await chat.messages(in: .user("follow"), viewer: "carol").filter {
                    $0.sender == "follow"
                }
                return answers.count == 2 ? answers : nil
            }
            let answers = try await chat.messages(in: .user("follow"), viewer: "carol").filter { $0.sender == "follow" }
            #expect(answers.map(\.text) == ["That thread does not exist.", "That thread does not exist."])
        }
    }

    @Test func followWorksOneOnOneAndAnswersUnavailableWithoutAccess() async throws {
        try await withShippedHost { chat in
            let direct = try await chat.post("note to the bot", as: "dave", to: .user("follow"))
            _ = try await chat.post("!follow", as: "dave", to: .user("follow"), thread: direct.id)
            let answer = try await chat.waitForMessage(in: .user("follow"), viewer: "dave") { $0.sender == "follow" }
            #expect(answer.text == "Subscribed. You'll be notified about new replies in this thread.")
            #expect(try await chat.service.message(direct.id, as: "dave").threadSubscribed)

            // A thread dave cannot see: a one-on-one between alice and bob.
            let secret = try await chat.post("private", as: "alice", to: .user("bob"))
            _ = try await chat.post("!follow \(secret.id)", as: "dave", to: .group("general"))
            let unavailable = try await chat.waitForMessage(in: .user("follow"), viewer: "dave") {
                $0.sender == "follow" && $0.text?.hasPrefix("Subscribed") == false
            }
            #expect(unavailable.text == "You no longer have access to this thread.")
        }
    }

    @Test func theModeratorDeletesListedWordsAndWarnsOneOnOne() async throws {
        try await withShippedHost { chat in
            let bad = try await chat.post("buy now at scamlink dot com", as: "dave", to: .group("general"))
            let clean = try await chat.post(
                "a scamlinked word is not the listed word", as: "dave", to: .group("general"))
            _ = try await chat.waitFor("the delete") {
                try await chat.service.message(bad.id, as: "dave").deletedAt != 0 ? true : nil
            }
            let deleted = try await chat.service.message(bad.id, as: "dave")
            #expect(deleted.deletedBy == "moderator")
            let warning = try await chat.waitForMessage(in: .user("moderator"), viewer: "dave") {
                $0.sender == "moderator"
            }
            #expect(warning.text?.contains("general") == true)
            try await chat.settle()
            #expect(try await chat.service.message(clean.id, as: "dave").deletedAt == 0)
        }
    }

    /// Posting a clean text and editing a listed word into it does not get past the moderator.
    @Test func theModeratorCatchesAListedWordPutInByAnEdit() async throws {
        try await withShippedHost { chat in
            let message = try await chat.post("nothing to see here", as: "dave", to: .group("general"))
            try await chat.settle()
            #expect(try await chat.service.message(message.id, as: "dave").deletedAt == 0)
            _ = try await chat.service.edit(message.id, text: "nothing to see, buy badword", as: "dave")
            _ = try await chat.waitFor("the delete") {
                try await chat.service.message(message.id, as: "dave").deletedAt != 0 ? true : nil
            }
            #expect(try await chat.service.message(message.id, as: "dave").deletedBy == "moderator")
            let warning = try await chat.waitForMessage(in: .user("moderator"), viewer: "dave") {
                $0.sender == "moderator"
            }
            #expect(warning.text?.contains("general") == true)
        }
    }
}
