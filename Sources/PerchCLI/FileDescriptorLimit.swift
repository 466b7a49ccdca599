#if canImport(Glibc)
    import Glibc
#endif

/// The process's limit on open files (`ulimit -n`), which bounds the HTTP API's connections.
enum FileDescriptorLimit {
    /// Descriptors the host uses besides connections: the database and its log, plugins' pipes,
    /// media being read or written, the listening socket.
    static let besidesConnections = 256

    /// Raises the soft limit to the hard one (as Go's runtime and systemd's services do: the soft
    /// limit of 1,024 is a default for programs that use `select`, which Perch does not) and answers
    /// the limit now in force. An unlimited hard limit is more than Linux lets a process open
    /// (`fs.nr_open`, 1,048,576 by default), so the soft one then goes as far as that.
    static func raise() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1_024 }
        for target in [limit.rlim_max, min(limit.rlim_max, 1 << 20)] where limit.rlim_cur < target {
            var raised = limit
            raised.rlim_cur = target
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 {
                limit = raised
                break
            }
        }
        return limit.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }

    /// What is wrong with serving `connections` under a limit of `limit` open files; nil when it
    /// fits.
    static func shortfall(connections: Int, limit: Int) -> String? {
        let needed = connections + besidesConnections
        guard limit < needed else { return nil }
        return "the open-file limit (ulimit -n) is \(limit), and server.maxStreams needs about \(needed): "
            + "raise the limit (LimitNOFILE= in a systemd unit, --ulimit nofile= for docker) or lower "
            + "server.maxStreams"
    }
}
