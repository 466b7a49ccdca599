import Foundation
import PerchChat
import PerchConfig
import PerchHTTP
import PerchHTTPClient
import PerchHost
import PerchLock
import PerchService
import PerchTestSupport
import Testing

/// Notifications posted to a webhook on loopback, over libcurl: signed, once per try with one
/// idempotency key, retried while the receiver is away, dead letters after the last try, and a
/// queue that survives a restart.
@Suite struct WebhookDeliveryTests {
    static let secret = "0123456789abcdef-secret"

    /// A receiver that answers each post with what `answer` says for the post's number (from 1).
    final class Receiver: Sendable {
        let posts = Lock<[HTTPRequest]>([])
        let server: HTTPServer

        init(answer: @escaping @Sendable (Int) -> Int = { _ in 200 }) throws {
            let posts = self.posts
            server = try HTTPServer(host: "127.0.0.1", port: 0, maximumBodyBytes: 1 << 20) { request in
                let number = posts.withLock { posts -> Int in
                    posts.append(request)
                    return posts.count
                }
                return .json(answer(number), "{}")
            }
        }

        var url: String { "http://127.0.0.1:\(server.port)/perch" }

        /// The notifications delivered (answered 2xx), each once, by message text.
        func bodies() -> [[String: Any]] {
            posts.withLock { $0 }.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any]
            }
        }

        func stop() async { await onThread { [server] in server.stop() } }
    }

    func delivery(
        _ chat: ChatFixture, to url: String, events: [NotificationReason] = NotificationReason.allCases,
        maxAttempts: Int = 30, logger: HostLogger = HostLogger(keepInMemory: true, sink: { _ in }),
        metrics: HostMetrics = HostMetrics()
    ) -> WebhookDelivery {
        WebhookDelivery(
            webhook: NotificationWebhook(
                url: url, secret: Self.secret, events: events, name: "pager", maxAttempts: maxAttempts,
                maxBackoffSeconds: 1),
            service: chat.service, client: CurlPostClient(lanes: 4, name: "test-webhook"), logger: logger,
            metrics: metrics, firstPause: .milliseconds(5))
    }

    /// Waits until `condition` holds (at most 10 s).
    func eventually(_ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while await !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
    }

    @Test func eachNotificationIsPostedSignedWithItsKeyAndOnlyTheReasonsAsked() async throws {
        let receiver = try Receiver()
        try await withChat { chat in
            _ = try await chat.say("before the webhook <@uid:bob>", as: "dave")
            let delivery = delivery(chat, to: receiver.url, events: [.mention])
            let running = Task { await delivery.run() }
            try await eventually { (try? await chat.service.deliveryCursor(of: "webhook:pager")) != nil }
            try await Task.sleep(for: .milliseconds(50))
            let plain = try await chat.say("to everyone", as: "dave")
            let mention = try await chat.say("hi <@uid:bob>", as: "dave")
            try await eventually { receiver.posts.withLock { $0.count } >= 1 }
            let routed = try await chat.service.newestNotificationSequence()
            try await eventually { (try? await chat.service.deliveryCursor(of: "webhook:pager")) == routed }
            running.cancel()
            await running.value

            // Only bob's mention: not the group's plain message, not what came before the webhook.
            let posts = receiver.posts.withLock { $0 }
            #expect(posts.count == 1)
            let post = try #require(posts.first)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(post.body)) as? [String: Any])
            let notification = try #require(body["notification"] as? [String: Any])
            #expect(notification["uid"] as? String == "bob" && notification["reason"] as? String == "mention")
            #expect((notification["message"] as? [String: Any])?["id"] as? Int == Int(mention.id))
            #expect(body["type"] as? String == "notification" && body["webhook"] as? String == "pager")
            #expect(post.header("idempotency-key") == "perch-notification-\(notification["seq"] as? Int ?? 0)")
            #expect(body["id"] as? String == post.header("idempotency-key"))
            #expect(post.header("x-hub-signature-256") == WebhookSignature.value(secret: Self.secret, body: post.body))
            #expect(post.header("content-type") == "application/json" && post.header("x-perch-attempt") == "1")
            _ = plain
            let newest = try await chat.service.newestNotificationSequence()
            #expect(try await chat.service.deliveryCursor(of: "webhook:pager") == newest)
        }
        await receiver.stop()
    }

    /// A receiver that answers 503 (or is not there at all) for a while loses nothing: every
    /// notification is posted until it is taken, and the queue only moves past taken ones.
    @Test func aReceiverAwayForAWhileLosesNothing() async throws {
        let receiver = try Receiver(answer: { $0 <= 12 ? 503 : 200 })
        try await withChat { chat in
            let metrics = HostMetrics()
            let delivery = delivery(chat, to: receiver.url, metrics: metrics)
            let running = Task { await delivery.run() }
            try await eventually { (try? await chat.service.deliveryCursor(of: "webhook:pager")) != nil }
            let routed = try await chat.service.newestNotificationSequence()
            for index in 0..<3 { _ = try await chat.say("m\(index)", as: "dave") }
            let expected = try await chat.service.routedNotifications(after: routed).map(\.seq)
            #expect(expected.count == 9)
            try await eventually {
                Set(receiver.bodies().compactMap { ($0["notification"] as? [String: Any])?["seq"] as? Int }).count == 9
                    && receiver.posts.withLock { $0.count } >= 21
            }
            try await eventually {
                metrics.value("perch_webhook_posts_total", ["webhook": "pager", "outcome": "delivered"]) == 9
            }
            // The queue moves past the batch once each row of it is delivered.
            try await eventually { (try? await chat.service.deliveryCursor(of: "webhook:pager")) == expected.last }
            running.cancel()
            await running.value
            let answered = receiver.posts.withLock { $0 }.dropFirst(12)
            let delivered = answered.compactMap { post in
                (try? JSONSerialization.jsonObject(with: Data(post.body)) as? [String: Any])
                    .flatMap { $0["notification"] as? [String: Any] }?["seq"] as? Int
            }
            #expect(Set(delivered) == Set(expected.map(Int.init)))
            #expect(metrics.value("perch_webhook_posts_total", ["webhook": "pager", "outcome": "failed"]) == 12)
            #expect(metrics.value("perch_webhook_dead_letters_total", ["webhook": "pager"]) == 0)
            #expect(try await chat.service.deliveryCursor(of: "webhook:pager") == expected.last)
            #expect(try await chat.service.deadLetters().isEmpty)
        }
        await receiver.stop()
    }

    @Test func aNotificationIsADeadLetterAfterItsLastTry() async throws {
        let away = try Receiver(answer: { _ in 500 })
        let refusing = try Receiver(answer: { _ in 400 })
        try await withChat { chat in
            let logger = HostLogger(keepInMemory: true, sink: { _ in })
            let metrics = HostMetrics()
            let deliveries = [
                delivery(chat, to: away.url, events: [.mention], maxAttempts: 4, logger: logger, metrics: metrics),
                WebhookDelivery(
                    webhook: NotificationWebhook(
                        url: refusing.url, secret: Self.secret, events: [.mention], name: "strict", maxAttempts: 30,
                        maxBackoffSeconds: 1),
                    service: chat.service, client: CurlPostClient(lanes: 2, name: "test-webhook"), logger: logger,
                    metrics: metrics, firstPause: .milliseconds(5)),
            ]
            let running = deliveries.map { delivery in Task { await delivery.run() } }
            try await eventually { (try? await chat.service.deliveryCursor(of: "webhook:strict")) != nil }
            try await eventually { (try? await chat.service.deliveryCursor(of: "webhook:pager")) != nil }
            _ = try await chat.say("hi <@uid:bob>", as: "dave")
            try await eventually { metrics.value("perch_webhook_dead_letters_total", ["webhook": "strict"]) == 1 }
            try await eventually { metrics.value("perch_webhook_dead_letters_total", ["webhook": "pager"]) == 1 }
            let routed = try await chat.service.newestNotificationSequence()
            for name in ["webhook:pager", "webhook:strict"] {
                try await eventually { (try? await chat.service.deliveryCursor(of: name)) == routed }
            }
            for task in running { task.cancel() }
            for task in running { await task.value }
            // Away: every one of its 4 tries; refusing: 3 tries, whatever maxAttempts says.
            #expect(away.posts.withLock { $0.count } == 4)
            #expect(refusing.posts.withLock { $0.count } == 3)
            let letters = try await chat.service.deadLetters()
            #expect(Set(letters.map(\.consumer)) == ["webhook:pager", "webhook:strict"])
            let pager = try #require(letters.first { $0.consumer == "webhook:pager" })
            #expect(pager.attempts == 4 && pager.lastError == "HTTP 500" && pager.record.uid == "bob")
            #expect(letters.first { $0.consumer == "webhook:strict" }?.lastError == "HTTP 400")
            #expect(logger.records.contains { $0.contains("gave up on notification \(pager.record.seq)") })
            // Both queues moved past it: nothing holds up what comes next.
            let newest = try await chat.service.newestNotificationSequence()
            #expect(try await chat.service.deliveryCursor(of: "webhook:pager") == newest)
        }
        await away.stop()
        await refusing.stop()
    }

    /// A queue goes on where it stopped: what was routed while the host was down is posted at the
    /// next start.
    @Test func theQueueGoesOnAfterARestart() async throws {
        let receiver = try Receiver()
        try await withChat { chat in
            var running = Task { [delivery = delivery(chat, to: receiver.url)] in await delivery.run() }
            try await eventually { (try? await chat.service.deliveryCursor(of: "webhook:pager")) != nil }
            running.cancel()
            await running.value
            _ = try await chat.say("while down <@uid:bob>", as: "dave")
            #expect(receiver.posts.withLock { $0.isEmpty })
            running = Task { [delivery = delivery(chat, to: receiver.url)] in await delivery.run() }
            try await eventually { receiver.posts.withLock { $0.count } == 3 }
            running.cancel()
            await running.value
            let uids = receiver.bodies().compactMap { ($0["notification"] as? [String: Any])?["uid"] as? String }
            #expect(Set(uids) == ["alice", "bob", "carol"])
        }
        await receiver.stop()
    }
}
