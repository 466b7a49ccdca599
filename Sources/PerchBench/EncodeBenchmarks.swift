import Foundation
import PerchChat

/// The event log's JSON for one message event (what the writer thread encodes for every change it
/// commits): nanoseconds an event, for peers-v1's two kinds of message (a person's command and a
/// bot's reply).
func benchmarkEncode() async throws {
    let command = ChatEvent(
        seq: 123_456, name: .textMessageReceived, conversationId: "group_room", createdAt: 1_796_456_236,
        message: Message(
            id: 123_456, conversationId: "group_room", sender: "human", receiverType: .group, receiverUid: "room",
            text: "!ping 4242", sentAt: 1_796_456_236, updatedAt: 1_796_456_236))
    let reply = ChatEvent(
        seq: 123_457, name: .textMessageReceived, conversationId: "group_room", createdAt: 1_796_456_236,
        message: Message(
            id: 123_457, conversationId: "group_room", sender: "bot", receiverType: .group, receiverUid: "room",
            text: "pong 4242", mentionedUids: ["human"], sentAt: 1_796_456_236, updatedAt: 1_796_456_236))
    let count = 200_000
    var bytes = 0
    var best = Double.infinity
    for _ in 0..<5 {
        let start = DispatchTime.now().uptimeNanoseconds
        for index in 0..<count { bytes &+= (index & 1 == 0 ? command : reply).jsonBytes.count }
        best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count))
    }
    report("encode", ["events": count, "nanoseconds_per_event": best.rounded(), "bytes": bytes / (5 * count)])
}
