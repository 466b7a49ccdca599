import PerchService

/// Hands every routed notification to the plugins whose bot file entry says `notifications: true`
/// (``BotPlugin/onNotification(_:bot:)``), in routing order, from the outbox as a durable queue:
/// one place for all of them (`plugins`), moved past a batch once every listening plugin had it.
/// The plugins listening are the running bots' at each batch, so a reload adds and removes them.
/// While none listens, the feed reads nothing and looks again every second (no work on the
/// sends' path); its place is then stored as "nobody listens" (-1), so a plugin that listens
/// later, or at a later start, begins at the newest notification, as a new webhook does.
struct PluginNotificationFeed: Sendable {
    static let consumer = "plugins"

    let roster: BotRoster
    let service: ChatService
    let logger: HostLogger
    let metrics: HostMetrics
    var batchSize = 256

    /// The running plugins that listen, with their bots.
    var listeners: [(bot: BotIdentity, name: String, plugin: any BotPlugin)] {
        roster.all.values.sorted { $0.bot.identity.name < $1.bot.identity.name }.flatMap { runtime in
            runtime.bot.configuration.plugins.filter(\.notifications).compactMap { reference in
                runtime.bot.plugins[reference.name].map { (runtime.bot.identity, reference.name, $0) }
            }
        }
    }

    /// Runs until the task is cancelled or the store closes.
    func run() async {
        do {
            let stored = try await service.deliveryCursor(of: Self.consumer)
            var cursor = stored.flatMap { $0 < 0 ? nil : $0 }
            var storedAsIdle = stored == Self.nobodyListens
            while !Task.isCancelled {
                let listening = listeners
                guard !listening.isEmpty else {
                    if !storedAsIdle {
                        try await service.advanceDelivery(of: Self.consumer, to: Self.nobodyListens)
                        storedAsIdle = true
                        cursor = nil
                    }
                    try? await Task.sleep(for: .seconds(1))
                    continue
                }
                storedAsIdle = false
                let seen = try await service.store.latestEventSequence()
                guard let after = cursor else {
                    let newest = try await service.newestNotificationSequence()
                    try await service.advanceDelivery(of: Self.consumer, to: newest)
                    cursor = newest
                    continue
                }
                let batch = try await service.routedNotifications(after: after, limit: batchSize)
                guard let last = batch.last?.seq else {
                    await service.waitForEvents(after: seen)
                    continue
                }
                for record in batch {
                    for listener in listening {
                        guard !Task.isCancelled else { return }
                        do {
                            try await listener.plugin.onNotification(record, bot: listener.bot)
                        } catch {
                            if Task.isCancelled { return }
                            metrics.increment("perch_handler_errors_total", ["bot": listener.bot.name])
                            logger.error(
                                "plugin \(listener.name) failed on notification \(record.seq): \(error)",
                                ["bot": listener.bot.name])
                        }
                    }
                }
                try await service.advanceDelivery(of: Self.consumer, to: last)
                cursor = last
            }
        } catch {
            if !Task.isCancelled { logger.error("the plugins' notification feed stopped: \(error)") }
        }
    }

    /// The place stored while no plugin listens.
    static let nobodyListens: Int64 = -1
}
