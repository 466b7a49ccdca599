import PerchChat
import PerchHost
import PerchService

/// The backend once the bots run: a sync per account, a relay per bot, the followed threads'
/// digests, the bots' own thread subscriptions.
extension MatrixBackend {
    public func start(host: BotHost, service: ChatService) async throws {
        let accounts = allAccounts
        let logger = host.options.logger
        let translation = translation()
        let botAccounts = Set(accounts.values.map(\.matrixID))
        let matrixIDs = Dictionary(uniqueKeysWithValues: accounts.values.map { ($0.uid, $0.matrixID) })
        let latest = try await service.store.latestEventSequence()
        var started: [Task<Void, Never>] = []
        let relayed = RelayedEvents()
        for account in accounts.values.sorted(by: { $0.uid < $1.uid }) {
            health.starting(account.uid)
            let sync = SyncLoop(
                account: account, directory: directory, translation: translation, service: service, health: health,
                logger: logger, metrics: host.metrics, timeout: .seconds(configuration.syncTimeoutSeconds),
                botAccounts: botAccounts, mappedRooms: Set(configuration.rooms.values), relayed: relayed)
            started.append(Task { await sync.run() })
            let relay = Relay(
                account: account, directory: directory, service: service, logger: logger, metrics: host.metrics,
                matrixIDs: matrixIDs, relayed: relayed)
            // A relay new to this database starts at the present, as a bot does.
            if try await service.cursor(consumer: relay.session) == 0 {
                try await service.acknowledge(consumer: relay.session, seq: latest)
            }
            started.append(Task { await relay.run() })
        }
        let (follow, bots) = followers.withLock { $0 }
        if let follow {
            let digests = FollowDigests(
                bot: follow, bots: bots, window: .seconds(configuration.followDigestSeconds), directory: directory,
                service: service, logger: logger, metrics: host.metrics)
            if try await service.cursor(consumer: digests.session) == 0 {
                try await service.acknowledge(consumer: digests.session, seq: latest)
            }
            started.append(Task { await digests.run() })
            logger.info("matrix: followed threads' replies come from bot \(follow)", ["bot": follow])
        }
        host.bus.register(id: "matrix:thread-subscriptions") { [directory] event in
            guard case .threadSubscriptionChanged(let root, let uid, let subscribed) = event,
                let account = accounts[uid]
            else { return }
            do {
                guard let message = try await service.storedMessage(root),
                    message.receiverType == .group, let room = directory.room(ofGroup: message.receiverUid),
                    let external = try await service.externalId(ofMessage: root, connector: Self.connector)
                else { return }
                try await account.client.setThreadSubscription(subscribed, root: external, in: room)
            } catch {
                logger.warning("matrix: bot \(uid)'s own thread subscription was not made: \(error)", ["bot": uid])
            }
        }
        tasks.withLock { $0 += started }
    }

    public func stop() async {
        let running = tasks.withLock { tasks in
            defer { tasks = [] }
            return tasks
        }
        for task in running { task.cancel() }
        for task in running { await task.value }
    }

    public func notReadyReason() async -> String? { health.notReady }
}
