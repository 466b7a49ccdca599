import Foundation
import PerchChat
import PerchConfig
import PerchService

/// Posts every routed notification to one webhook (`notifications.webhooks`), from the outbox as a
/// durable queue: the webhook keeps its own cursor there, moved past a batch once each of its rows
/// is delivered or given up on (a dead letter), in one transaction with those dead letters. A host
/// that stops or crashes mid-batch posts the batch's rows again when it starts (at least once: the
/// `Idempotency-Key` lets a receiver drop a repeat). A webhook that never ran starts at the newest
/// row: it gets what is routed from then on, not the outbox's history.
///
/// Each row is tried until the receiver answers 2xx. No answer, a 5xx, 408, 425 or 429 is the
/// receiver away or busy: tried again after a pause that doubles from `firstPause` up to
/// `maxBackoffSeconds`, `maxAttempts` tries in all. Any other answer (a 3xx or 4xx) is the receiver
/// refusing this post: tried three times at most. Then the row is a dead letter: stored
/// (``ChatService/deadLetters(of:limit:)``), logged and counted.
public final class WebhookDelivery: Sendable {
    public let webhook: NotificationWebhook
    let service: ChatService
    let client: any PluginHTTPClient
    let logger: HostLogger
    let metrics: HostMetrics
    let firstPause: Duration
    /// Rows read and posted at once.
    let batchSize: Int
    let url: URL?
    let events: Set<NotificationReason>

    /// The queue's name in the store.
    public var consumer: String { Self.consumer(of: webhook.name) }

    /// The store's name of the queue of the webhook named `name`.
    static func consumer(of name: String) -> String { "webhook:" + name }

    public init(
        webhook: NotificationWebhook, service: ChatService, client: any PluginHTTPClient, logger: HostLogger,
        metrics: HostMetrics, firstPause: Duration = .seconds(1), batchSize: Int = 64
    ) {
        self.webhook = webhook
        self.service = service
        self.client = client
        self.logger = logger.with(["webhook": webhook.name])
        self.metrics = metrics
        self.firstPause = firstPause
        self.batchSize = batchSize
        url = URL(string: webhook.url)
        events = Set(webhook.events)
    }

    /// Delivers until the task is cancelled or the store closes.
    public func run() async {
        guard url != nil else { return }
        do {
            var cursor = try await startingCursor()
            while !Task.isCancelled {
                let seen = try await service.store.latestEventSequence()
                let batch = try await service.routedNotifications(after: cursor, limit: batchSize)
                metrics.set(
                    "perch_webhook_backlog", ["webhook": webhook.name],
                    to: Double(max(0, (try await service.newestNotificationSequence()) - cursor)))
                guard let last = batch.last?.seq else {
                    // Every notification is committed with its message's event: wait for the next one.
                    await service.waitForEvents(after: seen)
                    continue
                }
                let letters = await deliver(batch.filter { events.contains($0.reason) })
                guard !Task.isCancelled else { return }
                try await service.advanceDelivery(of: consumer, to: last, deadLetters: letters)
                cursor = last
            }
        } catch {
            if !Task.isCancelled { logger.error("webhook delivery stopped: \(error)") }
        }
    }

    /// Where the queue goes on from: the stored cursor, else the newest row now (stored at once, so
    /// a restart before anything is routed still starts there).
    func startingCursor() async throws -> Int64 {
        if let stored = try await service.deliveryCursor(of: consumer) { return stored }
        let newest = try await service.newestNotificationSequence()
        try await service.advanceDelivery(of: consumer, to: newest)
        return newest
    }

    /// Posts each row (all at once; the client bounds how many are in flight), and returns the
    /// dead letters.
    func deliver(_ rows: [NotificationRecord]) async -> [DeadLetter] {
        await withTaskGroup(of: DeadLetter?.self) { group in
            for row in rows { group.addTask { await self.deliver(row) } }
            var letters: [DeadLetter] = []
            for await letter in group { if let letter { letters.append(letter) } }
            return letters.sorted { $0.record.seq < $1.record.seq }
        }
    }

    /// One row until it is delivered (nil), given up on (its dead letter), or the task is cancelled
    /// (nil: the cursor does not move past it, and it is posted again at the next start).
    func deliver(_ row: NotificationRecord) async -> DeadLetter? {
        let body = Array(Self.payload(row, webhook: webhook.name).utf8)
        var headers = [
            "Idempotency-Key": Self.idempotencyKey(row),
            WebhookSignature.header: WebhookSignature.value(secret: webhook.secret, body: body),
        ]
        var attempt = 0
        var refusals = 0
        var lastError = ""
        while !Task.isCancelled {
            attempt += 1
            headers["X-Perch-Attempt"] = String(attempt)
            let outcome: Outcome
            do throws(PluginHTTPFailure) {
                let answer = try await client.post(
                    url!, headers: headers, body: body, within: .seconds(webhook.timeoutSeconds))
                outcome = Self.outcome(of: answer.status)
                lastError = "HTTP \(answer.status)"
            } catch {
                switch error {
                case .cancelled: return nil
                case .timedOut: lastError = "no answer within \(webhook.timeoutSeconds) s"
                case .unreachable(let reason): lastError = "cannot reach \(webhook.name): \(reason)"
                }
                outcome = .away
            }
            if outcome == .delivered {
                metrics.increment("perch_webhook_posts_total", ["webhook": webhook.name, "outcome": "delivered"])
                if attempt > 1 { logger.info("delivered notification \(row.seq) after \(attempt) tries") }
                return nil
            }
            metrics.increment("perch_webhook_posts_total", ["webhook": webhook.name, "outcome": "failed"])
            if outcome == .refused { refusals += 1 }
            if attempt >= webhook.maxAttempts || refusals >= Self.refusalTries {
                metrics.increment("perch_webhook_dead_letters_total", ["webhook": webhook.name])
                logger.error(
                    "gave up on notification \(row.seq) for \(row.uid) after \(attempt) tries: \(lastError)",
                    ["seq": String(row.seq), "attempts": String(attempt)])
                var record = row
                record.message = nil
                return DeadLetter(
                    consumer: consumer, record: record, attempts: attempt, lastError: lastError,
                    at: service.clock.now())
            }
            if attempt == 1 { logger.warning("cannot deliver notification \(row.seq): \(lastError); trying again") }
            do {
                try await Task.sleep(for: pause(after: attempt))
            } catch {
                return nil
            }
        }
        return nil
    }

    enum Outcome { case delivered, away, refused }

    /// Tries of a post the receiver refuses (a 3xx or 4xx that is not "later").
    static let refusalTries = 3

    static func outcome(of status: Int) -> Outcome {
        if (200..<300).contains(status) { return .delivered }
        if status >= 500 || [408, 425, 429].contains(status) || status < 100 { return .away }
        return .refused
    }

    /// The pause after the `attempt`th failed try: `firstPause` doubled each time, at most
    /// `maxBackoffSeconds`.
    func pause(after attempt: Int) -> Duration {
        let ceiling = Duration.seconds(webhook.maxBackoffSeconds)
        let doubled = firstPause * Int(1 << min(attempt - 1, 30))
        return min(doubled, ceiling)
    }

    /// The key a receiver drops repeats by: the notification's, the same at every try and after a
    /// restart.
    static func idempotencyKey(_ row: NotificationRecord) -> String { "perch-notification-\(row.seq)" }

    /// What is posted: `{"id", "type": "notification", "webhook", "notification": {...}}`, the
    /// notification as `GET /v3/notifications` shows it (its message as stored, without any
    /// viewer's fields).
    static func payload(_ row: NotificationRecord, webhook: String) -> String {
        var writer = JSONWriter()
        writer.raw(#"{"id":"#)
        writer.string(idempotencyKey(row))
        writer.raw(#","type":"notification","webhook":"#)
        writer.string(webhook)
        writer.raw(#","notification":\#(row.json)}"#)
        return writer.output
    }
}
