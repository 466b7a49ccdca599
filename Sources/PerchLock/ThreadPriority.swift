import CSched

/// Sets the calling thread's nice value (Linux keeps one per thread; raising it needs no
/// privilege): a thread at 19 gets the CPU only when no thread at 0 wants it. False when refused.
@discardableResult
public func setCurrentThreadNice(_ nice: Int32) -> Bool {
    perch_set_thread_nice(nice) == 0
}

/// The calling thread's nice value.
public func currentThreadNice() -> Int32 {
    perch_thread_nice()
}
