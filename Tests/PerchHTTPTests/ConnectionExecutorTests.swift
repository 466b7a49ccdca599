import Foundation
import PerchHost
import PerchLock
import PerchSQLite
import PerchTestSupport
import Synchronization
import Testing

@testable import PerchHTTP

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request's handler runs on its connection's thread (a `ThreadExecutor`); what it awaits from
/// other threads comes back there, and a task it starts outlives the request on the shared pool.
@Suite struct ConnectionExecutorTests {
    @Test func awaitedWorkComesBackAndStartedTasksOutliveTheRequest() async throws {
        let outlived = Flag()
        let server = try HTTPServer(host: "127.0.0.1", port: 0, maximumBodyBytes: 1024) { request in
            // Resumed from another thread: the rest of the handler runs on the connection's again.
            let value = await withCheckedContinuation { continuation in
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) {
                    continuation.resume(returning: request.path)
                }
            }
            // Not bound to the request's executor, which stops with the request.
            Task {
                try? await Task.sleep(for: .milliseconds(50))
                outlived.set()
            }
            return .text(200, "answered \(value)")
        }
        defer { server.stop() }
        let url = try #require(URL(string: "http://127.0.0.1:\(server.port)/hello"))
        let (data, response) = try await URLSession(configuration: .ephemeral).data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "answered /hello")
        for _ in 0..<200 where !outlived.isSet { try await Task.sleep(for: .milliseconds(10)) }
        #expect(outlived.isSet)
    }

    /// An owner that sleeps in poll(2) is woken through the eventfd by a job or a signal that
    /// comes while it sleeps; while it is awake nothing is written (it looks at its queue first).
    @Test func aPollingOwnerIsWokenThroughItsDescriptorOnlyWhileItSleeps() async throws {
        let executor = ThreadExecutor(pollable: ())
        let descriptor = try #require(executor.wakeDescriptor)
        func readable() -> Bool {
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            return poll(&entry, 1, 0) > 0
        }
        #expect(ThreadExecutor().wakeDescriptor == nil)
        // Awake: a job queues without a write.
        let ran = Flag()
        Task(executorPreference: executor) { ran.set() }
        try await Task.sleep(for: .milliseconds(20))
        #expect(!readable())
        // Jobs wait: the owner may not sleep.
        #expect(!executor.prepareToSleep())
        #expect(executor.runPending())
        #expect(ran.isSet)
        // Asleep: a signal writes once; back awake, it is consumed.
        #expect(executor.prepareToSleep())
        executor.signal()
        #expect(readable())
        executor.awake()
        #expect(!readable())
        executor.signal()
        #expect(!readable())
        // Asleep: a job wakes it.
        #expect(executor.prepareToSleep())
        let second = Flag()
        Task(executorPreference: executor) { second.set() }
        var woke = false
        for _ in 0..<100 where !woke {
            woke = readable()
            if !woke { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(woke)
        executor.awake()
        #expect(executor.runPending())
        #expect(second.isSet)
        executor.stop()
    }
}

/// The owner takes the queue by swapping it with a spare array (no allocation a call): whatever
/// the batches' sizes, every job queued runs exactly once, nothing is run twice from a spare, and
/// a call made from inside a job (the spare lent out) runs what was queued meanwhile.
@Suite struct ThreadExecutorQueueTests {
    @Test func eachQueuedJobRunsOnceAcrossBatchesAndFromInsideAJob() async throws {
        let executor = ThreadExecutor()
        let runs = Runs()
        var total = 0
        for count in [1, 6, 2, 9, 1, 0, 3] {
            for _ in 0..<count {
                let number = total
                Task(executorPreference: executor) { runs.add(number) }
                total += 1
            }
            try await Task.sleep(for: .milliseconds(20))
            var batches = 0
            while executor.runPending() { batches += 1 }
            #expect(batches == (count == 0 ? 0 : 1))
            #expect(runs.counts.count == total)
        }
        #expect(runs.counts.values.allSatisfy { $0 == 1 })
        #expect(!executor.runPending())
        let inner = Flag()
        let innerRanInside = Flag()
        Task(executorPreference: executor) {
            Task(executorPreference: executor) { inner.set() }
            executor.runPending()
            if inner.isSet { innerRanInside.set() }
        }
        try await Task.sleep(for: .milliseconds(20))
        #expect(executor.runPending())
        #expect(inner.isSet && innerRanInside.isSet)
        #expect(!executor.runPending())
        executor.stop()
    }
}

private final class Runs: Sendable {
    private let value = Mutex<[Int: Int]>([:])
    func add(_ number: Int) { value.withLock { $0[number, default: 0] += 1 } }
    var counts: [Int: Int] { value.withLock { $0 } }
}

private final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

/// A task on a `JoiningExecutor` resumed by a request's work runs on that request's connection
/// thread once the answer is out (as `perch run`'s bots do after a post's commit); resumed
/// elsewhere, or past the limit, it runs on the shared pool.
@Suite struct JoiningExecutorTests {
    /// `count` tasks preferring `executor`, each waiting to be resumed; each records the thread it
    /// then ran on and whether the client had the request's answer by then.
    final class Waiters: @unchecked Sendable {
        let continuations = Mutex<[CheckedContinuation<Void, Never>]>([])
        let ran = Mutex<[(thread: pthread_t, afterAnswer: Bool)]>([])
        let answered = Mutex(false)
        /// The thread of the request that resumes them.
        let handlerThread = Mutex<pthread_t?>(nil)
        var tasks: [Task<Void, Never>] = []

        init(count: Int, on executor: JoiningExecutor) async throws {
            tasks = (0..<count).map { _ in
                Task(executorPreference: executor) { [self] in
                    await withCheckedContinuation { continuation in continuations.withLock { $0.append(continuation) } }
                    // On the connection's thread, blocks it until the client has the answer (5 s
                    // at most): run there before the answer is sent, that would never happen.
                    let onConnection = handlerThread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } }
                    var afterAnswer = answered.withLock { $0 }
                    for _ in 0..<5_000 where !afterAnswer && onConnection == true {
                        usleep(1_000)
                        afterAnswer = answered.withLock { $0 }
                    }
                    ran.withLock { $0.append((pthread_self(), afterAnswer)) }
                }
            }
            while continuations.withLock({ $0.count }) < count { try await Task.sleep(for: .milliseconds(1)) }
        }

        func resumeAll() {
            for continuation in continuations.withLock({ $0 }) { continuation.resume() }
        }
    }

    /// Serves one request whose handler resumes `waiters` on its connection's thread; returns that
    /// thread once every waiter ran.
    func serve(_ waiters: Waiters) async throws -> pthread_t {
        let server = try HTTPServer(host: "127.0.0.1", port: 0, maximumBodyBytes: 1024) { _ in
            waiters.handlerThread.withLock { $0 = pthread_self() }
            waiters.resumeAll()
            return .text(200, "ok")
        }
        defer { server.stop() }
        let url = try #require(URL(string: "http://127.0.0.1:\(server.port)/"))
        // The answer is marked where URLSession hands it over (its delegate queue), not on the
        // cooperative pool, which a loaded test run may keep busy.
        let status = await withCheckedContinuation { continuation in
            URLSession(configuration: .ephemeral).dataTask(with: url) { _, response, _ in
                waiters.answered.withLock { $0 = true }
                continuation.resume(returning: (response as? HTTPURLResponse)?.statusCode)
            }.resume()
        }
        #expect(status == 200)
        for task in waiters.tasks { await task.value }
        return try #require(waiters.handlerThread.withLock { $0 })
    }

    @Test func aTaskResumedByARequestRunsOnItsConnectionThreadAfterTheAnswer() async throws {
        let waiters = try await Waiters(count: 2, on: JoiningExecutor())
        let thread = try await serve(waiters)
        let ran = waiters.ran.withLock { $0 }
        #expect(ran.count == 2)
        #expect(ran.allSatisfy { pthread_equal($0.thread, thread) != 0 })
        #expect(ran.allSatisfy { $0.afterAnswer })
    }

    @Test func pastTheLimitTheRestRunOnThePool() async throws {
        let waiters = try await Waiters(count: 5, on: JoiningExecutor(limit: 2))
        let thread = try await serve(waiters)
        let ran = waiters.ran.withLock { $0 }
        #expect(ran.count == 5)
        #expect(ran.filter { pthread_equal($0.thread, thread) != 0 }.count == 2)
    }

    @Test func aTaskResumedAnywhereElseRunsOnThePool() async throws {
        let waiters = try await Waiters(count: 1, on: JoiningExecutor())
        waiters.answered.withLock { $0 = true }
        let resumer = Mutex<pthread_t?>(nil)
        Thread.detachNewThread {
            resumer.withLock { $0 = pthread_self() }
            waiters.resumeAll()
            // The thread stays until the task ran, so it cannot be reused for it.
            while waiters.ran.withLock({ $0.isEmpty }) { usleep(1_000) }
        }
        for task in waiters.tasks { await task.value }
        let thread = try #require(resumer.withLock { $0 })
        #expect(waiters.ran.withLock { $0 }.allSatisfy { pthread_equal($0.thread, thread) == 0 })
    }
}

/// `perch run`'s bots are on a `JoiningExecutor`: a bot answering a message posted over HTTP runs
/// on the post's connection thread.
@Suite struct JoinedBotTests {
    @Test func aBotAnsweringAPostRunsOnItsConnectionThread() async throws {
        let (bot, registry) = pluginBot(ThreadNamePlugin.self, on: "where")
        try await withHTTPChat(bots: ["b.yaml": bot], registry: registry, executor: JoiningExecutor()) { http in
            // The bot is waiting, its cursor saved: the post's commit resumes it (a bot busy reading
            // or saving when the message commits finds it on its own, on the pool).
            try await http.chat.settle()
            let store = try #require(http.chat.service.store as? SQLiteChatStore)
            for _ in 0..<2_000 where store.waitingConsumers < 1 { try await Task.sleep(for: .milliseconds(5)) }
            try await Task.sleep(for: .milliseconds(100))
            let posted = try await http.call(
                "POST", "/v3/messages", as: .user("carol"),
                json:
                    #"{"receiver":"room","receiverType":"group","category":"message","type":"text","data":{"text":"where"}}"#
            )
            #expect(posted.status == 200)
            let answer = try await http.chat.waitForMessage(in: .group("room")) { $0.sender == "bot" }
            // libmicrohttpd names its connection threads so.
            #expect(answer.text == "MHD-connection")
        }
    }
}

/// Answers with the name of the thread its handler ran on.
struct ThreadNamePlugin: BotPlugin {
    static let name = "thread-name"
    init(configuration: NoConfiguration) throws {}
    func handle(_ context: BotContext) async throws {
        try await context.reply(currentThreadName())
    }

}
