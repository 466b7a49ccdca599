import PerchChat

/// Something that happened on another chat server (Matrix), to be recorded in the embedded store
/// as it happened there: ``ChatService/mirror(_:connector:announcing:)`` applies it with the same
/// effects as the embedded operation (events, thread subscriptions, notifications), without that
/// operation's permission checks: the server already decided.
///
/// Messages and reactions are named by the server's ids; the store keeps which local message each
/// stands for (``ChatService/localMessage(external:connector:)``), so a fact about one the store
/// has never seen is skipped.
public enum MirroredFact: Sendable, Hashable {
    /// A person or an account with their display name: created, or renamed.
    case user(uid: String, name: String)
    /// A room as a group: created when new, renamed (and its type kept up to date) after.
    case group(guid: String, name: String, type: GroupType, owner: String)
    /// A membership as the server has it now, changed `by` someone (themselves for a join).
    case membership(guid: String, uid: String, state: MembershipState, by: String)
    /// A group's members as the server has them now, with their scopes: those the store has and
    /// the server not have left; the others are made members (or their scope changed).
    case memberList(guid: String, members: [String: GroupMemberScope])
    case message(MirroredMessage)
    /// The message `of` now has `text` (an edit by `by`), mentioning `mentions`.
    case edit(of: String, text: String, mentions: [String], by: String)
    /// The message `of` was removed by `by` (a redaction).
    case delete(of: String, by: String)
    /// `by` reacted to the message `on` with `reaction`; `id` is the reaction's own server id.
    case reaction(id: String, on: String, reaction: String, by: String)
    /// The reaction `id` was taken back (its redaction).
    case reactionRemoved(id: String, by: String)
    /// The group's pinned messages are now `pinned` (server ids, other ones not known here are
    /// left out), as changed by `by`.
    case pins(guid: String, pinned: [String], by: String)
    /// The server's message `external` is the local message `local` (a relay sent it there, and
    /// the server now shows it back): the two are mapped, and nothing new is recorded.
    case sameAs(external: String, local: Int64)
    /// A value the connector keeps with the facts, committed with them (its sync position).
    case connectorValue(key: String, value: String?)
}

/// A membership as a server has it.
public enum MembershipState: Sendable, Hashable {
    case member(GroupMemberScope)
    case left
    case kicked
    case banned
    case unbanned
}

/// A message as another server has it.
public struct MirroredMessage: Sendable, Hashable {
    /// The server's id of the message.
    public var id: String
    public var sender: String
    /// Its conversation: a group, or, one-on-one, the other person from the sender's side.
    public var receiver: Receiver
    public var type: String
    public var text: String?
    public var attachments: [Attachment]
    /// Who it mentions (those who can read the conversation are kept).
    public var mentions: [String]
    /// The server id of its thread's root, when it is a thread reply.
    public var threadRoot: String?
    /// The server id of the message it quotes (a reply to it).
    public var quoted: String?
    /// When the server says it was sent, epoch seconds.
    public var sentAt: Int64
    /// Recorded without an event: the message is from before the bots could see it (a room's
    /// history, a thread's root fetched to place a reply), and nothing acts on it.
    public var history: Bool

    public init(
        id: String, sender: String, receiver: Receiver, type: String = MessageType.text, text: String?,
        attachments: [Attachment] = [], mentions: [String] = [], threadRoot: String? = nil, quoted: String? = nil,
        sentAt: Int64, history: Bool = false
    ) {
        self.id = id
        self.sender = sender
        self.receiver = receiver
        self.type = type
        self.text = text
        self.attachments = attachments
        self.mentions = mentions
        self.threadRoot = threadRoot
        self.quoted = quoted
        self.sentAt = sentAt
        self.history = history
    }
}
