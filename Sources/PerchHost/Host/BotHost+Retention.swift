import PerchService

extension BotHost {
    /// How often the event log's retention runs, in seconds: each pass also writes the mark that
    /// dates the events committed since the last one, so an event goes at most this much after it
    /// is `storage.eventRetentionDays` old.
    static let retentionInterval: Int64 = 600

    /// Runs the retention now and then every ``retentionInterval`` until the host stops.
    func startRetention() {
        retention = Task { [weak self] in
            while !Task.isCancelled {
                await self?.runRetention()
                try? await Task.sleep(for: .seconds(Self.retentionInterval))
            }
        }
    }

    /// One pass of the event log's retention with the configuration's `storage.eventRetentionDays`
    /// (read at every pass, so a reload changes it; 0 prunes nothing and writes no mark). Returns
    /// what it removed; a failure is logged, and the next pass tries again.
    @discardableResult
    public func runRetention() async -> LogPruning {
        guard let service, let days = configuration.config?.storage.eventRetentionDays, days > 0 else {
            return LogPruning()
        }
        do {
            // A running bot may sleep through other rooms' events for longer than the retention
            // without saving its cursor; it is here, so it holds the log back. So do the webhooks
            // configured now and the plugins' feed, in the outbox, a long stop of the host included.
            let webhooks = configuration.config?.notifications.webhooks.map { WebhookDelivery.consumer(of: $0.name) }
            try await service.keepCursors(
                consumers.keys.sorted().map(BotIdentity.session(of:)),
                deliveries: (webhooks ?? []) + [PluginNotificationFeed.consumer])
            let pruned = try await service.pruneEventLog(olderThan: Int64(days) * 86_400)
            metrics.increment("perch_events_pruned_total", by: Double(pruned.events))
            metrics.increment("perch_notifications_pruned_total", by: Double(pruned.outbox))
            if pruned.events + pruned.outbox > 0 {
                logger.info(
                    "event log pruned",
                    ["events": String(pruned.events), "notifications": String(pruned.outbox), "days": String(days)])
            }
            return pruned
        } catch {
            // ERR_SERVICE_UNAVAILABLE while stopping is no failure; anything else already logged
            // its detail with the id.
            if error.code != .serviceUnavailable { logger.warning("the event log's retention failed: \(error)") }
            return LogPruning()
        }
    }
}
