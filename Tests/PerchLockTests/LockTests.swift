import Dispatch
import PerchLock
import PerchTestSupport
import Testing

/// `Lock` (a pthread mutex; see its comment for why Perch does not use `Synchronization.Mutex`):
/// one thread at a time inside, and a body's error comes out typed.
@Suite struct LockTests {
    @Test func threadsTakingTheLockAtOnceLoseNoUpdate() {
        let counter = Lock((total: 0, inside: 0, overlapped: false))
        DispatchQueue.concurrentPerform(iterations: 64) { _ in
            for _ in 0..<2_000 {
                counter.withLock { state in
                    state.inside += 1
                    if state.inside > 1 { state.overlapped = true }
                    state.total += 1
                    state.inside -= 1
                }
            }
        }
        let state = counter.withLock { $0 }
        #expect(state.total == 128_000)
        #expect(!state.overlapped)
    }

    struct Refusal: Error, Equatable {}

    @Test func aBodysErrorLeavesTheLockFreeAndKeepsItsType() {
        let lock = Lock(0)
        #expect(throws: Refusal.self) {
            try lock.withLock { (value: inout Int) throws(Refusal) in
                value = 1
                throw Refusal()
            }
        }
        // Released after the throw: taking it again does not wait, and the write before the throw stays.
        #expect(lock.withLock { $0 } == 1)
    }
}
