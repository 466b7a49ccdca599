import PerchChat
import PerchConfig
import PerchService

/// The chat server the bots live on, as the host sees it: the embedded service
/// (``EmbeddedBackend``) or a connector to another server, which keeps the embedded store as the
/// server's mirror (docs/matrix.md). Either way the bots read their events from the embedded
/// store and act through its ``ChatService``: a connector records what happens on the server there
/// (``ChatService/mirror(_:connector:announcing:)``) and carries out there what the bots do.
public protocol ChatBackend: Sendable {
    /// The backend's name, as config.yaml's `backend` writes it.
    var name: String { get }
    /// Whether the server keeps the groups and their members: the host then makes no membership
    /// from the bot files' `groups` (which say what the bots need there).
    var ownsMemberships: Bool { get }
    /// Called when the store is open, before the bots are installed, and at every reload: brings
    /// the store up to date with what the bots will need (the seed; the server's rooms, people and
    /// memberships).
    /// - Throws: what stops the host from starting (a server that cannot be reached at start).
    func prepare(_ loaded: LoadedConfiguration, service: ChatService, logger: HostLogger) async throws
    /// Called once the bots run: starts following the server. Returns at once.
    func start(host: BotHost, service: ChatService) async throws
    /// Stops following the server; returns once nothing of the backend runs. Called after the
    /// bots stop and before the store closes.
    func stop() async
    /// Why the backend is not ready, or nil when it is (`/readyz`).
    func notReadyReason() async -> String?
}

/// Perch's own chat service: the seed of config.yaml is its people and groups, and the bot files'
/// `groups` make the bots members there.
public struct EmbeddedBackend: ChatBackend {
    public init() {}

    public var name: String { "embedded" }
    public var ownsMemberships: Bool { false }

    /// Creates the seed's users and groups when absent, and applies a seeded membership when the
    /// seed names it for the first time or with a new scope (a leave or kick since is kept).
    public func prepare(_ loaded: LoadedConfiguration, service: ChatService, logger: HostLogger) async throws {
        guard let config = loaded.config else { return }
        for user in config.seed.users {
            _ = try await service.ensureUser(uid: user.uid, name: user.name, role: user.role ?? User.defaultRole)
        }
        for group in config.seed.groups {
            _ = try await service.ensureGroup(
                guid: group.guid, name: group.name, type: group.type ?? .public, owner: group.owner)
            for member in group.members ?? [] {
                try await service.ensureSeededMember(
                    guid: group.guid, uid: member.uid, scope: member.scope ?? .participant)
            }
        }
        logger.info(
            "seed applied", ["users": String(config.seed.users.count), "groups": String(config.seed.groups.count)])
    }

    public func start(host: BotHost, service: ChatService) async throws {}
    public func stop() async {}
    public func notReadyReason() async -> String? { nil }
}
