import Foundation
import PerchChat
import PerchService

extension ExternalPlugin {
    /// Runs a call an external plugin made to the host (docs/plugins.md, "Calling the host"), in
    /// `context` (the event of the request it handles, or none):
    ///
    /// - `host.<action>`: an action of the bot-file vocabulary (`host.reply {text}`,
    ///   `host.subscribe {who, parentMessageId}`, `host.react {reaction}`, ...) → `{}`;
    /// - `host.send {receiverType, receiver, text, parentMessageId, quotedMessageId, notify, muid}`
    ///   → `{message}`: a message anywhere the bot may post, with or without an event;
    /// - `host.messages {uid | guid | parentMessageId, pinned, saved, before, limit}` →
    ///   `{messages, hasMore}`: a page as the bot sees it, newest last (`saved: true` alone: the
    ///   bot's saved messages; `pinned: true`: a conversation's pins);
    /// - `host.threads {uid | guid, limit, after}` → `{threads, next}`: the bot's threads inbox (the
    ///   threads it subscribes to), `next` the cursor of the following page or null;
    /// - `host.storage.*` (``storageCall(_:_:_:)``).
    ///
    /// Everything is done as the bot's user, so it reads and acts only where the bot may.
    /// - Throws: ``PluginFailure`` for an unknown method or a malformed argument; the service's
    ///   ``ChatError`` for what it refuses.
    static func hostCall(_ method: String, _ params: JSONValue, _ context: BotContext) async throws -> JSONValue {
        guard method.hasPrefix("host.") else { throw PluginFailure(description: "unknown method \(method)") }
        let name = String(method.dropFirst("host.".count))
        switch name {
        case let storage where storage.hasPrefix("storage."):
            return try await storageCall(String(storage.dropFirst("storage.".count)), params, context.storage)
        case "send":
            let sent = try await context.send(try draft(params))
            return .object(["message": json(of: sent)])
        case "messages":
            let page = try await context.service.fetchPrevious(try messagesRequest(params), as: context.bot.uid)
            return .object(["messages": .array(page.messages.map(json(of:))), "hasMore": .bool(page.hasMore)])
        case "threads":
            return try await threads(params, context)
        default:
            var argument = params
            if case .object(var object) = params {
                object["context"] = nil
                argument = object.isEmpty ? .null : .object(object)
            }
            try await PluginAction(argument == .null ? .string(name) : .object([name: argument])).run(context)
            return .object([:])
        }
    }

    /// The draft of a `host.send`.
    private static func draft(_ params: JSONValue) throws -> MessageDraft {
        guard let text = params["text"]?.stringValue else { throw PluginFailure(description: "text is required") }
        guard let receiver = params["receiver"]?.stringValue, !receiver.isEmpty else {
            throw PluginFailure(description: "receiver is required (a group's guid or a user's uid)")
        }
        let type = params["receiverType"]?.stringValue ?? "group"
        guard type == "group" || type == "user" else {
            throw PluginFailure(description: "receiverType is group or user, found '\(type)'")
        }
        var draft = MessageDraft(
            to: type == "group" ? .group(receiver) : .user(receiver), text: text,
            parentMessageId: try id(params, "parentMessageId") ?? 0,
            quotedMessageId: try id(params, "quotedMessageId") ?? 0)
        draft.notify = params["notify"] == .bool(true)
        if let muid = params["muid"]?.stringValue { draft.muid = muid }
        return draft
    }

    /// The request of a `host.messages`.
    private static func messagesRequest(_ params: JSONValue) throws -> MessagesRequest {
        var request = MessagesRequest(
            uid: params["uid"]?.stringValue, guid: params["guid"]?.stringValue,
            parentMessageId: try id(params, "parentMessageId"), limit: try count(params, "limit") ?? 30,
            messageId: try id(params, "before"), pinned: params["pinned"] == .bool(true),
            saved: params["saved"] == .bool(true))
        request.hideDeleted = params["hideDeleted"] == .bool(true)
        return request
    }

    private static func threads(_ params: JSONValue, _ context: BotContext) async throws -> JSONValue {
        let options = ThreadsRequest.Options(
            limit: try count(params, "limit") ?? 30, uid: params["uid"]?.stringValue, guid: params["guid"]?.stringValue)
        var cursor: ThreadCursor?
        if let after = params["after"], after != .null {
            guard case .number(let updatedAt)? = after["updatedAt"], let parent = try id(after, "parentMessageId")
            else { throw PluginFailure(description: "after is the `next` of the page before") }
            cursor = ThreadCursor(updatedAt: Int64(updatedAt), parentMessageId: parent)
        }
        let page = try await context.service.fetchThreads(options, as: context.bot.uid, after: cursor)
        let threads: [JSONValue] = page.threads.map { thread in
            .object([
                "parentMessageId": .number(Double(thread.parentMessageId)),
                "parentMessage": json(of: thread.parentMessage), "replyCount": .number(Double(thread.replyCount)),
                "lastReply": thread.lastReply.map(json(of:)) ?? .null, "conversationId": .string(thread.conversationId),
                "receiverType": .string(thread.receiverType.rawValue), "receiverUid": .string(thread.receiverUid),
                "isSubscribed": .bool(thread.isSubscribed), "updatedAt": .number(Double(thread.updatedAt)),
            ])
        }
        let next: JSONValue =
            page.hasMore
            ? page.threads.last.map {
                .object([
                    "updatedAt": .number(Double($0.updatedAt)), "parentMessageId": .number(Double($0.parentMessageId)),
                ])
            } ?? .null : .null
        return .object(["threads": .array(threads), "next": next])
    }

    /// A message as the API and the events show it.
    static func json(of message: Message) -> JSONValue {
        var writer = JSONWriter()
        writer.message(message)
        return (try? JSONValue(parsing: writer.output)) ?? .null
    }

    /// `params[key]` as a message id, nil when absent.
    private static func id(_ params: JSONValue, _ key: String) throws -> Int64? {
        guard let value = params[key], value != .null else { return nil }
        guard case .number(let number) = value, let id = Int64(exactly: number), id > 0 else {
            throw PluginFailure(description: "\(key) is a message id")
        }
        return id
    }

    /// `params[key]` as a whole number, nil when absent.
    private static func count(_ params: JSONValue, _ key: String) throws -> Int? {
        guard let value = params[key], value != .null else { return nil }
        guard case .number(let number) = value, let count = Int(exactly: number) else {
            throw PluginFailure(description: "\(key) is a whole number")
        }
        return count
    }
}
