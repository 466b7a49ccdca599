import Dispatch
import Synchronization

#if canImport(Glibc)
    import CMalloc
#endif

/// Process-wide allocator settings for a long-running host.
public enum Allocator {
    /// Keeps glibc from handing freed heap back to the kernel after every burst of frees, and
    /// from keeping much more than that.
    ///
    /// With its defaults, glibc trims each thread arena's free top with `madvise` as soon as it
    /// passes 128 KiB, and the next request faults the pages back in: a busy HTTP host spends its
    /// time in page faults and `madvise` calls, several a request. Here an arena keeps up to 4 MiB
    /// free at its top (1 MiB of padding when it grows), far more than a request's churn, and a
    /// block of 1 MiB or more (a slow reader's outgoing buffer, a huge page of messages) is mapped
    /// on its own and unmapped when freed. What an arena holds past that goes back at the free
    /// that leaves it so: `malloc_trim` never shrinks the top of a thread's arena, only of the
    /// main one, so a higher threshold would keep a burst's peak for good (a hundred WebSockets
    /// that stopped reading left some 90 MiB behind with 64 MiB).
    public static func tuneForHost() {
        #if canImport(Glibc)
            _ = mallopt(M_TRIM_THRESHOLD, 4 << 20)
            _ = mallopt(M_TOP_PAD, 1 << 20)
            _ = mallopt(M_MMAP_THRESHOLD, 1 << 20)
        #endif
    }

    /// When ``releaseFreeMemory()`` last trimmed, in uptime nanoseconds.
    private static let lastRelease = Atomic<UInt64>(0)

    /// Whether a trim is scheduled for when the last one is a second old.
    private static let releasePending = Atomic<Bool>(false)

    /// Hands the heap's free pages back to the kernel (`malloc_trim`): called when something that
    /// held a lot of memory has let it go (a WebSocket whose client stopped reading, once it
    /// closes), so the process shrinks back after clients leave: the free pages inside
    /// each arena go back, not only those of its top (see ``tuneForHost()``).
    ///
    /// Trims at most once a second: a call within a second of the last trim schedules one for when
    /// the second is over (once, however many calls), so the last of many sockets to close is
    /// trimmed after too.
    public static func releaseFreeMemory() {
        let now = DispatchTime.now().uptimeNanoseconds
        let last = lastRelease.load(ordering: .relaxed)
        if now &- last >= 1_000_000_000 {
            if lastRelease.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged { trim() }
            return
        }
        guard releasePending.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            return
        }
        DispatchQueue.global().asyncAfter(deadline: DispatchTime(uptimeNanoseconds: last + 1_000_000_000)) {
            releasePending.store(false, ordering: .relaxed)
            lastRelease.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
            trim()
        }
    }

    private static func trim() {
        #if canImport(Glibc)
            _ = malloc_trim(0)
        #endif
    }
}
