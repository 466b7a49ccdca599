import PerchChat
import PerchService
import PerchTestSupport
import Testing

@Suite struct ListingTests {
    @Test func pagesBackwardsAndForwardsWithoutGapsWhileMessagesArrive() async throws {
        try await withChat { chat in
            for index in 0..<25 { try await chat.say("m\(index)") }
            var seen: [String] = []
            var request = MessagesRequest(guid: "g", categories: [.message], limit: 7)
            var page = try await chat.service.fetchPrevious(request, as: "bob")
            var pages = 0
            while true {
                seen = page.messages.compactMap(\.text) + seen
                pages += 1
                // New messages land between pages; paging back must neither skip nor repeat.
                try await chat.say("late\(pages)")
                guard page.hasMore, let cursor = page.previousCursor else { break }
                request.messageId = cursor
                page = try await chat.service.fetchPrevious(request, as: "bob")
            }
            #expect(seen == (0..<25).map { "m\($0)" })
            #expect(pages == 4)

            var forward = MessagesRequest(guid: "g", categories: [.message], limit: 10)
            var collected: [String] = []
            while true {
                let next = try await chat.service.fetchNext(forward, as: "bob")
                collected += next.messages.compactMap(\.text)
                guard let cursor = next.nextCursor, next.hasMore else { break }
                forward.messageId = cursor
                if collected.count == 10 { try await chat.say("arrives mid-walk") }
            }
            #expect(collected.count == 25 + 4 + 1)
            #expect(Set(collected).count == collected.count)
            #expect(collected.last == "arrives mid-walk")
        }
    }

    /// A whole conversation is its top level and its thread replies together, in id order: paged
    /// back and forth, with filters that both halves must apply, nothing is skipped or repeated.
    @Test func aWholeConversationPagesItsTopLevelAndRepliesInIdOrder() async throws {
        try await withChat { chat in
            var roots: [Message] = []
            var all: [Message] = []
            for index in 0..<40 {
                let mention = index % 5 == 0 ? " <@uid:bob>" : ""
                let message: Message
                if index % 3 == 0 || roots.isEmpty {
                    message = try await chat.say("root\(index)\(mention)")
                    roots.append(message)
                } else {
                    message = try await chat.say("reply\(index)\(mention)", parent: roots[index % roots.count].id)
                }
                all.append(message)
            }
            _ = try await chat.service.delete(all[7].id, as: "dave")
            _ = try await chat.service.delete(all[9].id, as: "dave")

            func walkBack(_ first: MessagesRequest) async throws -> [Int64] {
                var request = first
                var ids: [Int64] = []
                while true {
                    let page = try await chat.service.fetchPrevious(request, as: "bob")
                    ids = page.messages.map(\.id) + ids
                    guard page.hasMore, let cursor = page.previousCursor else { return ids }
                    request.messageId = cursor
                }
            }
            func walkForward(_ first: MessagesRequest) async throws -> [Int64] {
                var request = first
                var ids: [Int64] = []
                while true {
                    let page = try await chat.service.fetchNext(request, as: "bob")
                    ids += page.messages.map(\.id)
                    guard page.hasMore, let cursor = page.nextCursor else { return ids }
                    request.messageId = cursor
                }
            }
            let ids = all.map(\.id)
            #expect(try await walkBack(MessagesRequest(guid: "g", categories: [.message], limit: 7)) == ids)
            #expect(try await walkForward(MessagesRequest(guid: "g", categories: [.message], limit: 4)) == ids)
            let live = ids.filter { $0 != all[7].id && $0 != all[9].id }
            #expect(
                try await walkBack(MessagesRequest(guid: "g", hideDeleted: true, categories: [.message], limit: 6))
                    == live)
            let mentioned = all.enumerated().filter { $0.offset % 5 == 0 }.map(\.element.id)
            #expect(try await walkForward(MessagesRequest(guid: "g", limit: 3, mentionedUids: ["bob"])) == mentioned)
            #expect(
                try await walkBack(MessagesRequest(guid: "g", hideReplies: true, categories: [.message], limit: 5))
                    == roots.map(\.id))
        }
    }

    @Test func filtersThreadsRepliesDeletedCategoriesSearchAndMentions() async throws {
        try await withChat { chat in
            let root = try await chat.say("root with 100% <@uid:bob>")
            try await chat.say("reply one", parent: root.id)
            let gone = try await chat.say("to delete")
            _ = try await chat.service.delete(gone.id, as: "dave")
            _ = try await chat.service.send(MessageDraft(to: .group("g"), type: "poll", category: .custom), as: "dave")

            func texts(_ request: MessagesRequest) async throws -> [String?] {
                try await chat.service.fetchPrevious(request, as: "carol").messages.map(\.text)
            }
            #expect(try await texts(MessagesRequest(guid: "g", parentMessageId: root.id)) == ["reply one"])
            #expect(try await texts(MessagesRequest(parentMessageId: root.id)) == ["reply one"])
            #expect(
                try await texts(MessagesRequest(guid: "g", hideReplies: true, categories: [.message, .custom])).count
                    == 3)
            #expect(
                try await texts(MessagesRequest(guid: "g", hideDeleted: true, categories: [.message, .custom])).count
                    == 3)
            #expect(try await texts(MessagesRequest(guid: "g", categories: [.custom])) == [nil])
            // The group's history keeps CometChat's action messages of membership changes.
            #expect(
                try await texts(MessagesRequest(guid: "g", categories: [.action])) == [
                    "alice added bob", "alice added carol", "alice added dave",
                ])
            #expect(try await texts(MessagesRequest(guid: "g", hideDeleted: true, types: ["text"])).count == 2)
            #expect(try await texts(MessagesRequest(guid: "g", searchKeyword: "100%")) == ["root with 100% <@uid:bob>"])
            #expect(try await texts(MessagesRequest(guid: "g", searchKeyword: "_")) == [])
            #expect(try await texts(MessagesRequest(guid: "g", mentionedUids: ["bob"])).count == 1)
            await expectRefusal(.badRequest) { _ = try await texts(MessagesRequest(uid: "bob", guid: "g")) }
            await expectRefusal(.badRequest) { _ = try await texts(MessagesRequest(guid: "g", limit: 0)) }
            await expectRefusal(.badRequest) { _ = try await texts(MessagesRequest(guid: "g", limit: 101)) }
            await expectRefusal(.badRequest) { _ = try await texts(MessagesRequest()) }
            await expectRefusal(.wrongMessageThread) {
                _ = try await texts(MessagesRequest(uid: "dave", parentMessageId: root.id))
            }
        }
    }

    /// The MessagesRequest filters of CometChat's SDK and REST API beyond the thread and the kind:
    /// sender, tags, quote replies, mentions, attachments and the send time, alone and together.
    @Test func filtersBySenderTagsQuotesMentionsAttachmentsAndTime() async throws {
        try await withChat { chat in
            let start = chat.clock.now()
            let first = try await chat.say("first", as: "bob")
            chat.clock.advance(by: 10)
            try await chat.service.send(
                MessageDraft(to: .group("g"), text: "tagged", tags: ["release", "ops"]), as: "dave")
            try await chat.say("quoting", as: "bob", quote: first.id)
            chat.clock.advance(by: 10)
            try await chat.say("hey <@uid:carol>", as: "carol")
            let file = Attachment(
                name: "a.png", size: 3, mimeType: "image/png", extension: "png", url: "https://example.com/a.png")
            try await chat.service.send(MessageDraft(to: .group("g"), type: "image", attachments: [file]), as: "bob")
            let reply = try await chat.say("in the thread", as: "bob", parent: first.id)

            func texts(_ configure: (inout MessagesRequest) -> Void) async throws -> [String] {
                var request = MessagesRequest(guid: "g", categories: [.message])
                configure(&request)
                return try await chat.service.fetchPrevious(request, as: "carol").messages.map { $0.text ?? $0.type }
            }
            #expect(try await texts { $0.sender = "bob" } == ["first", "quoting", "image", "in the thread"])
            #expect(try await texts { $0.tags = ["ops", "nothing"] } == ["tagged"])
            #expect(try await texts { $0.tags = ["nothing"] } == [])
            #expect(try await texts { $0.hideQuotedMessages = true }.contains("quoting") == false)
            #expect(try await texts { $0.hasMentions = true } == ["hey <@uid:carol>"])
            #expect(try await texts { $0.hasAttachments = true } == ["image"])
            // Both ends of the time window are included; either may be left open.
            #expect(
                try await texts { $0.fromTimestamp = start + 10 } == [
                    "tagged", "quoting", "hey <@uid:carol>", "image", "in the thread",
                ])
            #expect(try await texts { $0.toTimestamp = start + 10 } == ["first", "tagged", "quoting"])
            #expect(
                try await texts {
                    $0.fromTimestamp = start + 10
                    $0.toTimestamp = start + 10
                    $0.sender = "bob"
                } == ["quoting"])
            // A thread's listing takes them too.
            #expect(
                try await texts {
                    $0.parentMessageId = first.id
                    $0.sender = "bob"
                } == [reply.text!])
            // Paging keeps the filters: two of bob's at a time, back to the first.
            var request = MessagesRequest(guid: "g", categories: [.message], limit: 2)
            request.sender = "bob"
            var walked: [String] = []
            while true {
                let page = try await chat.service.fetchPrevious(request, as: "carol")
                walked = page.messages.map { $0.text ?? $0.type } + walked
                guard page.hasMore, let cursor = page.previousCursor else { break }
                request.messageId = cursor
            }
            #expect(walked == ["first", "quoting", "image", "in the thread"])
            await expectRefusal(.badRequest, params: ["field": "fromTimestamp", "reason": "after toTimestamp"]) {
                _ = try await texts {
                    $0.fromTimestamp = start + 20
                    $0.toTimestamp = start
                }
            }
        }
    }

    @Test func oneOnOneListingIsPrivateToItsTwoUsers() async throws {
        try await withChat { chat in
            try await chat.say("psst", as: "dave", to: .user("erin"))
            let erin = try await chat.service.fetchPrevious(MessagesRequest(uid: "dave"), as: "erin")
            #expect(erin.messages.map(\.text) == ["psst"])
            let carol = try await chat.service.fetchPrevious(MessagesRequest(uid: "dave"), as: "carol")
            #expect(carol.messages.isEmpty)
        }
    }

    @Test func aPageReadsThroughAnIndexWhateverTheConversationSize() async throws {
        try await withChat { chat in
            // A whole conversation is its top level merged with its thread replies, each walked
            // in order through its own index and stopped at the limit.
            let whole = ["messages_top_level", "messages_replies_by_conversation"]
            let queries = [
                (MessageQuery(conversationId: "group_g", direction: .before(nil), limit: 31), whole),
                (MessageQuery(conversationId: "group_g", direction: .before(500), limit: 31), whole),
                (
                    MessageQuery(
                        conversationId: "group_g", direction: .after(10), limit: 31,
                        filter: MessageFilter(hideDeleted: true, categories: [.message], mentionedUids: ["bob"])),
                    whole
                ),
                (
                    MessageQuery(
                        conversationId: "group_g", direction: .after(10), limit: 31,
                        filter: MessageFilter(parentMessageId: 0)),
                    ["messages_top_level"]
                ),
                // The filters of the REST listings keep to the conversation's indexes too (the
                // sender's muid index and the quotes' are partial and do not fit them).
                (
                    {
                        var filter = MessageFilter(sender: "bob")
                        filter.tags = ["ops"]
                        filter.hideQuoted = true
                        filter.onlyWithMentions = true
                        filter.onlyWithAttachments = true
                        filter.sentAt = 1...2_000_000_000
                        return MessageQuery(
                            conversationId: "group_g", direction: .before(nil), limit: 31, filter: filter)
                    }(),
                    whole
                ),
                (
                    MessageQuery(
                        conversationId: "group_g", direction: .before(nil), limit: 31,
                        filter: MessageFilter(parentMessageId: 7)),
                    ["messages_by_thread"]
                ),
            ]
            for (query, indexes) in queries {
                let plan = try await chat.store.queryPlan(query).joined(separator: " | ")
                for index in indexes { #expect(plan.contains("USING INDEX \(index) "), "\(plan)") }
                #expect(plan.contains("MERGE") == (indexes.count == 2), "\(plan)")
                #expect(!plan.contains("TEMP B-TREE"), "a sort means the whole conversation is read: \(plan)")
                #expect(!plan.contains("SCAN messages"), "\(plan)")
            }
        }
    }
}
