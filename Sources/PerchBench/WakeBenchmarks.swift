import Foundation
import PerchChat
import PerchLock
import PerchService

/// Many consumers in other rooms while one room is busy: 500 people, each in a room of their own,
/// each following their events (as an SSE stream or a bot does), and one sender posting 1,000
/// messages, one every 4 ms (250 a second), in a room none of them is in. Measured three times in
/// one process: the followers waiting for any commit (`any_commit`), then for their own user's
/// events (what `followEvents` and the bots do: `own_events`), and then with the messages going to
/// the followers' own rooms in turn (`own_rooms`: each wakes one follower, which has slept through
/// the messages of all the other rooms since its last). The process's CPU time per message and the
/// followers' wake-ups. `PERCH_BENCH_FOLLOWERS` sets the number of followers (0 gives the cost of
/// the paced sends alone).
func benchmarkWakes() async throws {
    let followers = max(0, environmentInt("PERCH_BENCH_FOLLOWERS", default: 500))
    let sends = 1_000
    var fields: [String: Any] = ["followers": followers, "sends": sends]
    for (key, filtered, ownRooms) in [
        ("any_commit", false, false), ("own_events", true, false), ("own_rooms", true, true),
    ]
    where !ownRooms || followers > 0 {
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
            if ownRooms {
                // Spread over the rooms (7,919 is prime), so each follower sleeps through the others.
                let room = index * 7_919 % followers
                _ = try await service.send(MessageDraft(to: .group("room\(room)"), text: "m\(index)"), as: "p\(room)")
            } else {
                _ = try await service.send(MessageDraft(to: .group("busy"), text: "m\(index)"), as: "sender")
            }
            let due = start + UInt64(index + 1) * 4_000_000
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { try await Task.sleep(for: .nanoseconds(due - now)) }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpu = processCPUSeconds() - cpuBefore
        let wakes = woken.withLock { $0 } - wokenBefore
        for task in tasks { task.cancel() }
        await chat.close()
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
