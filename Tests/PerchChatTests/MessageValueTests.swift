import Foundation
import PerchChat
import Testing

/// `Message` keeps its fields in one shared box (copy on write); these tests hold it to the value
/// semantics of the struct of stored fields it replaced.
@Suite struct MessageValueTests {
    @Test func aChangedCopyLeavesTheOriginalAsItWas() {
        let original = EventJSONTests.sampleMessage
        var copy = original
        copy.text = "changed"
        copy.tags.append("t2")
        copy.reactions[0].count = 9
        copy.quotedMessage?.text = "changed too"
        copy.savedAt = 0

        #expect(original.text == "line\nbreak\t\u{1} “quotes” 🎉")
        #expect(original.tags == ["t1"])
        #expect(original.reactions[0].count == 2)
        #expect(original.quotedMessage?.text == "quoted")
        #expect(original.savedAt == 5)
        #expect(copy.text == "changed" && copy.tags == ["t1", "t2"] && copy.reactions[0].count == 9)
        #expect(copy != original)
    }

    @Test func copiesInAnArrayAndAClosureStayApart() {
        let original = EventJSONTests.sampleMessage
        var list = [original, original]
        list[1].id = 43
        list[1].mentionedUids.removeAll()
        let captured = list[0]
        let changedLater = { (message: Message) -> Message in
            var message = message
            message.pinnedAt = 0
            return message
        }(captured)

        #expect(list[0] == original && list[0].id == 42 && list[0].mentionedUids == ["bob"])
        #expect(list[1].id == 43 && list[1].mentionedUids.isEmpty)
        #expect(captured.pinnedAt == 4 && changedLater.pinnedAt == 0)
    }

    @Test func equalFieldsAreEqualAndHashAlikeWhicheverBoxHoldsThem() throws {
        let message = EventJSONTests.sampleMessage
        let rebuilt = try JSONDecoder().decode(Message.self, from: Data(message.json.utf8))
        #expect(rebuilt == message)
        #expect(rebuilt.hashValue == message.hashValue)
        #expect(Set([message, rebuilt, message.withoutViewerFields]).count == 2)
    }

    @Test func itsCodableKeysAreTheFieldNames() throws {
        let encoded = try JSONEncoder().encode(EventJSONTests.sampleMessage)
        let object = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
        #expect(object["id"] as? Int == 42)
        #expect(object["conversationId"] as? String == "group_g")
        #expect(object["pinnedBy"] as? String == "app_system")
        #expect(object["storage"] == nil && object["fields"] == nil)
        #expect(object.keys.contains("quotedMessage") && object.keys.contains("threadSubscribed"))
    }
}
