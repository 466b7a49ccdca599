import Foundation
import PerchChat
import PerchLock
import PerchService

/// Many consumers in other rooms while one room is busy: 500 people, each in a room of their own,
/// each following their events (as an SSE stream or a bot does), and one sender posting 1,000
/// messages, one every 4 ms (250 a second), in a room none of them is in. Measured twice in one
/// process, the followers first waiting for any commit, then for their own user's events (what
/// `followEvents` and the bots do): the process's CPU time per message and the followers' wake-ups.
/// `PERCH_BENCH_FOLLOWERS` sets the number of followers (0 gives the cost of the paced sends alone).
func benchmarkWakes() async throws {
    let followers = max(0, Int(ProcessInfo.processInfo.environment["PERCH_BENCH_FOLLOWERS"] ?? "") ?? 500)
    let sends = 1_000
    var fields: [String: Any] = ["followers": followers, "sends": sends]
    for filtered in [false, true] {
        let chat = try BenchChat()
        let service = chat.service
        _ = try await service.createUser(uid: "sender", name: "Sender")
        _ = try await service.createUser(uid: "other", name: "Other")
        _ = try await service.createGroup(guid: "busy", name: "Busy", owner: "sender")
        try await service.addMembers(to: "busy", [("other", .participant)], by: "sender")
        for index in 0..<followers {
            _ = try await service.createUser(uid: "p\(index)", name: "P\(index)")
            _ = try await service.createGroup(guid: "room\(index)", name: "Room \(index)", owner: "p\(index)")
        }
        let latest = try await chat.store.latestEventSequence()
        let woken = Lock(0)
        let failed = Lock(0)
        let tasks = (0..<followers).map { index in
            Task {
                let uid = "p\(index)"
                var cursor = latest
                while !Task.isCancelled {
                    let page: EventPage
                    do {
                        page = try await service.events(for: uid, after: cursor)
                    } catch {
                        failed.withLock { $0 += 1 }
                        return
                    }
                    cursor = max(cursor, page.scannedThrough)
                    if page.isFull { continue }
                    await service.waitForEvents(after: cursor, for: filtered ? uid : nil)
                    woken.withLock { $0 += 1 }
                }
            }
        }
        // Every follower reads its first page and waits (the store then knows their groups).
        try await Task.sleep(for: .milliseconds(300))
        _ = try await service.send(MessageDraft(to: .group("busy"), text: "warm-up"), as: "sender")
        try await Task.sleep(for: .milliseconds(500))
        let failures = failed.withLock { $0 }
        guard failures == 0, chat.store.waitingConsumers == followers else {
            throw BenchFailure("\(failures) followers failed, \(chat.store.waitingConsumers) wait")
        }
        let cpuBefore = processCPUSeconds()
        let wokenBefore = woken.withLock { $0 }
        let start = DispatchTime.now().uptimeNanoseconds
        for index in 0..<sends {
            _ = try await service.send(MessageDraft(to: .group("busy"), text: "m\(index)"), as: "sender")
            let due = start + UInt64(index + 1) * 4_000_000
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { try await Task.sleep(for: .nanoseconds(due - now)) }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpu = processCPUSeconds() - cpuBefore
        let wakes = woken.withLock { $0 } - wokenBefore
        for task in tasks { task.cancel() }
        await chat.close()
        let key = filtered ? "own_events" : "any_commit"
        fields["\(key)_sends_per_s"] = (Double(sends) / seconds).rounded()
        fields["\(key)_cores"] = (cpu / seconds).rounded3
        fields["\(key)_cpu_us_per_send"] = (cpu / Double(sends) * 1e6).rounded3
        fields["\(key)_follower_wakes_per_send"] = (Double(wakes) / Double(sends)).rounded3
    }
    report("wakes", fields)
}

/// User and system CPU time of this process so far, in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
        + Double(usage.ru_stime.tv_usec) / 1e6
}
