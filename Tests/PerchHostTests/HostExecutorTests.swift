import Dispatch
import Foundation
import PerchChat
import PerchHost
import PerchLock
import PerchTestSupport
import PerchTesting
import Testing

/// The host's executor: one thread, one job at a time, woken from other threads, and the bots'
/// consumers on it when the host is given it.
@Suite struct HostExecutorTests {
    @Test func tasksThatPreferItRunOnItsThreadOneJobAtATime() async throws {
        let executor = HostExecutor(name: "perch-host-test")
        defer { executor.stop() }
        let seen = Lock<(elsewhere: Int, running: Int, overlapped: Bool, steps: Int)>((0, 0, false, 0))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<64 {
                group.addTask(executorPreference: executor) {
                    for _ in 0..<20 {
                        // A job's synchronous stretch: another job running now would overlap it.
                        let onIt = executor.isCurrent
                        seen.withLock { state in
                            if !onIt { state.elsewhere += 1 }
                            state.running += 1
                        }
                        var spin = 0
                        for value in 0..<2_000 { spin &+= value }
                        seen.withLock { state in
                            if state.running != 1 { state.overlapped = true }
                            state.running -= 1
                            state.steps += spin == 0 ? 0 : 1
                        }
                        await Task.yield()
                    }
                }
            }
        }
        let state = seen.withLock { $0 }
        #expect(state.elsewhere == 0)
        #expect(!state.overlapped)
        #expect(state.steps == 64 * 20)
    }

    @Test func aSleepingExecutorWakesForWorkResumedFromAnotherThread() async throws {
        let executor = HostExecutor(name: "perch-host-test")
        defer { executor.stop() }
        for delay in [0, 5, 30] {
            let onIt = await Task(executorPreference: executor) {
                // Resumed from a Dispatch thread while the executor's thread sleeps.
                await withCheckedContinuation { continuation in
                    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) {
                        continuation.resume()
                    }
                }
                return executor.isCurrent
            }.value
            #expect(onIt)
        }
        // Named as `top -H` and `perf` show it.
        let name = await Task(executorPreference: executor) { currentThreadName() }.value
        #expect(name == "perch-host-test")
    }

    @Test func afterStopTheQueuedJobsHaveRunAndLaterOnesGoToThePool() async throws {
        let executor = HostExecutor(name: "perch-host-test")
        let ran = Lock(0)
        let started = Task(executorPreference: executor) {
            for _ in 0..<100 {
                ran.withLock { $0 += 1 }
                await Task.yield()
            }
        }
        await started.value
        executor.stop()
        executor.stop()  // a second stop returns at once
        #expect(ran.withLock { $0 } == 100)
        let onIt = await Task(executorPreference: executor) { executor.isCurrent }.value
        #expect(!onIt)
    }

    @Test func aJobOnItsThreadCanStopItWithoutWaitingForItself() async throws {
        let executor = HostExecutor(name: "perch-host-test")
        let onIt = await Task(executorPreference: executor) { () -> Bool in
            let onIt = executor.isCurrent
            executor.stop()  // would never return if it waited for this thread to end
            // The task goes on after the stop: its next job runs while the thread drains what was
            // queued, or on the shared pool.
            await Task.yield()
            return onIt
        }.value
        #expect(onIt)
        // A task that still prefers the stopped executor runs on the shared pool.
        let later = await Task(executorPreference: executor) { executor.isCurrent }.value
        #expect(!later)
    }

    @Test func theBotsConsumersRunOnTheHostsExecutor() async throws {
        let (bot, registry) = pluginBot(ThreadProbePlugin.self, on: "probe")
        try await withTestHost(
            config: hostConfig, bots: ["b.yaml": bot], registry: registry, executor: ThreadProbePlugin.executor
        ) { chat in
            for index in 0..<3 { try await chat.post("probe \(index)", as: "carol", to: .group("room")) }
            let texts = try await chat.botMessages(in: .group("room")).compactMap(\.text)
            #expect(
                texts == ["on the host's thread: true", "on the host's thread: true", "on the host's thread: true"])
        }
    }
}

/// Answers whether its handler ran on `executor`'s thread.
struct ThreadProbePlugin: BotPlugin {
    static let name = "thread-probe"
    /// The executor the test gives its host (one for the test process).
    static let executor = HostExecutor(name: "perch-probe")
    init(configuration: NoConfiguration) throws {}
    func handle(_ context: BotContext) async throws {
        try await context.reply("on the host's thread: \(Self.executor.isCurrent)")
    }
}
