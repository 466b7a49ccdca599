import CSched
import Dispatch
import Foundation
import PerchChat
import PerchHost
import PerchLock
import PerchService

extension PerchAPI {
    static func threadRoutes() -> [Route] {
        [
            route("POST", "v3/messages/{id}/thread/subscription", name: "thread.subscribe") { api, request in
                let message = try await api.service.subscribeToThread(try request.id(), as: request.caller.uid)
                return .json(200, APIJSON.data(message.json))
            },
            route("DELETE", "v3/messages/{id}/thread/subscription", name: "thread.unsubscribe") { api, request in
                let message = try await api.service.unsubscribeFromThread(try request.id(), as: request.caller.uid)
                return .json(200, APIJSON.data(message.json))
            },
            route("GET", "v3/threads", name: "threads") { api, request in
                let options = ThreadsRequest.Options(
                    limit: try request.queryInt("limit", default: 30, range: 1...100)!, uid: request.query("uid"),
                    guid: request.query("guid"), participatedByMe: try request.queryBool("participatedByMe") ?? true)
                var cursor: ThreadCursor?
                if let text = request.query("cursor") {
                    let parts = text.split(separator: ":")
                    guard parts.count == 2, let time = Int64(parts[0]), let id = Int64(parts[1]) else {
                        throw ChatError.badRequest("cursor", "expected updatedAt:parentMessageId from meta.next")
                    }
                    cursor = ThreadCursor(updatedAt: time, parentMessageId: id)
                }
                let page = try await api.service.fetchThreads(options, as: request.caller.uid, after: cursor)
                var meta = "{\"hasMore\":\(page.hasMore)"
                if page.hasMore, let last = page.threads.last {
                    meta += ",\"next\":{\"cursor\":\"\(last.updatedAt):\(last.parentMessageId)\"}"
                }
                meta += "}"
                return .json(200, APIJSON.list(page.threads.map(threadJSON), meta: meta))
            },
        ]
    }

    static func threadJSON(_ thread: MessageThread) -> String {
        var writer = JSONWriter()
        writer.raw("{\"parentMessageId\":\(thread.parentMessageId),\"parentMessage\":")
        writer.message(thread.parentMessage)
        writer.raw(",\"replyCount\":\(thread.replyCount),\"lastReply\":")
        if let last = thread.lastReply { writer.message(last) } else { writer.raw("null") }
        writer.raw(",\"conversationId\":")
        writer.string(thread.conversationId)
        writer.raw(",\"receiverType\":\"\(thread.receiverType.rawValue)\",\"receiverUid\":")
        writer.string(thread.receiverUid)
        writer.raw(
            ",\"isSubscribed\":\(thread.isSubscribed),\"unreadReplyCount\":null,\"updatedAt\":\(thread.updatedAt)}")
        return writer.output
    }

    static func notificationRoutes() -> [Route] {
        [
            route("GET", "v3/notifications/preferences", name: "preferences.get") { api, request in
                .json(
                    200,
                    APIJSON.data(preferencesJSON(try await api.service.notificationPreferences(of: request.caller.uid)))
                )
            },
            route("PUT", "v3/notifications/preferences", name: "preferences.update") { api, request in
                var body = try request.requiredBody()
                var change = NotificationPreferencesChange()
                if var group = try body.object("groupPreferences") {
                    change.group = try conversationChange(&group, prefix: "group")
                    try group.finish()
                }
                if var direct = try body.object("oneOnOnePreferences") {
                    change.oneOnOne = try conversationChange(&direct, prefix: "oneOnOne")
                    try direct.finish()
                }
                if var mute = try body.object("mutePreferences") {
                    change.doNotDisturb = try mute.bool("dnd")
                    if mute.value("schedule") != nil {
                        throw ChatError.badRequest(
                            "mutePreferences.schedule", "not supported: turn dnd on and off, or mute conversations")
                    }
                    try mute.finish()
                }
                try body.finish()
                let saved = try await api.service.changeNotificationPreferences(change, of: request.caller.uid)
                return .json(200, APIJSON.data(preferencesJSON(saved)))
            },
            route("GET", "v3/notifications/preferences/mute", name: "mutes.list") { api, request in
                let muted = try await api.service.mutedConversations(of: request.caller.uid)
                return .json(
                    200, APIJSON.data(#"{"mutedConversations":["# + muted.map(mutedJSON).joined(separator: ",") + "]}"))
            },
            route("PUT", "v3/notifications/preferences/mute", name: "mutes.mute") { api, request in
                var body = try request.requiredBody()
                var muted: [MutedConversation] = []
                let now = api.service.clock.now()
                for var item in try conversations(&body) {
                    let conversation = MutedConversation(
                        receiver: try receiver(&item), until: try item.int("until") ?? 0)
                    // Checked here too, so that the refusal names the entry's field in the body.
                    try MuteRules.checkUntil(conversation.until, now: now, field: item.prefix + "until")
                    muted.append(conversation)
                    try item.finish()
                }
                try body.finish()
                try await api.service.muteConversations(muted, as: request.caller.uid)
                return .json(200, APIJSON.data(#"{"success":true}"#))
            },
            route("DELETE", "v3/notifications/preferences/mute", name: "mutes.unmute") { api, request in
                var body = try request.requiredBody()
                var receivers: [Receiver] = []
                for var item in try conversations(&body) {
                    receivers.append(try receiver(&item))
                    try item.finish()
                }
                try body.finish()
                try await api.service.unmuteConversations(receivers, as: request.caller.uid)
                return .json(200, APIJSON.data(#"{"success":true}"#))
            },
            route("GET", "v3/notifications", name: "notifications") { api, request in
                let uid = request.caller.uid
                let limit = try request.queryInt("limit", default: 100, range: 1...1000)!
                let unread = try request.queryBool("unread") ?? false
                var meta: [String] = []
                let records: [NotificationRecord]
                switch request.query("order") ?? "oldest" {
                case "newest":
                    // A notification centre's list: newest first, paged with `before`.
                    let before = try request.queryInt("before", range: 1...Int.max).map(Int64.init)
                    records = try await api.service.latestNotifications(
                        for: uid, before: before, limit: limit, unreadOnly: unread)
                    if records.count == limit, let last = records.last?.seq {
                        meta.append(#""next":{"before":\#(last)}"#)
                    }
                case "oldest":
                    let after = Int64(request.query("after") ?? "0") ?? -1
                    guard after >= 0 else { throw ChatError.badRequest("after", "expected a sequence number") }
                    let page = try await api.service.notifications(
                        for: uid, after: after, limit: limit, unreadOnly: unread)
                    records = page.records
                    // After rows the retention removed, `missed` says which (as `perch.gap` on the
                    // streams), and `next` moves past them even when none of the caller's is left.
                    if let next = page.records.last?.seq ?? page.missed?.upperBound {
                        meta.append(#""next":{"after":\#(next)}"#)
                    }
                    if let missed = page.missed { meta.append(#""missed":\#(PerchAPI.gapJSON(missed))"#) }
                default:
                    throw ChatError.badRequest("order", "oldest (after a sequence) or newest (before one)")
                }
                meta.append(#""unreadCount":\#(try await api.service.unreadNotificationCount(of: uid))"#)
                return .json(
                    200, APIJSON.list(records.map(notificationJSON), meta: "{" + meta.joined(separator: ",") + "}"))
            },
            route("POST", "v3/notifications/read", name: "notifications.read") { api, request in
                var body = try request.requiredBody()
                let all = try body.bool("all") ?? false
                let ids = try body.value("ids").map { value throws(ChatError) -> [Int64] in
                    guard case .array(let items) = value else { throw ChatError.badRequest("ids", "expected a list") }
                    return try items.enumerated().map { index, item throws(ChatError) -> Int64 in
                        guard case .number(let number) = item, number >= 1, number == number.rounded(),
                            number < 9.0e15
                        else { throw ChatError.badRequest("ids[\(index)]", "expected a notification id") }
                        return Int64(number)
                    }
                }
                try body.finish()
                let read: NotificationsRead
                switch (all, ids) {
                case (true, nil): read = try await api.service.markAllNotificationsRead(as: request.caller.uid)
                case (false, let ids?): read = try await api.service.markNotificationsRead(ids, as: request.caller.uid)
                default: throw ChatError.badRequest("ids", "give ids (a list of notification ids) or all: true")
                }
                return .json(200, APIJSON.data(APIJSON.encode(read)))
            },
        ]
    }

    static func notificationJSON(_ record: NotificationRecord) -> String { record.json }

    static func preferencesJSON(_ preferences: NotificationPreferences) -> String {
        """
        {"groupPreferences":{"groupMessages":\(preferences.group.messages.rawValue),\
        "groupReplies":\(preferences.group.replies.rawValue),\
        "groupQuotedReplies":\(preferences.group.quotedReplies.rawValue)},\
        "oneOnOnePreferences":{"oneOnOneMessages":\(preferences.oneOnOne.messages.rawValue),\
        "oneOnOneReplies":\(preferences.oneOnOne.replies.rawValue),\
        "oneOnOneQuotedReplies":\(preferences.oneOnOne.quotedReplies.rawValue)},\
        "mutePreferences":{"dnd":\(preferences.doNotDisturb)}}
        """
    }

    /// The `conversations` of a mute or unmute body.
    static func conversations(_ body: inout JSONBody) throws(ChatError) -> [JSONBody] {
        guard let items = try body.objects("conversations") else {
            throw .badRequest("conversations", "is required")
        }
        return items
    }

    /// A muted conversation's `id` and `type` (`oneOnOne`, or Perch's `user`, with the other
    /// user's uid; `group` with the guid).
    static func receiver(_ item: inout JSONBody) throws(ChatError) -> Receiver {
        let id = try item.string("id", required: true)!
        switch try item.string("type", required: true)! {
        case "group": return .group(id)
        case "oneOnOne", "user": return .user(id)
        default: throw .badRequest(item.prefix + "type", "oneOnOne or group")
        }
    }

    /// CometChat's `MutedConversation`: `type` is `oneOnOne` or `group`.
    static func mutedJSON(_ muted: MutedConversation) -> String {
        var writer = JSONWriter()
        writer.raw(#"{"id":"#)
        writer.string(muted.receiver.id)
        writer.raw(#","type":"\#(muted.receiver.type == .group ? "group" : "oneOnOne")","until":\#(muted.until)}"#)
        return writer.output
    }

    /// Reads `<prefix>Messages`, `<prefix>Replies`, `<prefix>QuotedReplies` as numbers or names.
    /// The change a `groupPreferences` or `oneOnOnePreferences` object asks for: each option by its
    /// number or its name.
    static func conversationChange(_ body: inout JSONBody, prefix: String) throws(ChatError)
        -> NotificationPreferencesChange.Conversation
    {
        func option(_ key: String, _ names: [Int: String]) throws(ChatError) -> Int? {
            guard let value = body.value(key) else { return nil }
            switch value {
            case .number(let number):
                if let raw = Int(exactly: number), names[raw] != nil { return raw }
            case .string(let text):
                if let match = names.first(where: { $0.value == text }) { return match.key }
            default: break
            }
            throw .badRequest(
                key,
                "expected one of "
                    + names.sorted { $0.key < $1.key }.map { "\($0.key) (\($0.value))" }
                    .joined(separator: ", "))
        }
        let messageNames = Dictionary(uniqueKeysWithValues: MessagesOption.allCases.map { ($0.rawValue, $0.name) })
        let replyNames = Dictionary(uniqueKeysWithValues: RepliesOption.allCases.map { ($0.rawValue, $0.name) })
        let quoteNames = Dictionary(uniqueKeysWithValues: QuotedRepliesOption.allCases.map { ($0.rawValue, $0.name) })
        var change = NotificationPreferencesChange.Conversation()
        change.messages = try option(prefix + "Messages", messageNames).flatMap(MessagesOption.init(rawValue:))
        change.replies = try option(prefix + "Replies", replyNames).flatMap(RepliesOption.init(rawValue:))
        change.quotedReplies = try option(prefix + "QuotedReplies", quoteNames)
            .flatMap(QuotedRepliesOption.init(rawValue:))
        return change
    }

    /// `GET /v3/events`: Server-Sent Events for the caller, one per listener callback, resumed with
    /// `Last-Event-ID`. Each connection is a session (`session` query or `X-Perch-Session` header,
    /// announced in a first `perch.session` event): a save made with that session's header does
    /// not come back on it.
    func events(_ request: Request) async throws(ChatError) -> HTTPResponse {
        let after = try await eventsStart(request)
        let name =
            try Self.sessionName(request.query("session"), field: "session") ?? request.caller.sessionName
            ?? UUID().uuidString.lowercased()
        let source = ChatEventSource(
            service: service, uid: request.caller.uid, session: Caller.sessionKey(uid: request.caller.uid, name: name),
            name: name, after: after, notificationsAfter: try await service.newestNotification(of: request.caller.uid),
            metrics: metrics)
        return HTTPResponse(
            status: 200,
            headers: [
                ("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no"),
            ],
            stream: source)
    }
}
