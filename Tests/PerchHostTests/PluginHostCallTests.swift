import Foundation
import PerchChat
import PerchLock
import PerchTestSupport
import PerchTesting
import Testing

@testable import PerchHost

/// An external plugin's calls to the host reach what a Swift plugin's `BotContext` does: sends
/// anywhere the bot may post, with or without an event; reactions; a thread subscription by id;
/// the bot's pinned and saved lists and threads inbox; always as the bot, so never beyond it.
@Suite(.serialized) struct PluginHostCallTests {
    /// Runs `calls` through the caller plugin as carol's `!do` in `room`, and gives back its answers.
    static func run(_ calls: [String], in chat: TestChat, answers path: String) async throws -> [JSONValue] {
        try? FileManager.default.removeItem(atPath: path)
        try await chat.post("!do [" + calls.joined(separator: ",") + "]", as: "carol", to: .group("room"))
        let text = try await chat.waitFor("the plugin's answers") { try? String(contentsOfFile: path, encoding: .utf8) }
        guard case .array(let answers) = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else {
            return []
        }
        return answers
    }

    static func items(_ value: JSONValue?) -> [JSONValue] {
        guard case .array(let items)? = value else { return [] }
        return items
    }

    static func bot(answers path: String) -> String {
        botFile(
            "  - on: { command: do }\n    do: [{ plugin: caller }]",
            extra:
                "plugins:\n  - name: caller\n    exec: [python3, \"\(pluginFixtures)/caller_plugin.py\", \"\(path)\"]")
    }

    @Test func theVocabularyReachesWhatBotContextDoes() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("perch-calls-\(UUID()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await withTestHost(config: hostConfig, bots: ["b.yaml": Self.bot(answers: path)]) { chat in
            let root = try await chat.post("a thread to follow", as: "alice", to: .group("room"))
            let answers = try await Self.run(
                [
                    #"["host.send", {"alone": true, "receiverType": "group", "receiver": "other", "text": "on my own"}]"#,
                    #"["host.react", {"reaction": "👀"}]"#,
                    #"["host.pin", {}]"#,
                    #"["host.save", {}]"#,
                    #"["host.messages", {"guid": "room", "pinned": true}]"#,
                    #"["host.messages", {"saved": true}]"#,
                    #"["host.subscribe", {"who": "bot", "parentMessageId": \#(root.id)}]"#,
                    #"["host.threads", {"alone": true}]"#,
                    #"["host.subscribe", {"parentMessageId": \#(root.id)}]"#,
                ], in: chat, answers: path)
            #expect(answers.count == 9, "\(answers)")
            let sent = try #require(answers.first?["message"])
            #expect(sent["receiverUid"]?.stringValue == "other" && sent["sender"]?.stringValue == "bot", "\(sent)")
            let elsewhere = try await chat.messages(in: .group("other")).filter { $0.sender == "bot" }
            #expect(elsewhere.map(\.text) == ["on my own"])

            let asked = try #require(
                try await chat.messages(in: .group("room")).last { $0.text?.hasPrefix("!do") == true })
            #expect(asked.reactions.map(\.reaction) == ["👀"])
            #expect(Self.items(answers[4]["messages"]).first?["id"] == .number(Double(asked.id)), "\(answers[4])")
            #expect(Self.items(answers[5]["messages"]).first?["id"] == .number(Double(asked.id)), "\(answers[5])")
            #expect(answers[6] == .object([:]))
            #expect(
                Self.items(answers[7]["threads"]).first?["parentMessageId"] == .number(Double(root.id)), "\(answers[7])"
            )
            #expect(answers[7]["next"] == .null)
            // Carol (the sender) subscribed by the thread's id.
            #expect(try await chat.service.message(root.id, as: "carol").threadSubscribed)
        }
    }

    @Test func callsNeverReachBeyondTheBot() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("perch-calls-\(UUID()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await withTestHost(config: hostConfig, bots: ["b.yaml": Self.bot(answers: path)]) { chat in
            let root = try await chat.post("in the room", as: "alice", to: .group("room"))
            let hidden = try await chat.post("between us", as: "alice", to: .user("carol"))
            let answers = try await Self.run(
                [
                    // Someone other than the sender, without allow_subscribing_others.
                    #"["host.subscribe", {"who": "alice", "parentMessageId": \#(root.id)}]"#,
                    // The sender, to a thread of a conversation the bot is not in.
                    #"["host.subscribe", {"parentMessageId": \#(hidden.id)}]"#,
                    // A conversation the bot is not in.
                    #"["host.messages", {"parentMessageId": \#(hidden.id)}]"#,
                    // A call that needs the event's message, without one.
                    #"["host.reply", {"alone": true, "text": "to what?"}]"#,
                    #"["host.send", {"alone": true, "receiver": "other"}]"#,
                    #"["host.teleport", {}]"#,
                ], in: chat, answers: path)
            #expect(answers.count == 6, "\(answers)")
            #expect(answers[0]["error"]?["code"]?.stringValue == "ERR_PERMISSION_DENIED", "\(answers[0])")
            #expect(answers[1]["error"]?["code"] != nil, "\(answers[1])")
            #expect(answers[2]["error"] != nil, "\(answers[2])")
            #expect(answers[3]["error"]?["code"]?.stringValue == "ERR_BAD_REQUEST", "\(answers[3])")
            #expect(answers[4]["error"]?.stringValue == "text is required", "\(answers[4])")
            #expect(answers[5]["error"]?.stringValue == "unknown action 'teleport'", "\(answers[5])")
            #expect(!(try await chat.service.message(root.id, as: "alice").threadSubscribed))
            #expect(!(try await chat.service.message(hidden.id, as: "carol").threadSubscribed))
        }
    }
}
