import Foundation
import PerchChat
import PerchConfig
import PerchHTTP
import PerchHTTPClient
import PerchHost
import PerchLock
import PerchService

/// The webhook queue draining: 10,000 routed notifications (50 messages in a 201-member group)
/// posted to a receiver on loopback that answers 200 at once, over the shipped client (8 libcurl
/// lanes, kept alive), signed, each row's cursor stored by batch. Posts a second, from the first
/// post to the last answer.
func benchmarkWebhooks() async throws {
    let chat = try BenchChat()
    let service = chat.service
    _ = try await service.createUser(uid: "owner", name: "Owner")
    _ = try await service.createGroup(guid: "team", name: "Team", owner: "owner")
    var members: [(uid: String, scope: GroupMemberScope)] = []
    for index in 0..<200 {
        _ = try await service.createUser(uid: "m\(index)", name: "m\(index)")
        members.append(("m\(index)", .participant))
    }
    for start in stride(from: 0, to: members.count, by: 100) {
        try await service.addMembers(to: "team", Array(members[start..<min(start + 100, members.count)]), by: "owner")
    }
    let start = try await service.newestNotificationSequence()
    for index in 0..<50 {
        _ = try await service.send(MessageDraft(to: .group("team"), text: "release \(index)"), as: "owner")
    }
    let rows = Int(try await service.newestNotificationSequence() - start)

    // The posts counted and the waiter for the last, under one lock: the last post may come
    // before the wait begins.
    let received = Lock<(count: Int, waiter: CheckedContinuation<Void, Never>?)>((0, nil))
    let server = try HTTPServer(host: "127.0.0.1", port: 0, maximumBodyBytes: 1 << 20) { _ in
        let finished = received.withLock { state -> CheckedContinuation<Void, Never>? in
            state.count += 1
            return state.count == rows ? state.waiter.take() : nil
        }
        finished?.resume()
        return .json(200, "{}")
    }
    let webhook = NotificationWebhook(
        url: "http://127.0.0.1:\(server.port)/perch", secret: "bench-secret-0123456789", name: "bench")
    let delivery = WebhookDelivery(
        webhook: webhook, service: service, client: CurlPostClient(lanes: 8, name: "bench-webhook"),
        logger: HostLogger(minimum: .error), metrics: HostMetrics())
    try await service.advanceDelivery(of: delivery.consumer, to: start)
    let began = DispatchTime.now().uptimeNanoseconds
    let running = Task { await delivery.run() }
    await withCheckedContinuation { continuation in
        let finished = received.withLock { state -> Bool in
            guard state.count < rows else { return true }
            state.waiter = continuation
            return false
        }
        if finished { continuation.resume() }
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
    running.cancel()
    await running.value
    server.stop()
    report(
        "webhooks",
        [
            "rows": rows, "lanes": 8, "seconds": seconds.rounded3,
            "posts_per_second": (Double(rows) / seconds).rounded(),
        ])
    await chat.close()
}
