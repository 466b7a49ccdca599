import Foundation
import PerchChat
import Testing

@Suite struct EventJSONTests {
    static var sampleMessage: Message {
        var message = Message(
            id: 42, muid: "m\"1", conversationId: "group_g", sender: "al\\ice", receiverType: .group, receiverUid: "g",
            type: "file", category: .message, text: "line\nbreak\t\u{1} “quotes” 🎉",
            data: .object(["n": .number(1.5), "list": .array([.bool(true), .null, .string("x")]), "i": .number(3)]),
            attachments: [
                Attachment(name: "a b.pdf", size: 9, mimeType: "application/pdf", extension: "pdf", url: "/m/1")
            ],
            metadata: .object(["k": .string("v")]), tags: ["t1"], mentionedUids: ["bob"], parentMessageId: 7,
            quotedMessageId: 8, replyCount: 2, sentAt: 1, editedAt: 2, editedBy: "alice", deletedAt: 0, deletedBy: "",
            updatedAt: 3, pinnedAt: 4, pinnedBy: "app_system",
            reactions: [.init(reaction: "👍🏽", count: 2, reactedByMe: true), .init(reaction: ":eyes:", count: 1)],
            savedAt: 5, hasMentionedMe: true, threadSubscribed: true)
        message.quotedMessage = MessagePreview(
            Message(
                id: 8, conversationId: "group_g", sender: "bob", receiverType: .group, receiverUid: "g", text: "quoted")
        )
        message.parentMessage = MessagePreview(
            Message(
                id: 7, conversationId: "group_g", sender: "carol", receiverType: .group, receiverUid: "g",
                attachments: [Attachment(name: "x", size: 1, mimeType: "text/plain", extension: "txt", url: "/m/2")]))
        return message
    }

    static var sampleEvents: [ChatEvent] {
        let message = sampleMessage
        return [
            ChatEvent(seq: 9, name: .textMessageReceived, conversationId: "group_g", createdAt: 10, message: message),
            ChatEvent(
                name: .groupMemberScopeChanged, conversationId: "group_g", createdAt: 11,
                member: MemberChange(guid: "g", uid: "dave", actor: "bob", scope: .moderator, oldScope: .participant)),
            ChatEvent(
                name: .groupMemberLeft, conversationId: "group_g", createdAt: 12,
                member: MemberChange(guid: "g", uid: "dave", actor: "dave")),
            ChatEvent(
                seq: 13, name: .customMessageReceived, conversationId: "user_a_b", createdAt: 13,
                message: Message(
                    conversationId: "user_a_b", sender: "a", receiverType: .user, receiverUid: "b", type: "poll",
                    category: .custom, data: .bool(false), metadata: .array([]))),
            ChatEvent(
                seq: 14, name: .messageReactionRemoved, conversationId: "group_g", createdAt: 14,
                message: message.withoutViewerFields,
                reaction: Reaction(id: 3, messageId: 42, reaction: "👍🏽", uid: "bob", reactedAt: 14)),
            ChatEvent(
                seq: 15, name: .messageUnpinned, conversationId: "group_g", createdAt: 15,
                message: message.withoutViewerFields, actor: "al\"ice"),
            ChatEvent(
                seq: 16, name: .notificationsRead, conversationId: "", createdAt: 16,
                read: NotificationsRead(seqs: [3, 5], through: 0, unreadCount: 2)),
            ChatEvent(
                seq: 17, name: .notificationsRead, conversationId: "", createdAt: 17,
                read: NotificationsRead(through: 40, unreadCount: 0)),
        ]
    }

    @Test func theHandWrittenJSONDecodesToTheSameEvent() throws {
        let message = Self.sampleMessage
        for event in Self.sampleEvents {
            let decoded = try JSONDecoder().decode(ChatEvent.self, from: Data(event.json.utf8))
            #expect(decoded == event)
        }
        let plain = try JSONDecoder().decode(Message.self, from: Data(message.json.utf8))
        #expect(plain == message)
    }

    @Test func theReaderReadsWhatTheWriterWroteAsJSONDecoderDoes() throws {
        for event in Self.sampleEvents {
            let expected = try JSONDecoder().decode(ChatEvent.self, from: Data(event.json.utf8))
            #expect(try ChatEvent(json: event.json) == expected)
        }
    }

    @Test func theReaderTakesKeysInAnyOrderSkipsUnknownOnesAndReadsEscapes() throws {
        let json = #"""
            { "createdAt" : 3.0, "extra": {"deep": [1, {"x": null}, "\\"]}, "conversationId":"c\u00e9\ud83c\udf89\/",
              "name": "onGroupMemberLeft", "seq": -2, "member": {"actor": "a", "uid": "u", "guid": "g", "scope": null} }
            """#
        let event = try ChatEvent(json: json)
        #expect(event.seq == -2)
        #expect(event.createdAt == 3)
        #expect(event.conversationId == "cé🎉/")
        #expect(event.member == MemberChange(guid: "g", uid: "u", actor: "a"))
        #expect(event.message == nil)
        #expect(try JSONDecoder().decode(ChatEvent.self, from: Data(json.utf8)) == event)
    }

    @Test func theReaderRefusesWhatJSONDecoderRefuses() {
        let good = Self.sampleEvents[1].json
        let bad = [
            good.replacingOccurrences(of: "\"seq\":0,", with: ""),  // a required key missing
            good.replacingOccurrences(of: "\"seq\":0", with: "\"seq\":\"0\""),  // a string for a number
            good.replacingOccurrences(of: "\"seq\":0", with: "\"seq\":1.5"),  // not a whole number
            good.replacingOccurrences(of: "onGroupMemberScopeChanged", with: "onNothing"),  // not an event name
            good + "x",  // text after the value
            String(good.dropLast()),  // unterminated
            good.replacingOccurrences(of: "\"guid\":\"g\"", with: "\"guid\":\"g\n\""),  // a raw control character
        ]
        #expect(bad.allSatisfy { $0 != good })
        for text in bad {
            #expect(throws: JSONReader.Failure.self) { try ChatEvent(json: text) }
            #expect(throws: (any Error).self) { try JSONDecoder().decode(ChatEvent.self, from: Data(text.utf8)) }
        }
    }

    @Test func theReaderReadsAnyValueAsJSONDecoderDoes() throws {
        let good = [
            #"{"a": [1, -2.5, 3e2, true, false, null, "x\u0041"], "b": {}, "c": [], "d": {"e": [[]]}}"#,
            "[0, -0, 1.0E-2, 12345678901234]", "\"\\t\"", "  7  ", "null",
        ]
        for text in good {
            let expected = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
            #expect(try JSONReader.read(text) { try $0.value() } == expected, "\(text)")
        }
        // Foundation takes a trailing comma; JSON (RFC 8259) does not, and neither does the reader.
        #expect(throws: JSONReader.Failure.self) { try JSONReader.read("[1,]") { try $0.value() } }
        // Numbers as JSON's grammar has them: no leading zero, no bare point or exponent.
        let bad = [
            "{\"a\" 1}", "+1", ".5", "[1 2]", "{\"a\":}", "tru", "\"open", "[1]]", "", "01", "-01", "[007]", "1.",
            "1.e3", "1e", "1e+", "-", "--1", "0x10", "[1-2]",
        ]
        for text in bad {
            #expect(throws: JSONReader.Failure.self, "\(text)") { try JSONReader.read(text) { try $0.value() } }
            #expect(throws: (any Error).self, "\(text)") {
                try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
            }
        }
    }

    @Test func theWriterWritesNumbersAndEscapesAsFoundationReadsThem() throws {
        for number in [0, -1, 7, 10, 1_000_000, Int64.max, Int64.min] {
            var writer = JSONWriter()
            writer.int(number)
            #expect(writer.output == String(number))
        }
        // Numbers after other output land after it, in order.
        var list = JSONWriter(capacity: 1)
        list.raw("[")
        for (index, number) in [Int64.min, 42, 0, -9, Int64.max].enumerated() {
            if index > 0 { list.raw(",") }
            list.int(number)
        }
        list.raw("]")
        #expect(list.output == "[-9223372036854775808,42,0,-9,9223372036854775807]")
        let text = "quote \" backslash \\ newline \n tab \t bell \u{7} é 🎉"
        let quoted = JSONWriter.quoted(text)
        #expect(try JSONDecoder().decode(String.self, from: Data(quoted.utf8)) == text)
        #expect(quoted.contains("\\u0007"))
        // Runs longer and shorter than 16 bytes between escapes, at both ends, growing the buffer
        // from one byte: each comes back as written.
        let long = "\"" + String(repeating: "x", count: 40) + "\u{1F}é" + String(repeating: "🎉", count: 700) + "\\"
        for sample in [long, "\n", "", "short\"", String(repeating: "y", count: 17) + "\t"] {
            var writer = JSONWriter(capacity: 1)
            writer.string(sample)
            #expect(try JSONDecoder().decode(String.self, from: Data(writer.bytes)) == sample)
        }
    }

    @Test func deepNestingIsRefusedNotReadUntilTheStackRunsOut() throws {
        let deep = String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000)
        #expect(throws: JSONReader.Failure.self) { try JSONReader.read(deep) { try $0.value() } }
        let limit = JSONReader.maximumDepth
        let deepest = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        #expect(try JSONReader.read(deepest) { try $0.value() } != .null)
    }

    /// Skipping checks a value as reading it does, and tells where its bytes are.
    @Test func skippingAValueChecksItAndTellsWhereItIs() throws {
        let text = #"{"id": "a\"b", "body": {"x": [1, 2.5, true, null, {"y": "z"}]}, "n": -3e2}"#
        var ranges: [String: Range<Int>] = [:]
        try JSONReader.read(text) { reader in try reader.object { reader, key in ranges[key] = try reader.skipValue() }
        }
        let bytes = Array(text.utf8)
        #expect(
            ranges.mapValues { String(decoding: bytes[$0], as: UTF8.self) } == [
                "id": #""a\"b""#, "body": #"{"x": [1, 2.5, true, null, {"y": "z"}]}"#, "n": "-3e2",
            ])
        for bad in ["[1,]", #"{"a" 1}"#, "tru", "nul", "[1 2]", #""open"#, "{\"a\":}"] {
            #expect(throws: JSONReader.Failure.self, "\(bad)") { try JSONReader.read(bad) { try $0.skip() } }
        }
        let deep = String(repeating: "[", count: JSONReader.maximumDepth + 1)
        #expect(throws: JSONReader.Failure.self) { try JSONReader.read(deep) { try $0.skip() } }
    }
}
