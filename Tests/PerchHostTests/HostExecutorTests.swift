import Dispatch
import Foundation
import PerchChat
import PerchHost
import PerchLock
import PerchTesting
import Testing

/// The host's executor: one thread, one job at a time, woken from other threads, and the bots'
/// consumers on it when the host is given it.
@Suite struct HostExecutorTests {
    @Test func tasksThatPreferItRunOnItsThreadOneJobAtATime() async throws {
        let executor = HostExecutor(name: "perch-host-test")
        defer { executor.stop() }
        let seen = Lock<(names: Set<String>, running: Int, overlapped: Bool, steps: Int)>(([], 0, false, 0))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<64 {
                group.addTask(executorPreference: executor) {
                    for _ in 0..<20 {
                        // A job's synchronous stretch: another job running now would overlap it.
                        seen.withLock { state in
                            state.names.insert(currentThreadName())
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
        #expect(state.names == ["perch-host-test"])
        #expect(!state.overlapped)
        #expect(state.steps == 64 * 20)
    }

    @Test func aSleepingExecutorWakesForWorkResumedFromAnotherThread() async throws {
        let executor = HostExecutor(name: "perch-host-test")
        defer { executor.stop() }
        for delay in [0, 5, 30] {
            let name = await Task(executorPreference: executor) {
                // Resumed from a Dispatch thread while the executor's thread sleeps.
                await withCheckedContinuation { continuation in
                    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) {
                        continuation.resume()
                    }
                }
                return currentThreadName()
            }.value
            #expect(name == "perch-host-test")
        }
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
        let name = await Task(executorPreference: executor) { currentThreadName() }.value
        #expect(name != "perch-host-test")
    }

    @Test func aJobOnItsThreadCanStopItWithoutWaitingForItself() async throws {
        let executor = HostExecutor(name: "perch-host-test")
        let names = await Task(executorPreference: executor) { () -> [String] in
            let before = currentThreadName()
            executor.stop()  // would never return if it waited for this thread to end
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume() }
            }
            return [before, currentThreadName()]
        }.value
        #expect(names.first == "perch-host-test")
        #expect(names.last != "perch-host-test")
    }

    @Test func theBotsConsumersRunOnTheHostsExecutor() async throws {
        var registry = PluginRegistry.standard
        registry.register(ThreadProbePlugin.self)
        let executor = HostExecutor(name: "perch-host-test")
        defer { executor.stop() }
        let bot = botFile(
            """
              - on: message
                when: { text_matches: "^probe" }
                do: [{ plugin: thread-probe }]
            """, extra: "plugins:\n  - name: thread-probe")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot], registry: registry, executor: executor) {
            chat in
            for index in 0..<3 { try await chat.post("probe \(index)", as: "carol", to: .group("room")) }
            let texts = try await chat.botMessages(in: .group("room")).compactMap(\.text)
            #expect(texts == ["ran on perch-host-test", "ran on perch-host-test", "ran on perch-host-test"])
        }
    }
}

/// Answers with the name of the thread its handler ran on.
struct ThreadProbePlugin: BotPlugin {
    static let name = "thread-probe"
    init(configuration: NoConfiguration) throws {}
    func handle(_ context: BotContext) async throws {
        try await context.reply("ran on \(currentThreadName())")
    }
}

/// The current thread's name ("" when it has none); synchronous, so async code can ask.
func currentThreadName() -> String { Thread.current.name ?? "" }
