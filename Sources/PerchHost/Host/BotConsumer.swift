import PerchChat
import PerchService

/// One bot's consumer: reads the events its user may see from the bot's durable cursor
/// (`bot:<name>`), a page at a time, and hands each to the bot as the roster holds it then.
///
/// Events of one conversation are handled in order, different conversations at once (one lane
/// each). The bot's replies are queued (``QueuedSends``), and the cursor is saved only past events
/// whose sends are committed: after a crash the events since the saved cursor are handled again,
/// and since sends carry deterministic muids and the other actions are idempotent, nothing
/// happens twice.
///
/// It runs as one task per bot, started and cancelled by ``BotHost``, on the host's executor
/// preference (``BotHost/Options/executor``); it never enters the host actor.
struct BotConsumer: Sendable {
    let name: String
    let roster: BotRoster
    let service: ChatService
    let logger: HostLogger
    let metrics: HostMetrics
    let monotonic: @Sendable () -> Double
    /// A stream failing again and again (a full disk refuses its cursor) logs a line a minute.
    let streamFailures: RepeatedWarnings

    /// How long a flowing stream may go without saving its cursor, in seconds.
    static let acknowledgeInterval = 0.05
    /// Events a bot reads at once.
    static let pageSize = 256

    /// Runs until the task is cancelled or the bot leaves the roster, then saves how far it got.
    ///
    /// The cursor is saved at most every ``acknowledgeInterval`` while events flow, and once the
    /// stream has been quiet that long (not at once: a quick back and forth would pay a commit per
    /// message on its critical path). A crash replays at most that much, and a replay changes
    /// nothing.
    func run() async {
        let consumer = BotIdentity.session(of: name)
        var cursor = (try? await service.cursor(consumer: consumer)) ?? 0
        var acknowledged = cursor
        var acknowledgedAt = monotonic()
        var movedAt = acknowledgedAt
        let sends = QueuedSends()
        while !Task.isCancelled {
            guard let bot = roster[name] else { break }
            do {
                let page = try await service.events(
                    for: bot.identity.uid, session: consumer, after: cursor, limit: Self.pageSize)
                if let missed = page.missed {
                    // Gone for longer than the retention: what it missed is not there to handle.
                    logger.warning(
                        "bot \(name) missed events \(missed.lowerBound)–\(missed.upperBound): the event log's "
                            + "retention (storage.eventRetentionDays) removed them before the bot handled them; "
                            + "it goes on from the next", ["bot": name])
                    metrics.increment("perch_bot_missed_events_total", ["bot": name], by: Double(missed.count))
                }
                if !page.events.isEmpty {
                    await handle(page.events, queueingInto: sends)
                    await sends.pageHandled()
                }
                let next = page.scannedThrough
                if next > cursor {
                    cursor = next
                    movedAt = monotonic()
                    if monotonic() - acknowledgedAt >= Self.acknowledgeInterval {
                        try await sends.acknowledge(cursor, as: consumer, in: service)
                        (acknowledged, acknowledgedAt) = (cursor, monotonic())
                    }
                    // A full page: more is waiting. A short one held everything committed when it
                    // was read, and the wait below returns at once if more came since.
                    if page.isFull { continue }
                }
                // Quiet for a while: save the cursor, off the path of a conversation going back and
                // forth. While it is unsaved the store's poll tick ends the wait too, so the next
                // wake-up is at most the poll interval away. Either way the bot sleeps through other
                // rooms' events and its own messages (it never hears those: ``BotRuntime/hears(_:)``).
                if acknowledged < cursor, monotonic() - movedAt >= Self.acknowledgeInterval {
                    try await sends.acknowledge(cursor, as: consumer, in: service)
                    (acknowledged, acknowledgedAt) = (cursor, monotonic())
                    continue
                }
                await service.waitForEvents(
                    after: cursor, for: bot.identity.uid, session: consumer, ignoringOwnMessages: true,
                    endingAtTick: acknowledged < cursor)
            } catch {
                guard !Task.isCancelled else { break }
                // The loop's calls throw ChatError only: its code names the kind of failure.
                let kind = "\(name) \(error.code.rawValue)"
                if let more = streamFailures.suffix(kind, at: monotonic()) {
                    logger.error("bot \(name) stream failed: \(error); retrying\(more)", ["bot": name])
                }
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        // Stopping or removed: save how far this bot got (the store closes after the consumers).
        await sends.settle()
        if acknowledged < cursor { try? await service.acknowledge(consumer: consumer, seq: cursor) }
    }

    /// Handles a page: conversations in parallel, each in order. The bot is read from the roster
    /// per event, so a reload takes effect between events. Returns once every event is handled;
    /// the sends it queued may still be committing.
    func handle(_ events: [ChatEvent], queueingInto sends: QueuedSends) async {
        @Sendable func run(_ lane: [ChatEvent]) async {
            for (index, event) in lane.enumerated() {
                guard let bot = roster[name] else { break }
                await bot.handle(event, queueingInto: sends, callerGoesOn: index < lane.count - 1)
            }
        }
        // One conversation (the common case of a live stream) runs here, without a child task and
        // without sorting the page into lanes.
        guard let first = events.first?.conversationId else { return }
        if events.allSatisfy({ $0.conversationId == first }) { return await run(events) }
        var lanes: [String: [ChatEvent]] = [:]
        var order: [String] = []
        for event in events {
            if lanes[event.conversationId] == nil { order.append(event.conversationId) }
            lanes[event.conversationId, default: []].append(event)
        }
        await withTaskGroup(of: Void.self) { group in
            for conversation in order {
                let lane = lanes[conversation]!
                group.addTask { await run(lane) }
            }
        }
    }
}
