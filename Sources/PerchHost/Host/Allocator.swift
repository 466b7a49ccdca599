import Dispatch
import Synchronization

#if canImport(Glibc)
    import CMalloc
#endif

/// Process-wide allocator settings for a long-running host.
public enum Allocator {
    /// Keeps glibc from handing freed heap back to the kernel after every burst of frees.
    ///
    /// With its defaults, glibc trims each thread arena's free top with `madvise` as soon as it
    /// passes 128 KiB, and the next request faults the pages back in: a busy HTTP host spends its
    /// time in page faults and `madvise` calls, several a request. Freed memory is kept for reuse up
    /// to 64 MiB per arena; peak RSS does not grow (pages are reused, not added).
    public static func tuneForHost() {
        #if canImport(Glibc)
            _ = mallopt(M_TRIM_THRESHOLD, 64 << 20)
            _ = mallopt(M_TOP_PAD, 4 << 20)
            _ = mallopt(M_MMAP_THRESHOLD, 4 << 20)
        #endif
    }

    /// When ``releaseFreeMemory()`` last ran, in uptime nanoseconds.
    private static let lastRelease = Atomic<UInt64>(0)

    /// Hands the heap's free pages back to the kernel (`malloc_trim`), at most once a second: called
    /// when something that held a lot of memory has let it go (a WebSocket whose client stopped
    /// reading, once it closes), so the process shrinks back after clients leave instead of keeping
    /// up to ``tuneForHost()``'s 64 MiB an arena.
    public static func releaseFreeMemory() {
        let now = DispatchTime.now().uptimeNanoseconds
        let last = lastRelease.load(ordering: .relaxed)
        guard now &- last >= 1_000_000_000,
            lastRelease.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
        else { return }
        #if canImport(Glibc)
            _ = malloc_trim(0)
        #endif
    }
}
