import Dispatch
import Foundation
import PerchTestSupport
import Synchronization
import Testing

@testable import PerchLock

/// Looking for work before sleeping: when a thread may look, for how long, how many at once, and
/// the semaphore that looks for its signal.
@Suite struct SpinWaitTests {
    @Test func aThreadLooksOnlyWhenTheProcessHasAnotherCPU() {
        #expect(SpinWait.budget(microseconds: nil, cpus: 1) == 0)
        #expect(SpinWait.budget(microseconds: 200, cpus: 1) == 0)
        #expect(SpinWait.budget(microseconds: nil, cpus: 2) == SpinWait.defaultMicroseconds * 1_000)
        #expect(SpinWait.budget(microseconds: 0, cpus: 8) == 0)
        #expect(SpinWait.budget(microseconds: 200, cpus: 2) == 200_000)
        // A budget past a millisecond would be a busy thread, not a look.
        #expect(SpinWait.budget(microseconds: 1_000_000, cpus: 2) == 1_000_000)
    }

    @Test func aLookEndsWhenTheWorkComes() {
        var looks = 0
        let found = SpinWait.spin(for: 10_000_000_000, among: SpinWait.Lookers(limit: 1)) {
            looks += 1
            return looks == 5
        }
        #expect(found)
        #expect(looks == 5)
    }

    @Test func aLookForWorkThatDoesNotComeEndsAfterTheBudget() {
        var looks = 0
        let found = SpinWait.spin(for: 200_000, among: SpinWait.Lookers(limit: 1)) {
            looks += 1
            return false
        }
        #expect(!found)
        #expect(looks > 1)
    }

    @Test func withoutABudgetOrARoomAmongTheLookersAThreadLooksOnce() {
        var looks = 0
        #expect(
            !SpinWait.spin(for: 0, among: SpinWait.Lookers(limit: 1)) {
                looks += 1; return false
            })
        #expect(looks == 1)
        looks = 0
        #expect(
            !SpinWait.spin(for: 10_000_000_000, among: SpinWait.Lookers(limit: 0)) {
                looks += 1; return false
            })
        #expect(looks == 1)
    }

    @Test func noMoreThreadsLookAtOnceThanTheLimit() async throws {
        // One thread looks (with a budget of 10 s) until it is told to stop; meanwhile a second
        // look among the same lookers (a limit of one) ends at once.
        let one = SpinWait.Lookers(limit: 1)
        let started = DispatchSemaphore(value: 0)
        let stop = Atomic<Bool>(false)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var looks = 0
            _ = SpinWait.spin(for: 10_000_000_000, among: one) {
                // The first look is before the thread counts among the lookers; the second, after.
                looks += 1
                if looks == 2 { started.signal() }
                return stop.load(ordering: .acquiring)
            }
            finished.signal()
        }
        started.wait()
        var looks = 0
        #expect(
            !SpinWait.spin(for: 10_000_000_000, among: one) {
                looks += 1; return false
            })
        #expect(looks == 1)
        // The first looker is counted in `one` only.
        looks = 0
        #expect(
            SpinWait.spin(for: 10_000_000_000, among: SpinWait.Lookers(limit: 1)) {
                looks += 1; return looks == 3
            })
        #expect(looks == 3)
        stop.store(true, ordering: .releasing)
        #expect(finished.wait(timeout: .now() + 10) == .success)
    }

    @Test func aPlaceWhoseLooksFindNothingLooksOnlyNowAndThenUntilOneFinds() {
        var history = SpinHistory()
        let lookers = SpinWait.Lookers(limit: 1)
        /// Waits once with work that never comes: whether it looked (asked more than once).
        func waitLooked() -> Bool {
            var asks = 0
            _ = history.spin(for: 20_000, among: lookers) {
                asks += 1
                return false
            }
            return asks > 1
        }
        // Four looks that find nothing; then 15 waits without a look, and a try on the 16th.
        #expect((0..<4).map { _ in waitLooked() } == [true, true, true, true])
        #expect((0..<15).map { _ in waitLooked() }.allSatisfy { !$0 })
        #expect(waitLooked())
        #expect(!waitLooked())
        // A try that finds work brings the looks back.
        for _ in 0..<14 { _ = waitLooked() }
        var asks = 0
        #expect(
            history.spin(for: 10_000_000_000, among: lookers) {
                asks += 1; return asks == 3
            })
        #expect((0..<4).map { _ in waitLooked() } == [true, true, true, true])
        #expect(!waitLooked())
    }

    @Test func workThereAtOnceOrNoRoomToLookIsNotAMiss() {
        var history = SpinHistory()
        let none = SpinWait.Lookers(limit: 0)
        for _ in 0..<10 {
            #expect(history.spin(for: 20_000, among: none) { true })
            #expect(!history.spin(for: 20_000, among: none) { false })
        }
        #expect(history.misses == 0)
    }

    @Test(arguments: [true, false]) func theSemaphoreCountsItsSignals(spinning: Bool) {
        let semaphore = SpinningSemaphore(spinning: spinning)
        semaphore.signal()
        semaphore.signal()
        #expect(semaphore.wait(until: .now() + 10))
        #expect(semaphore.wait(until: .now() + 10))
        #expect(!semaphore.wait(until: .now() + .milliseconds(20)))
        semaphore.signal()
        #expect(semaphore.wait(until: .now() + 10))
    }

    @Test(arguments: [true, false]) func theSemaphoreWakesForASignalFromAnotherThread(spinning: Bool) {
        // Whether the signal comes while the waiter looks (at once) or after it sleeps (50 ms).
        for delay in [0, 50] {
            let semaphore = SpinningSemaphore(spinning: spinning)
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: Double(delay) / 1_000)
                semaphore.signal()
            }
            #expect(semaphore.wait(until: .now() + 10))
            #expect(!semaphore.wait(until: .now() + .milliseconds(5)))
        }
    }

    @Test func manyWaitsAndSignalsAcrossThreadsBalance() {
        // A producer signals 10,000 times; the waiter takes exactly as many, then finds none.
        let semaphore = SpinningSemaphore()
        let count = 10_000
        Thread.detachNewThread {
            for index in 0..<count {
                if index % 64 == 0 { usleep(10) }
                semaphore.signal()
            }
        }
        var taken = 0
        while taken < count, semaphore.wait(until: .now() + 10) { taken += 1 }
        #expect(taken == count)
        #expect(!semaphore.wait(until: .now() + .milliseconds(20)))
    }
}
