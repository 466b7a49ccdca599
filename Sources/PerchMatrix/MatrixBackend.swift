import Foundation
import PerchChat
import PerchConfig
import PerchHost
import PerchLock
import PerchService

/// The Matrix backend: the bots live in a homeserver's rooms (docs/matrix.md).
///
/// The embedded store is the homeserver's mirror. At start (``prepare(_:service:logger:)``) each
/// bot's account is checked (`whoami`), each mapped room resolved and joined, and its state (name,
/// members and their power, pins) recorded without events. Then (``start(host:service:)``) each
/// account syncs (``SyncLoop``), recording what happens as it happened there, so the bots' rules,
/// plugins and cursors work as on the embedded service; each bot's actions are carried out on the
/// homeserver by its ``Relay``; the replies to followed threads reach their followers
/// (``FollowDigests``); and a bot's own thread subscriptions are made with MSC4306.
public final class MatrixBackend: ChatBackend {
    /// The connector's name in the store (its id map, its values).
    public static let connector = "matrix"

    let configuration: MatrixConfiguration
    let homeserver: URL
    let directory = RoomDirectory()
    let health = AccountHealth()
    private let accounts = Lock<[String: MatrixAccount]>([:])
    let tasks = Lock<[Task<Void, Never>]>([])
    /// The bot whose direct messages bring followed threads' replies (``FollowDigests``), and every
    /// bot's uid.
    let followers = Lock<(bot: String?, bots: Set<String>)>((nil, []))

    /// - Throws: ``HostError`` when `matrix.homeserver` is not a URL (`perch check` says so first).
    public init(configuration: MatrixConfiguration) throws {
        guard let url = URL(string: configuration.homeserver), url.host != nil else {
            throw HostError("matrix.homeserver '\(configuration.homeserver)' is not a URL")
        }
        self.configuration = configuration
        homeserver = url
    }

    /// The plugin whose bot delivers the followed threads' replies.
    public static let followPlugin = "thread-follow"

    public var name: String { "matrix" }
    public var ownsMemberships: Bool { true }

    var allAccounts: [String: MatrixAccount] { accounts.withLock { $0 } }

    public func prepare(_ loaded: LoadedConfiguration, service: ChatService, logger: HostLogger) async throws {
        try await signIn(logger: logger)
        let accounts = allAccounts
        for guid in configuration.rooms.keys.sorted() {
            let reference = configuration.rooms[guid]!
            let room = try await resolve(reference, with: accounts.values.sorted { $0.uid < $1.uid }, logger: logger)
            directory.map(room, to: guid)
        }
        try await joinRooms(loaded, logger: logger)
        let bots = loaded.bots.map(\.bot).sorted { $0.name < $1.name }
        let follow = bots.first { bot in
            accounts[bot.user.uid] != nil && bot.plugins.contains { $0.name == Self.followPlugin }
        }
        followers.withLock { $0 = (follow?.user.uid, Set(bots.map(\.user.uid))) }
        try await mirrorRooms(service: service, logger: logger)
        for account in accounts.values {
            for person in try await service.connectorValue("directs:\(account.uid)", connector: Self.connector)?
                .split(separator: "\n").map(String.init) ?? []
            {
                if let room = try await service.connectorValue(
                    "direct:\(account.uid)\u{1F}\(person)", connector: Self.connector)
                {
                    directory.mapDirect(room, bot: account.uid, person: person)
                }
            }
        }
    }

    /// Asks each account who it is (`whoami`). An unreachable homeserver is waited for; a token
    /// the homeserver does not know stops the start.
    func signIn(logger: HostLogger) async throws {
        for uid in configuration.accounts.keys.sorted() where accounts.withLock({ $0[uid] == nil }) {
            let client = MatrixClient(homeserver: homeserver, token: configuration.accounts[uid]!)
            var failures = 0
            while true {
                do {
                    let id = try await client.whoami()
                    accounts.withLock { $0[uid] = MatrixAccount(uid: uid, matrixID: id, client: client) }
                    logger.info("matrix account ready", ["bot": uid, "matrixId": id])
                    break
                } catch {
                    guard error.isTransient, !Task.isCancelled else {
                        throw HostError("the Matrix account of bot \(uid) cannot sign in: \(error)")
                    }
                    failures += 1
                    if failures == 1 || failures % 10 == 0 {
                        logger.warning("matrix: waiting for the homeserver (\(error))", ["bot": uid])
                    }
                    try await Task.sleep(for: backoff(after: failures, asked: error.retryAfter))
                }
            }
        }
    }

    /// A room's id: as written, or the alias resolved.
    func resolve(_ reference: String, with accounts: [MatrixAccount], logger: HostLogger) async throws -> String {
        guard reference.hasPrefix("#"), let account = accounts.first else { return reference }
        do {
            return try await account.client.resolve(alias: reference)
        } catch {
            throw HostError("matrix: the room alias \(reference) does not resolve: \(error)")
        }
    }
}
