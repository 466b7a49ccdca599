import Foundation
import PerchChat
import Testing

@Suite struct EventJSONTests {
    @Test func theHandWrittenJSONDecodesToTheSameEvent() throws {
        var message = Message(
            id: 42, muid: "m\"1", conversationId: "group_g", sender: "al\\ice", receiverType: .group, receiverUid: "g",
            type: "file", category: .message, text: "line\nbreak\t\u{1} “quotes” 🎉",
            data: .object(["n": .number(1.5), "list": .array([.bool(true), .null, .string("x")]), "i": .number(3)]),
            attachments: [
                Attachment(name: "a b.pdf", size: 9, mimeType: "application/pdf", extension: "pdf", url: "/m/1")
            ],
            metadata: .object(["k": .string("v")]), tags: ["t1"], mentionedUids: ["bob"], parentMessageId: 7,
            quotedMessageId: 8, replyCount: 2, sentAt: 1, editedAt: 2, editedBy: "alice", deletedAt: 0, deletedBy: "",
            updatedAt: 3, pinnedAt: 4, pinnedBy: "app_system", savedAt: 5, hasMentionedMe: true, threadSubscribed: true)
        message.quotedMessage = MessagePreview(
            Message(
                id: 8, conversationId: "group_g", sender: "bob", receiverType: .group, receiverUid: "g", text: "quoted")
        )
        let events = [
            ChatEvent(seq: 9, name: .textMessageReceived, conversationId: "group_g", createdAt: 10, message: message),
            ChatEvent(
                name: .groupMemberScopeChanged, conversationId: "group_g", createdAt: 11,
                member: MemberChange(guid: "g", uid: "dave", actor: "bob", scope: .moderator, oldScope: .participant)),
            ChatEvent(
                name: .groupMemberLeft, conversationId: "group_g", createdAt: 12,
                member: MemberChange(guid: "g", uid: "dave", actor: "dave")),
        ]
        for event in events {
            let decoded = try JSONDecoder().decode(ChatEvent.self, from: Data(event.json.utf8))
            #expect(decoded == event)
        }
        let plain = try JSONDecoder().decode(Message.self, from: Data(message.json.utf8))
        #expect(plain == message)
    }
}
