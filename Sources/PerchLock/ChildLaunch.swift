/// One child process started at a time in this process, its pipes made inside the same turn.
///
/// Why: Foundation's `Process` makes its pipes and the socket it watches a child's exit on without
/// close-on-exec, and keeps them out of a child by closing, in that child, the descriptors open
/// when it lists them. A pipe made by another thread between that list and the spawn goes to the
/// wrong child, and lives as long as it does: the pipe's reader sees no end of file, and the
/// other child's exit is not seen (its socket stays open), until that long-lived child exits. Two
/// plugins started at once (two bots' first events) could so hide one's crash behind the other,
/// and one test's short command wait for another test's host. Taking turns here, the pipes and the
/// spawn of one child come between those of any other. (A ``ChildProcess`` gets no descriptor but
/// its three whatever else is open, and the host, the tests and the benchmarks start every child
/// so: the turn matters again only if a Foundation `Process` comes back.)
public enum ChildLaunch {
    private static let turn = Lock(())

    /// Runs `body`, which makes a child's pipes and starts it, in its turn.
    public static func inTurn<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try turn.withLock { _ throws(E) -> T in try body() }
    }
}
