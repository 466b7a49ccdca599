import Foundation
import PerchChat
import PerchLock
import PerchService

/// The newest page of a 100,000-message conversation against a 100-message one.
func benchmarkPages() async throws {
    let chat = try BenchChat()
    let service = chat.service
    _ = try await service.createUser(uid: "a", name: "A")
    _ = try await service.createUser(uid: "b", name: "B")
    _ = try await service.createGroup(guid: "big", name: "Big", owner: "a")
    _ = try await service.createGroup(guid: "small", name: "Small", owner: "a")
    let started = Date()
    try await fill(service, count: 100_000, draft: { MessageDraft(to: .group("big"), text: "message \($0)") }, as: "a")
    let fillSeconds = Date().timeIntervalSince(started)
    try await fill(service, count: 100, draft: { MessageDraft(to: .group("small"), text: "message \($0)") }, as: "a")
    let big = try await measure(runs: 2_000) {
        _ = try await service.fetchPrevious(MessagesRequest(guid: "big", limit: 30), as: "a")
    }
    let small = try await measure(runs: 2_000) {
        _ = try await service.fetchPrevious(MessagesRequest(guid: "small", limit: 30), as: "a")
    }
    report(
        "pages",
        [
            "newest_page_100k_us": (big.median / 1000).rounded3, "newest_page_100_us": (small.median / 1000).rounded3,
            "p99_100k_us": (big.p99 / 1000).rounded3, "p99_100_us": (small.p99 / 1000).rounded3,
            "ratio_100k_over_100": (big.median / small.median).rounded3,
            "fill_100k_sends_per_s": (100_000 / fillSeconds).rounded(),
        ])
    await chat.close()
}

/// The threads inbox of one user with 100,000 threads: the first page against page 500.
func benchmarkInbox() async throws {
    let chat = try BenchChat()
    let service = chat.service
    _ = try await service.createUser(uid: "a", name: "A")
    _ = try await service.createGroup(guid: "g", name: "G", owner: "a")
    // Each message starts a thread; a reply subscribes its author and makes it an inbox row.
    try await fill(service, count: 100_000, draft: { MessageDraft(to: .group("g"), text: "thread \($0)") }, as: "a")
    let page = try await service.fetchPrevious(MessagesRequest(guid: "g", limit: 1), as: "a")
    let newest = page.messages[0].id
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<8 {
            group.addTask {
                var id = newest - Int64(lane)
                while id > newest - 100_000 {
                    _ = try await service.subscribeToThread(id, as: "a")
                    id -= 8
                }
            }
        }
        try await group.waitForAll()
    }
    let options = ThreadsRequest.Options(limit: 30)
    var cursor: ThreadCursor?
    for _ in 0..<499 {
        let result = try await service.fetchThreads(options, as: "a", after: cursor)
        cursor = result.threads.last?.cursor
    }
    let page500 = cursor
    let first = try await measure(runs: 1_000) { _ = try await service.fetchThreads(options, as: "a", after: nil) }
    let deep = try await measure(runs: 1_000) { _ = try await service.fetchThreads(options, as: "a", after: page500) }
    report(
        "inbox",
        [
            "threads": 100_000, "page_size": 30, "first_page_us": (first.median / 1000).rounded3,
            "page_500_us": (deep.median / 1000).rounded3, "first_page_p99_us": (first.p99 / 1000).rounded3,
            "page_500_p99_us": (deep.p99 / 1000).rounded3, "ratio_500_over_1": (deep.median / first.median).rounded3,
        ])
    await chat.close()
}

extension Double {
    var rounded3: Double { (self * 1000).rounded() / 1000 }
}

/// Notification routing in a 1,000-member group: the cost of a send whose message every member's
/// preferences are consulted for, against a send in a 2-member group; and the same sends from 64
/// senders at once, which share commits.
func benchmarkRouting() async throws {
    let chat = try BenchChat()
    let service = chat.service
    _ = try await service.createUser(uid: "owner", name: "Owner")
    _ = try await service.createGroup(guid: "big", name: "Big", owner: "owner")
    _ = try await service.createGroup(guid: "small", name: "Small", owner: "owner")
    var batch: [(uid: String, scope: GroupMemberScope)] = []
    for index in 0..<999 {
        let uid = "m\(index)"
        _ = try await service.createUser(uid: uid, name: uid)
        batch.append((uid, .participant))
        if batch.count == 100 {
            try await service.addMembers(to: "big", batch, by: "owner")
            batch = []
        }
    }
    if !batch.isEmpty { try await service.addMembers(to: "big", batch, by: "owner") }
    try await service.addMembers(to: "small", [("m0", .participant)], by: "owner")
    // A quarter of the members chose their own preferences.
    for index in stride(from: 0, to: 999, by: 4) {
        var preferences = NotificationPreferences()
        preferences.group.messages = .subscribeToMentions
        _ = try await service.updateNotificationPreferences(preferences, of: "m\(index)")
    }
    var counter = 0
    let big = try await measure(runs: 300, warmup: 20) {
        counter += 1
        _ = try await service.send(MessageDraft(to: .group("big"), text: "hello \(counter)"), as: "owner")
    }
    let small = try await measure(runs: 300, warmup: 20) {
        counter += 1
        _ = try await service.send(MessageDraft(to: .group("small"), text: "hello \(counter)"), as: "owner")
    }
    // A thread's first reply by a member: it subscribes the member, which the group's bots hear of
    // (its other members do not: a follow is private).
    var parents: [Int64] = []
    for index in 0..<320 {
        parents.append(try await service.send(MessageDraft(to: .group("big"), text: "parent \(index)"), as: "owner").id)
    }
    var replier = 0
    let reply = try await measure(runs: 300, warmup: 20) {
        let parent = parents[replier]
        replier += 1
        _ = try await service.send(
            MessageDraft(to: .group("big"), text: "a reply", parentMessageId: parent), as: "m\(replier)")
    }
    // 64 senders at once: their sends share commits, and so the outbox pages each commit writes.
    let started = DispatchTime.now().uptimeNanoseconds
    try await fill(
        service, count: 1_280, draft: { MessageDraft(to: .group("big"), text: "together \($0)") }, as: "owner")
    let together = Double(DispatchTime.now().uptimeNanoseconds - started) / 1_280
    let outbox = try await service.notifications(for: "m1", limit: 1000).records.count
    report(
        "routing",
        [
            "members": 1_000, "send_1000_members_us": (big.median / 1000).rounded3,
            "send_2_members_us": (small.median / 1000).rounded3,
            "first_reply_1000_members_us": (reply.median / 1000).rounded3,
            "routing_cost_per_message_us": ((big.median - small.median) / 1000).rounded3,
            "send_1000_members_64_senders_us_per_message": (together / 1000).rounded3,
            "outbox_rows_for_one_member": outbox,
        ])
    await chat.close()
}

/// One durable send at a time into a 3-member group: the latency a lone sender sees.
func benchmarkSend() async throws {
    let chat = try BenchChat()
    let service = chat.service
    for uid in ["a", "b", "c"] { _ = try await service.createUser(uid: uid, name: uid) }
    _ = try await service.createGroup(guid: "g", name: "G", owner: "a")
    try await service.addMembers(to: "g", [("b", .participant), ("c", .participant)], by: "a")
    var index = 0
    let runs = environmentInt("PERCH_BENCH_SENDS", default: 3_000)
    let send = try await measure(runs: runs, warmup: 200) {
        index += 1
        _ = try await service.send(MessageDraft(to: .group("g"), text: "!ping \(index)"), as: "a")
    }
    report("send", ["sequential_send_p50_us": (send.median / 1000).rounded3, "p99_us": (send.p99 / 1000).rounded3])
    await chat.close()
}

/// Durable sends through the service (64 concurrent senders, a 3-member group) against plain
/// SQLite inserting the same rows with the same schema and pragmas (`bench/sqlite-limit/insert.c`,
/// run when `PERCH_SQLITE_LIMIT` names its binary): how close the store gets to its limit.
func benchmarkStoreLimit() async throws {
    let sends = environmentInt("PERCH_BENCH_SENDS", default: 20_000)
    let chat = try BenchChat()
    let service = chat.service
    for uid in ["a", "b", "c"] { _ = try await service.createUser(uid: uid, name: uid) }
    _ = try await service.createGroup(guid: "g", name: "G", owner: "a")
    try await service.addMembers(to: "g", [("b", .participant), ("c", .participant)], by: "a")
    let started = Date()
    try await fill(service, count: sends, draft: { MessageDraft(to: .group("g"), text: "message \($0)") }, as: "a")
    let perch = Double(sends) / Date().timeIntervalSince(started)
    var fields: [String: Any] = ["perch_sends_per_s": perch.rounded(), "sends": sends, "senders": 64]
    if let limit = ProcessInfo.processInfo.environment["PERCH_SQLITE_LIMIT"] {
        func plain(sends: Int, batch: Int, file: String) throws -> [String: Any] {
            let output = Pipe()
            let process = try ChildProcess(
                limit, [chat.store.path, chat.directory + "/" + file, String(sends), String(batch)],
                output: output.fileHandleForWriting.fileDescriptor)
            try output.fileHandleForWriting.close()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitForExit()
            return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        }
        let batched = try plain(sends: sends, batch: 64, file: "plain.sqlite")
        if let rate = batched["sends_per_s"] as? Double {
            fields["plain_sqlite_sends_per_s"] = rate
            fields["plain_sqlite_outbox_rows_per_send"] = batched["outbox_rows_per_send"]
            fields["ratio_perch_over_plain"] = (perch / rate).rounded3
        }
        // One commit per send: the floor under any durable send, whoever makes it.
        if let rate = try plain(sends: 3_000, batch: 1, file: "plain-single.sqlite")["sends_per_s"] as? Double {
            fields["plain_sqlite_one_commit_per_send_us"] = (1_000_000 / rate).rounded3
        }
    }
    report("store-limit", fields)
    await chat.close()
}

/// The event log's retention on a week of traffic: 50,000 messages in a 3-member group and 50,000
/// one-on-one messages among 1,000 people, all older than the retention. What one pass costs, and
/// what it does to a sender meanwhile: sequential sends' latency before the pass and during it.
func benchmarkRetention() async throws {
    let clock = ManualClock()
    let chat = try BenchChat(clock: clock)
    let service = chat.service
    for uid in ["a", "b", "c"] { _ = try await service.createUser(uid: uid, name: uid) }
    for index in 0..<1_000 { _ = try await service.createUser(uid: "u\(index)", name: "u\(index)") }
    _ = try await service.createGroup(guid: "g", name: "G", owner: "a")
    try await service.addMembers(to: "g", [("b", .participant), ("c", .participant)], by: "a")
    let count = 50_000
    try await fill(service, count: count, draft: { MessageDraft(to: .group("g"), text: "message \($0)") }, as: "a")
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<64 {
            group.addTask {
                var index = lane
                while index < count {
                    _ = try await service.send(
                        MessageDraft(to: .user("u\((index + 1) % 1_000)"), text: "direct \(index)"),
                        as: "u\(index % 1_000)")
                    index += 64
                }
            }
        }
        try await group.waitForAll()
    }
    _ = try await service.pruneEventLog(olderThan: 7 * 86_400)
    clock.advance(by: 8 * 86_400)
    let events = try await chat.store.latestEventSequence()
    var index = 0
    let before = try await measure(runs: 1_000, warmup: 100) {
        index += 1
        _ = try await service.send(MessageDraft(to: .group("g"), text: "before \(index)"), as: "a")
    }
    // Sequential sends while the pass runs.
    let running = Lock(true)
    let sender = Task {
        var samples: [Double] = []
        var index = 0
        while running.withLock({ $0 }) {
            index += 1
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try await service.send(MessageDraft(to: .group("g"), text: "during \(index)"), as: "a")
            samples.append(Double(DispatchTime.now().uptimeNanoseconds - start))
        }
        return samples.sorted()
    }
    let started = DispatchTime.now().uptimeNanoseconds
    let pruned = try await service.pruneEventLog(olderThan: 7 * 86_400)
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    running.withLock { $0 = false }
    let during = try await sender.value
    report(
        "retention",
        [
            "events_in_log": events, "events_pruned": pruned.events, "outbox_pruned": pruned.outbox,
            "pass_s": seconds.rounded3, "rows_per_s": (Double(pruned.events + pruned.outbox) / seconds).rounded(),
            "send_p50_us_before": (before.median / 1000).rounded3, "send_p99_us_before": (before.p99 / 1000).rounded3,
            "send_p50_us_during": ((during.isEmpty ? 0 : during[during.count / 2]) / 1000).rounded3,
            "send_p99_us_during": ((during.isEmpty ? 0 : during[during.count * 99 / 100]) / 1000).rounded3,
            "send_max_us_during": ((during.last ?? 0) / 1000).rounded3, "sends_during": during.count,
        ])
    await chat.close()
}
