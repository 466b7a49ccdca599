import Foundation
import PerchChat
import PerchService

/// Where a room's events go in the store: a mapped room is a group; a direct chat a bot made is a
/// one-on-one between the bot and the person.
enum RoomPlace: Sendable, Equatable {
    case group(String)
    case direct(bot: String, person: String)
}

/// Matrix events as the facts the store records (``MirroredFact``): messages with their thread
/// (`m.thread`) and quote (`m.in_reply_to`, unless it is a thread's fallback), mentions
/// (`m.mentions`, or a bot's Matrix id in the text of a client that sends none), edits
/// (`m.replace`), redactions, reactions (`m.annotation`), memberships, power levels as scopes, and
/// pins (`m.room.pinned_events`).
///
/// People keep their Matrix ids as uids; a bot's account is its bot's uid.
struct EventTranslation: Sendable {
    /// The bots' uids by their accounts' Matrix ids.
    let bots: [String: String]
    /// The homeserver, for the download address of a file (`mxc://` is not a URL a bot can fetch).
    let homeserver: URL

    func uid(_ matrixID: String) -> String { bots[matrixID] ?? matrixID }

    /// The facts of `event` in `room`, whose state (before the event) is `state`: a state event
    /// updates it. `history`: the event is from before the bots could see it (recorded, not acted on).
    func facts(of event: MatrixEvent, in place: RoomPlace, state: inout RoomState, history: Bool) -> [MirroredFact] {
        let before = state
        if event.stateKey != nil { state.apply(event) }
        let by = uid(event.sender)
        switch (event.type, place) {
        case ("m.room.message", _):
            if event.content.at("m.relates_to", "rel_type")?.stringValue == "m.replace" {
                guard let target = event.content.at("m.relates_to", "event_id")?.stringValue,
                    let new = event.content["m.new_content"]
                else { return [] }
                return [.edit(of: target, text: Self.text(of: new) ?? "", mentions: mentions(in: new), by: by)]
            }
            return [.message(message(event, in: place, history: history))]
        case ("m.reaction", _):
            guard event.content.at("m.relates_to", "rel_type")?.stringValue == "m.annotation",
                let target = event.content.at("m.relates_to", "event_id")?.stringValue,
                let key = event.content.at("m.relates_to", "key")?.stringValue
            else { return [] }
            return [.reaction(id: event.id, on: target, reaction: key, by: by)]
        case ("m.room.redaction", _):
            guard let target = event.redacts else { return [] }
            return [.delete(of: target, by: by), .reactionRemoved(id: target, by: by)]
        case ("m.room.member", .group(let guid)):
            return membership(event, guid: guid, before: before, after: state, by: by)
        case ("m.room.power_levels", .group(let guid)):
            return state.members.keys.sorted().compactMap { member in
                let scope = state.scope(of: member)
                return scope == before.scope(of: member)
                    ? nil : .membership(guid: guid, uid: uid(member), state: .member(scope), by: by)
            }
        case ("m.room.pinned_events", .group(let guid)):
            return [.pins(guid: guid, pinned: state.pinned, by: by)]
        case ("m.room.name", .group(let guid)), ("m.room.join_rules", .group(let guid)):
            return [group(guid, state)]
        default:
            return []
        }
    }

    /// The group a room is: its name (or id), its type, its first creator as the owner.
    func group(_ guid: String, _ state: RoomState) -> MirroredFact {
        .group(
            guid: guid, name: state.name.isEmpty ? guid : state.name, type: state.groupType,
            owner: uid(state.creators.first ?? ""))
    }

    /// The members of a room's state as the group's, with their scopes (their names come with
    /// ``people(of:)``).
    func members(of state: RoomState) -> [String: GroupMemberScope] {
        Dictionary(uniqueKeysWithValues: state.members.keys.map { (uid($0), state.scope(of: $0)) })
    }

    /// The people of a room's state (its bots' accounts left out), with their display names.
    func people(of state: RoomState) -> [MirroredFact] {
        state.members.keys.sorted().filter { bots[$0] == nil }.map { member in
            let name = state.members[member] ?? ""
            return .user(uid: member, name: name.isEmpty ? member : name)
        }
    }

    func membership(_ event: MatrixEvent, guid: String, before: RoomState, after: RoomState, by: String)
        -> [MirroredFact]
    {
        guard let member = event.stateKey else { return [] }
        let who = uid(member)
        var facts: [MirroredFact] = []
        let name = event.content["displayname"]?.stringValue ?? ""
        let previous = event.previous?["membership"]?.stringValue
        switch event.content["membership"]?.stringValue {
        case "join":
            if bots[member] == nil { facts.append(.user(uid: who, name: name.isEmpty ? member : name)) }
            facts.append(.membership(guid: guid, uid: who, state: .member(after.scope(of: member)), by: by))
        case "leave":
            if previous == "ban" {
                facts.append(.membership(guid: guid, uid: who, state: .unbanned, by: by))
            } else if before.members[member] != nil {
                facts.append(.membership(guid: guid, uid: who, state: event.sender == member ? .left : .kicked, by: by))
            }
        case "ban":
            facts.append(.membership(guid: guid, uid: who, state: .banned, by: by))
        default:
            break
        }
        return facts
    }

    func message(_ event: MatrixEvent, in place: RoomPlace, history: Bool) -> MirroredMessage {
        let content = event.content
        let relates = content["m.relates_to"]
        var threadRoot: String?
        var quoted = relates?.at("m.in_reply_to", "event_id")?.stringValue
        if relates?["rel_type"]?.stringValue == "m.thread" {
            threadRoot = relates?["event_id"]?.stringValue
            // A thread reply names the thread's latest event as a fallback for clients without
            // threads: that is not a quote.
            if relates?["is_falling_back"]?.boolValue == true { quoted = nil }
        }
        let receiver: Receiver
        switch place {
        case .group(let guid): receiver = .group(guid)
        case .direct(let bot, let person): receiver = uid(event.sender) == bot ? .user(person) : .user(bot)
        }
        let (type, attachments) = media(content)
        var text = Self.text(of: content)
        if quoted != nil, let body = text { text = Self.withoutReplyFallback(body) }
        if !attachments.isEmpty { text = nil }
        return MirroredMessage(
            id: event.id, sender: uid(event.sender), receiver: receiver, type: type, text: text,
            attachments: attachments, mentions: mentions(in: content), threadRoot: threadRoot, quoted: quoted,
            sentAt: event.timestamp / 1000, history: history)
    }

    /// The text of a message's content: its `body`.
    static func text(of content: JSONValue) -> String? { content["body"]?.stringValue }

    /// Who a message mentions: `m.mentions.user_ids` when the client sent it; otherwise the bots
    /// whose Matrix id its text names (clients from before `m.mentions`).
    func mentions(in content: JSONValue) -> [String] {
        if let listed = content["m.mentions"] {
            return (listed["user_ids"]?.arrayValue ?? []).compactMap(\.stringValue).map(uid)
        }
        let text = (Self.text(of: content) ?? "") + " " + (content["formatted_body"]?.stringValue ?? "")
        return bots.keys.sorted().filter { text.contains($0) }.map(uid)
    }

    /// A media message's type and its file; a text message's type and none.
    func media(_ content: JSONValue) -> (String, [Attachment]) {
        let types = [
            "m.image": MessageType.image, "m.file": MessageType.file, "m.audio": MessageType.audio,
            "m.video": MessageType.video,
        ]
        guard let msgtype = content["msgtype"]?.stringValue, let type = types[msgtype] else {
            return (MessageType.text, [])
        }
        let name = content["filename"]?.stringValue ?? content["body"]?.stringValue ?? "file"
        let url = content["url"]?.stringValue.map(downloadURL) ?? ""
        let attachment = Attachment(
            name: name, size: content.at("info", "size")?.intValue ?? 0,
            mimeType: content.at("info", "mimetype")?.stringValue ?? "application/octet-stream",
            extension: (name as NSString).pathExtension, url: url)
        return (type, [attachment])
    }

    /// An `mxc://server/id` as the homeserver's download address (authenticated media, spec 1.11).
    func downloadURL(_ mxc: String) -> String {
        guard mxc.hasPrefix("mxc://") else { return mxc }
        let path = mxc.dropFirst("mxc://".count)
        let base =
            homeserver.absoluteString.hasSuffix("/")
            ? String(homeserver.absoluteString.dropLast())
            : homeserver.absoluteString
        return base + "/_matrix/client/v1/media/download/" + path
    }

    /// A reply's text without the quoted lines older clients put before it (`> <@alice:x> hi`, then
    /// an empty line).
    static func withoutReplyFallback(_ body: String) -> String {
        guard body.hasPrefix("> ") else { return body }
        var lines = body.split(separator: "\n", omittingEmptySubsequences: false)[...]
        while let first = lines.first, first.hasPrefix(">") { lines = lines.dropFirst() }
        if lines.first?.isEmpty == true { lines = lines.dropFirst() }
        return lines.joined(separator: "\n")
    }
}
