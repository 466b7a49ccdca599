import Foundation
import PerchChat
import PerchService

extension PerchAPI {
    static func groupRoutes() -> [Route] {
        [
            route("GET", "v3/groups", name: "groups.list") { api, request in
                let groups = try await api.service.groups(
                    as: request.caller.uid, limit: try request.queryInt("limit", default: 100, range: 1...100)!,
                    after: request.query("after"))
                return .json(200, APIJSON.list(groups.map(APIJSON.encode)))
            },
            route("POST", "v3/groups", name: "groups.create") { api, request in
                var body = try request.body()
                let guid = try body.string("guid", required: true)!
                let name = try body.string("name", required: true)!
                let typeText = try body.string("type") ?? "public"
                let metadata = body.json("metadata")
                let owner = try body.string("owner")
                try body.finish()
                guard let type = GroupType(rawValue: typeText) else {
                    throw ChatError.badRequest("type", "public or private")
                }
                // A field naming who acts is the caller, unless the app itself calls.
                if let owner, !request.caller.isApp, owner != request.caller.uid {
                    throw ChatError(
                        .permissionDenied,
                        ["field": "owner", "reason": "only the app creates a group for someone else"])
                }
                let group = try await api.service.createGroup(
                    guid: guid, name: name, type: type, owner: owner ?? request.caller.uid, metadata: metadata)
                return .json(200, APIJSON.data(APIJSON.encode(group)))
            },
            route("GET", "v3/groups/{guid}", name: "groups.get") { api, request in
                .json(
                    200,
                    APIJSON.data(
                        APIJSON.encode(try await api.service.group(request.parameter("guid"), as: request.caller.uid))))
            },
            route("PUT", "v3/groups/{guid}", name: "groups.update") { api, request in
                var body = try request.requiredBody()
                let name = try body.string("name")
                let typeText = try body.string("type")
                let metadata = body.json("metadata")
                try body.finish()
                let type = try typeText.map { text throws(ChatError) in
                    guard let type = GroupType(rawValue: text) else { throw .badRequest("type", "public or private") }
                    return type
                }
                let group = try await api.service.updateGroup(
                    request.parameter("guid"), name: name, type: type, metadata: metadata, by: request.caller.uid)
                return .json(200, APIJSON.data(APIJSON.encode(group)))
            },
            route("GET", "v3/groups/{guid}/members", name: "members.list") { api, request in
                let members = try await api.service.members(
                    of: request.parameter("guid"), as: request.caller.uid,
                    limit: try request.queryInt("limit", default: 100, range: 1...1000)!, after: request.query("after"))
                return .json(200, APIJSON.list(members.map(APIJSON.encode)))
            },
            route("POST", "v3/groups/{guid}/members", name: "members.add") { api, request in
                var body = try request.body()
                var additions: [(uid: String, scope: GroupMemberScope)] = []
                for (field, scope) in [
                    ("participants", GroupMemberScope.participant), ("moderators", .moderator), ("admins", .admin),
                ] {
                    for uid in try body.strings(field) ?? [] { additions.append((uid, scope)) }
                }
                try body.finish()
                try await api.service.addMembers(to: request.parameter("guid"), additions, by: request.caller.uid)
                return .json(200, APIJSON.data(#"{"success":true}"#))
            },
            route("POST", "v3/groups/{guid}/join", name: "groups.join") { api, request in
                let member = try await api.service.join(request.parameter("guid"), as: request.caller.uid)
                return .json(200, APIJSON.data(APIJSON.encode(member)))
            },
            route("POST", "v3/groups/{guid}/leave", name: "groups.leave") { api, request in
                try await api.service.leave(request.parameter("guid"), as: request.caller.uid)
                return .json(200, APIJSON.data(#"{"success":true}"#))
            },
            route("PUT", "v3/groups/{guid}/members/{uid}", name: "members.scope") { api, request in
                var body = try request.body()
                let scopeText = try body.string("scope", required: true)!
                try body.finish()
                guard let scope = GroupMemberScope(rawValue: scopeText) else {
                    throw ChatError.badRequest("scope", "admin, moderator or participant")
                }
                let member = try await api.service.changeScope(
                    of: request.parameter("uid"), in: request.parameter("guid"), to: scope, by: request.caller.uid)
                return .json(200, APIJSON.data(APIJSON.encode(member)))
            },
            route("DELETE", "v3/groups/{guid}/members/{uid}", name: "members.kick") { api, request in
                try await api.service.kick(
                    request.parameter("uid"), from: request.parameter("guid"), by: request.caller.uid)
                return .json(200, APIJSON.data(#"{"success":true}"#))
            },
            route("GET", "v3/groups/{guid}/bannedusers", name: "bans.list") { api, request in
                var users: [String] = []
                for uid in try await api.service.bannedUsers(of: request.parameter("guid"), as: request.caller.uid) {
                    users.append(APIJSON.encode(try await api.service.user(uid)))
                }
                return .json(200, APIJSON.list(users))
            },
            route("POST", "v3/groups/{guid}/bannedusers/{uid}", name: "bans.add") { api, request in
                try await api.service.ban(
                    request.parameter("uid"), from: request.parameter("guid"), by: request.caller.uid)
                return .json(200, APIJSON.data(#"{"success":true}"#))
            },
            route("DELETE", "v3/groups/{guid}/bannedusers/{uid}", name: "bans.remove") { api, request in
                try await api.service.unban(
                    request.parameter("uid"), from: request.parameter("guid"), by: request.caller.uid)
                return .json(200, APIJSON.data(#"{"success":true}"#))
            },
        ]
    }

    static func messageRoutes() -> [Route] {
        [
            // A send queues its one write before it waits, and reads nothing: inside a WebSocket,
            // sends sent back to back are committed together.
            route("POST", "v3/messages", name: "messages.send", pipelines: true) { api, request in
                var body = try request.body()
                let draft = try api.draft(&body, parent: nil, caller: request.caller.uid)
                try body.finish()
                return try await api.sent(draft, request)
            },
            // CometChat's Send Bot Message: the app (the API key alone) sends as one of its bots, a
            // user with role `bot`, with the body of a send; `onBehalfOf` is not read.
            route("POST", "v3/bots/{uid}/messages", name: "bots.send", appOnly: true) { api, request in
                let uid = request.parameter("uid")
                let bot: User
                do {
                    bot = try await api.service.user(uid)
                } catch let error as ChatError where error.code == .uidNotFound {
                    throw ChatError.botNotFound(uid)
                }
                guard bot.isBot else { throw ChatError.botNotFound(uid) }
                var body = try request.body()
                let draft = try api.draft(&body, parent: nil, caller: request.caller.uid)
                try body.finish()
                var asBot = request
                // The app's session: its message through the bot does not come back to it.
                asBot.caller = Caller(uid: uid, isApp: false, sessionName: nil)
                asBot.caller.session = request.caller.session
                return try await api.sent(draft, asBot)
            },
            route("GET", "v3/messages", name: "messages.saved") { api, request in
                // A conversation named here is refused by the service, as on the conversations' own
                // routes: saved messages span every conversation.
                var messagesRequest = try api.messagesRequest(request)
                guard messagesRequest.saved else {
                    throw ChatError.badRequest("saved", "GET /v3/messages lists saved messages: give saved=true")
                }
                messagesRequest.uid = request.query("uid")
                messagesRequest.guid = request.query("guid")
                return try await api.page(messagesRequest, request)
            },
            route("GET", "v3/messages/{id}", name: "messages.get") { api, request in
                // `meta.quoteReplyCount`: live quote replies anywhere (its threads too); its
                // sender may not delete it while any is left.
                let (message, quotes) = try await api.service.messageWithQuoteReplies(
                    try request.id(), as: request.caller.uid)
                return .json(200, #"{"data":\#(message.json),"meta":{"quoteReplyCount":\#(quotes)}}"#)
            },
            route("PUT", "v3/messages/{id}", name: "messages.edit") { api, request in
                var body = try request.body()
                var text: String?
                var metadata: JSONValue?
                var custom: JSONValue?
                if var data = try body.object("data") {
                    text = try data.string("text")
                    metadata = data.json("metadata")
                    custom = data.json("customData")
                    try data.finish()
                }
                try body.finish()
                let message = try await api.service.edit(
                    try request.id(), text: text, data: custom, metadata: metadata, as: request.caller.uid)
                return .json(200, APIJSON.data(message.json))
            },
            route("DELETE", "v3/messages/{id}", name: "messages.delete") { api, request in
                .json(200, APIJSON.data(try await api.service.delete(try request.id(), as: request.caller.uid).json))
            },
            route("POST", "v3/messages/{id}/thread", name: "thread.reply") { api, request in
                var body = try request.body()
                let parent = try await api.service.message(try request.id(), as: request.caller.uid)
                let draft = try api.draft(&body, parent: parent, caller: request.caller.uid)
                try body.finish()
                return try await api.sent(draft, request)
            },
            route("GET", "v3/messages/{id}/thread", name: "thread.list") { api, request in
                var messagesRequest = try api.messagesRequest(request)
                messagesRequest.parentMessageId = try request.id()
                return try await api.page(messagesRequest, request)
            },
            route("GET", "v3/users/{uid}/messages", name: "conversation.user") { api, request in
                var messagesRequest = try api.messagesRequest(request)
                messagesRequest.uid = request.parameter("uid")
                return try await api.page(messagesRequest, request)
            },
            route("GET", "v3/groups/{guid}/messages", name: "conversation.group") { api, request in
                var messagesRequest = try api.messagesRequest(request)
                messagesRequest.guid = request.parameter("guid")
                return try await api.page(messagesRequest, request)
            },
            route("POST", "v3/messages/{id}/pin", name: "pin") { api, request in
                .json(200, APIJSON.data(try await api.service.pin(try request.id(), as: request.caller.uid).json))
            },
            route("DELETE", "v3/messages/{id}/pin", name: "unpin") { api, request in
                .json(200, APIJSON.data(try await api.service.unpin(try request.id(), as: request.caller.uid).json))
            },
            route("POST", "v3/messages/{id}/save", name: "save") { api, request in
                let message = try await api.service.save(
                    try request.id(), as: request.caller.uid, session: request.caller.session)
                return .json(200, APIJSON.data(message.json))
            },
            route("DELETE", "v3/messages/{id}/save", name: "unsave") { api, request in
                let message = try await api.service.unsave(
                    try request.id(), as: request.caller.uid, session: request.caller.session)
                return .json(200, APIJSON.data(message.json))
            },
            route("POST", "v3/messages/{id}/reactions/{reaction}", name: "reactions.add") { api, request in
                let message = try await api.service.addReaction(
                    request.parameter("reaction"), to: try request.id(), as: request.caller.uid)
                return .json(200, APIJSON.data(message.json))
            },
            route("DELETE", "v3/messages/{id}/reactions/{reaction}", name: "reactions.remove") { api, request in
                let message = try await api.service.removeReaction(
                    request.parameter("reaction"), from: try request.id(), as: request.caller.uid)
                return .json(200, APIJSON.data(message.json))
            },
            route("GET", "v3/messages/{id}/reactions", name: "reactions.list") { api, request in
                let id = try request.id()
                let page = try await api.service.reactions(
                    to: id, reaction: request.query("reaction"),
                    limit: try request.queryInt("limit", default: 30, range: 1...100)!,
                    after: try request.queryInt("after", default: nil, range: 0...Int.max).map(Int64.init),
                    as: request.caller.uid)
                var meta = "{}"
                if page.hasMore, let last = page.reactions.last { meta = #"{"next":{"after":\#(last.id)}}"# }
                return .json(200, APIJSON.list(page.reactions.map(\.json), meta: meta))
            },
        ]
    }

    /// A draft from a CometChat-shaped body: receiver, receiverType, category, type, data{text,
    /// metadata, attachments, customData}, muid, quotedMessageId, parentId, tags.
    func draft(_ body: inout JSONBody, parent: Message?, caller: String) throws(ChatError) -> MessageDraft {
        let receiver: Receiver
        if let parent {
            receiver = parent.receiver(seenBy: caller)
            _ = try body.string("receiver")
            _ = try body.string("receiverType")
        } else {
            let id = try body.string("receiver", required: true)!
            switch try body.string("receiverType", required: true)! {
            case "user": receiver = .user(id)
            case "group": receiver = .group(id)
            default: throw ChatError(.invalidReceiverType)
            }
        }
        let categoryText = try body.string("category") ?? "message"
        guard let category = MessageCategory(rawValue: categoryText) else {
            throw .badRequest("category", "message or custom")
        }
        let type = try body.string("type") ?? MessageType.text
        var draft = MessageDraft(to: receiver, type: type, category: category)
        if var data = try body.object("data") {
            draft.text = try data.string("text")
            draft.metadata = data.json("metadata")
            draft.data = data.json("customData")
            if let attachments = data.json("attachments") {
                guard
                    let decoded = try? JSONDecoder().decode(
                        [Attachment].self, from: Data(JSONWriter.text(attachments).utf8))
                else {
                    throw .badRequest("data.attachments", "expected a list of {name, size, mimeType, extension, url}")
                }
                draft.attachments = decoded
            }
            try data.finish()
        }
        draft.muid = try body.string("muid") ?? ""
        draft.quotedMessageId = try body.int("quotedMessageId") ?? 0
        draft.parentMessageId = parent?.parentMessageId == 0 ? parent!.id : (try body.int("parentId") ?? 0)
        if let parent, parent.parentMessageId != 0 { draft.parentMessageId = parent.id }
        draft.tags = try body.strings("tags") ?? []
        return draft
    }

    func sent(_ draft: MessageDraft, _ request: Request) async throws(ChatError) -> HTTPResponse {
        try admitSend(request.caller)
        let message: Message
        if let pipelining = request.pipelining {
            // Queued before the next request starts (which may be another send, to be stored after).
            let pending = try service.queueSend(
                draft, as: request.caller.uid, session: request.caller.session, callerGoesOn: pipelining.moreWaiting)
            pipelining.queued()
            message = try await pending.message
        } else {
            message = try await service.send(draft, as: request.caller.uid, session: request.caller.session)
        }
        return .json(200, APIJSON.data(message.json))
    }

    /// The MessagesRequest filters as query parameters.
    func messagesRequest(_ request: Request) throws(ChatError) -> MessagesRequest {
        var messagesRequest = MessagesRequest(limit: try request.queryInt("limit", default: 30, range: 1...100)!)
        if let id = request.query("id") {
            guard let value = Int64(id), value > 0 else { throw .badRequest("id", "expected a message id") }
            messagesRequest.messageId = value
        }
        if let affix = request.query("affix"), affix != "append", affix != "prepend" {
            throw .badRequest("affix", "append or prepend")
        }
        messagesRequest.hideReplies = try request.queryBool("hideReplies") ?? false
        messagesRequest.hideDeleted = try request.queryBool("hideDeleted") ?? false
        messagesRequest.pinned = try request.queryBool("pinned") ?? false
        messagesRequest.saved = try request.queryBool("saved") ?? false
        messagesRequest.searchKeyword = request.query("searchKey")
        if let parent = request.query("parentMessageId") {
            guard let value = Int64(parent), value >= 0 else { throw .badRequest("parentMessageId", "expected an id") }
            messagesRequest.parentMessageId = value
        }
        // CometChat's REST API names these in the singular and the plural.
        for name in ["categories", "category"] {
            guard let categories = request.query(name) else { continue }
            messagesRequest.categories += try categories.split(separator: ",").map { text throws(ChatError) in
                guard let category = MessageCategory(rawValue: String(text)) else {
                    throw .badRequest(name, "message, action or custom")
                }
                return category
            }
        }
        for name in ["types", "type"] {
            if let types = request.query(name) { messagesRequest.types += types.split(separator: ",").map(String.init) }
        }
        if let mentioned = request.query("mentionedUids") {
            messagesRequest.mentionedUids = mentioned.split(separator: ",").map(String.init)
        }
        messagesRequest.sender = request.query("sender")
        if let tags = request.query("tags") { messagesRequest.tags = tags.split(separator: ",").map(String.init) }
        messagesRequest.hideQuotedMessages = try request.queryBool("hideQuotedMessages") ?? false
        messagesRequest.hasMentions = try request.queryBool("hasMentions") ?? false
        messagesRequest.hasAttachments = try request.queryBool("hasAttachments") ?? false
        messagesRequest.hasReactions = try request.queryBool("hasReactions") ?? false
        _ = try request.queryBool("withTags")  // a message's tags are always in its JSON
        let seconds = 0...Int(Int64.max)
        messagesRequest.fromTimestamp = try request.queryInt("fromTimestamp", range: seconds).map(Int64.init)
        messagesRequest.toTimestamp = try request.queryInt("toTimestamp", range: seconds).map(Int64.init)
        // The SDK's `setTimestamp`: before it when paging back, after it when paging on.
        if let timestamp = try request.queryInt("timestamp", range: seconds).map(Int64.init) {
            if request.query("affix") == "append" {
                messagesRequest.fromTimestamp = max(messagesRequest.fromTimestamp ?? 0, timestamp)
            } else {
                messagesRequest.toTimestamp = min(messagesRequest.toTimestamp ?? .max, timestamp)
            }
        }
        // Filters on state Perch does not keep are refused, not ignored: a page that silently
        // left them out would look filtered.
        let sync = "not supported: read the live events (GET /v3/events) on from a sequence"
        let unsupported = [
            ("unread", "not supported: Perch keeps no read receipts"),
            ("hasLinks", "not supported: Perch does not index links"), ("updatesOnly", sync),
        ]
        for (name, reason) in unsupported where try request.queryBool(name) == true { throw .badRequest(name, reason) }
        if request.query("updatedAfter") != nil { throw .badRequest("updatedAfter", sync) }
        return messagesRequest
    }

    func page(_ messagesRequest: MessagesRequest, _ request: Request) async throws(ChatError) -> HTTPResponse {
        let forward = request.query("affix") == "append"
        let page =
            forward
            ? try await service.fetchNext(messagesRequest, as: request.caller.uid)
            : try await service.fetchPrevious(messagesRequest, as: request.caller.uid)
        var meta = "{\"hasMore\":\(page.hasMore)"
        if let previous = page.previousCursor { meta += ",\"previous\":{\"id\":\(previous),\"affix\":\"prepend\"}" }
        if let next = page.nextCursor { meta += ",\"next\":{\"id\":\(next),\"affix\":\"append\"}" }
        meta += "}"
        return .json(200, APIJSON.list(page.messages.map(\.json), meta: meta))
    }
}

extension JSONWriter {
    /// JSON text of a value.
    static func text(_ value: JSONValue) -> String {
        var writer = JSONWriter()
        writer.value(value)
        return writer.output
    }
}
