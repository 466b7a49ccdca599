import CSched
import Foundation
import PerchConfig
import PerchLock

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// What a signal or a file change asks the host to do.
enum HostSignal: Sendable {
    case stop
    case reload
}

/// SIGTERM/SIGINT (stop), SIGHUP (reload) and changes of the watched files (reload), as one
/// sequence of requests, in the order they came.
///
/// The signals are caught by a handler that writes them to a pipe, which a thread of the
/// watcher's reads: a signal is on the pipe from the moment the watcher is made, whichever
/// thread took it. (They were ignored, each with a libdispatch signal source, which takes over
/// the signal only when libdispatch gets to register it, after `resume()` has returned: one that
/// came in between could be dropped.) The file watcher runs beside it and adds its reloads to the same
/// sequence. (The next request was the first of a signal and a file change, the other's wait
/// cancelled; a cancelled wait ends an `AsyncStream`, so after a reload that a file change asked
/// for, the next request was always a stop: saving config.yaml stopped the host.)
final class SignalWatcher: Sendable {
    /// The requests, for one loop to read.
    let requests: AsyncStream<HostSignal>
    private let sink: AsyncStream<HostSignal>.Continuation

    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        var description: String { "cannot catch SIGTERM, SIGINT and SIGHUP: \(String(cString: strerror(code)))" }
    }

    /// Catches the signals from now on (once a process), and reloads when `files` change. The first
    /// SIGTERM or SIGINT is a stop request; a second one, while that stop waits (for another
    /// process's write lock on the database, say) and at least ``secondStopAfter`` after the first,
    /// calls `onSecondStop` with its number instead, which ends the process (Ctrl-C twice, as most
    /// servers take it). Nothing acknowledged is lost by that: every acknowledged write is already
    /// committed, as after `kill -9`.
    init(files: FileWatcher, onSecondStop: @escaping @Sendable (Int32) -> Void) throws(Failure) {
        (requests, sink) = AsyncStream.makeStream(of: HostSignal.self)
        let descriptor = [SIGTERM, SIGINT, SIGHUP].withUnsafeBufferPointer {
            perch_signal_pipe($0.baseAddress, Int32($0.count))
        }
        guard descriptor >= 0 else { throw Failure(code: errno) }
        let sink = sink
        let reader = Thread {
            var number: UInt8 = 0
            var firstStop: ContinuousClock.Instant?
            while true {
                let count = read(descriptor, &number, 1)
                if count < 0, errno == EINTR { continue }
                guard count == 1 else { return }
                if Int32(number) == SIGHUP {
                    sink.yield(.reload)
                    continue
                }
                guard let first = firstStop else {
                    firstStop = .now
                    sink.yield(.stop)
                    continue
                }
                // The same request twice: `timeout` and a kill of the process group send it to the
                // process and again to its group, microseconds apart.
                if ContinuousClock.now - first >= Self.secondStopAfter { onSecondStop(Int32(number)) }
            }
        }
        reader.name = "perch-signals"
        reader.start()
        let watching = Task {
            while !Task.isCancelled {
                await files.nextChange()
                if !Task.isCancelled { sink.yield(.reload) }
            }
        }
        sink.onTermination = { _ in watching.cancel() }
    }

    /// How long after the first stop request another one counts as a second: sooner, it is the
    /// same request delivered twice.
    static let secondStopAfter = Duration.seconds(1)

    /// Stops watching the files (the signals stay caught: a second SIGTERM or SIGINT during the
    /// stop goes to `onSecondStop`).
    func finish() { sink.finish() }
}

/// Polls the modification times of config.yaml and the bot files (once a second); cheap and
/// portable, and a burst of saves gives one reload.
public final class FileWatcher: Sendable {
    let paths: [String]
    private let last: Lock<[String: Date]>

    public init(paths: [String]) {
        self.paths = paths
        last = Lock([:])
        last.withLock { $0 = Self.snapshot(paths) }
    }

    static func snapshot(_ paths: [String]) -> [String: Date] {
        var times: [String: Date] = [:]
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            // Of a directory, the bot files only: the temporary file of an atomic write (an
            // editor's save) appeared in one look and was gone at the next, two reloads for one save.
            let files =
                isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter(
                    ConfigurationLoader.isBotFile
                ).map { path + "/" + $0 } : [path]
            for file in files {
                times[file] = (try? FileManager.default.attributesOfItem(atPath: file))?[.modificationDate] as? Date
            }
        }
        return times
    }

    public func nextChange() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            let now = Self.snapshot(paths)
            let changed = last.withLock { previous -> Bool in
                defer { previous = now }
                return previous != now
            }
            if changed { return }
        }
    }
}
