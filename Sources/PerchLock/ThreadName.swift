#if canImport(Glibc)
    import Glibc
#endif

/// Names the calling thread as `top -H`, `perf` and `/proc` show it (the kernel keeps 15 bytes).
///
/// Not `Thread.current.name`: on Linux a name given to a `Thread` before `start` never reaches the
/// thread, and one set from inside did not always either (seen under ThreadSanitizer with several
/// threads starting at once: the thread kept the name it inherited from its creator).
public func nameCurrentThread(_ name: String) {
    let descriptor = open("/proc/thread-self/comm", O_WRONLY)
    guard descriptor >= 0 else { return }
    defer { close(descriptor) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
}
