import CSched
import Foundation

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// A child process started with `posix_spawn` (``perch_spawn``), in place of Foundation's
/// `Process`: Foundation lists the descriptors open in this process to close them in the child,
/// and its listing copies each directory entry's whole name field, reading past the end of the
/// directory's buffer: with about 1,365 descriptors open (a host with many connections, the
/// tests at their busiest) a child's start crashed the process now and then. Here the child gets
/// its standard input, output and error and nothing else (`closefrom(3)` in the child), every
/// signal at its default, and a process group of its own; a thread of its own waits for its exit.
/// So a pipe another thread makes meanwhile (Foundation's `Pipe` is not close-on-exec) never
/// reaches a child, and children need not take turns to start (Foundation's did).
public final class ChildProcess: Sendable {
    /// How the child ended.
    public enum Termination: Sendable, Equatable {
        /// It exited with this status.
        case exit(Int32)
        /// A signal ended it.
        case signal(Int32)
    }

    public struct SpawnError: Error, CustomStringConvertible {
        public let program: String
        public let code: Int32
        /// Why, in the system's words ("No such file or directory").
        public var reason: String { String(cString: strerror(code)) }
        public var description: String { "cannot start \(program): \(reason)" }
    }

    public let processIdentifier: Int32
    private let ended: Lock<Termination?>
    /// The children of this process not yet seen to end, for ``killAll()``.
    private static let living = Lock<Set<Int32>>([])
    private let exitSeen = DispatchSemaphore(value: 0)

    /// Starts `program` (looked up in `PATH` when it has no slash) with `arguments`.
    /// - Parameters:
    ///   - environment: the child's environment; nil: this process's.
    ///   - directory: where the child starts; nil: here.
    ///   - input, output, error: the descriptors the child gets as 0, 1 and 2; nil: `/dev/null`.
    ///     The caller keeps its own and closes them when it no longer needs them.
    ///   - onExit: called once, on the waiting thread, when the child has ended.
    public init(
        _ program: String, _ arguments: [String] = [], environment: [String: String]? = nil,
        directory: String? = nil, input: Int32? = nil, output: Int32? = nil, error: Int32? = nil,
        onExit: (@Sendable (ChildProcess) -> Void)? = nil
    ) throws(SpawnError) {
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { if null >= 0 { close(null) } }
        let texts = [program] + arguments
        let environmentTexts = environment.map { $0.map { "\($0.key)=\($0.value)" } }
        var pid: Int32 = 0
        let status = withCStrings(texts) { argv in
            withCStrings(environmentTexts ?? []) { envp in
                perch_spawn(
                    &pid, program, argv, environmentTexts == nil ? nil : envp, directory, input ?? null,
                    output ?? null, error ?? null)
            }
        }
        guard status == 0 else { throw SpawnError(program: program, code: status) }
        processIdentifier = pid
        ended = Lock(nil)
        let child = pid
        Self.living.withLock { _ = $0.insert(child) }
        let waiter = Thread { [self] in
            // Waited for without reaping first: until it is reaped its id is no other process's,
            // so it leaves ``living`` and is marked ended (under the locks ``killAll()`` and
            // ``terminate(_:)`` signal under) before the id can be given to another process.
            var info = siginfo_t()
            while waitid(P_PID, id_t(child), &info, WEXITED | WNOWAIT) < 0, errno == EINTR {}
            Self.living.withLock { _ = $0.remove(child) }
            ended.withLock { ended in
                var raw: Int32 = 0
                while waitpid(child, &raw, 0) < 0, errno == EINTR {}
                // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift's Glibc module does not export.
                let signal = raw & 0x7f
                ended = signal == 0 ? .exit((raw >> 8) & 0xff) : .signal(signal)
            }
            exitSeen.signal()
            onExit?(self)
        }
        waiter.name = "perch-child"
        waiter.start()
    }

    /// Whether the child has not been seen to end yet.
    public var isRunning: Bool { ended.withLock { $0 == nil } }

    /// How it ended; nil while it runs.
    public var termination: Termination? { ended.withLock { $0 } }

    /// How it ended, as a log says it: "exited with status 3", "killed by signal 9 (SIGKILL)".
    public var terminationDescription: String {
        switch termination {
        case .exit(let status)?: return "exited with status \(status)"
        case .signal(let number)?:
            let names: [Int32: String] = [
                SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGABRT: "SIGABRT",
                SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGSEGV: "SIGSEGV", SIGPIPE: "SIGPIPE",
                SIGTERM: "SIGTERM",
            ]
            return "killed by signal \(number)" + (names[number].map { " (\($0))" } ?? "")
        case nil: return "running"
        }
    }

    /// Its exit status, or the number of the signal that ended it (as Foundation's
    /// `terminationStatus`); -1 while it runs.
    public var terminationStatus: Int32 {
        switch termination {
        case .exit(let status)?: status
        case .signal(let number)?: number
        case nil: -1
        }
    }

    /// Sends `signal` (SIGTERM by default), unless the child has been seen to end (its id may be
    /// another process's by then).
    public func terminate(_ signal: Int32 = SIGTERM) {
        ended.withLock { ended in
            if ended == nil { _ = kill(processIdentifier, signal) }
        }
    }

    /// Kills every child this process started that has not been seen to end (SIGKILL), with no
    /// wait: for a process about to exit without stopping them (plugins read their requests from
    /// its pipes and would otherwise go on until they next read).
    public static func killAll() {
        living.withLock { children in
            for child in children { _ = kill(child, SIGKILL) }
        }
    }

    /// Blocks the calling thread until the child has ended.
    public func waitForExit() {
        guard isRunning else { return }
        exitSeen.wait()
        exitSeen.signal()
    }
}

/// `strings` as a NULL-ended array of C strings (an `argv` or `envp`), for the length of `body`.
public func withCStrings<T>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> T) -> T {
    let pointers = strings.map { strdup($0) } + [nil]
    defer { pointers.forEach { free($0) } }
    return body(pointers)
}
