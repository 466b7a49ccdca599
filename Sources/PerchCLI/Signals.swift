import Dispatch
import Foundation
import PerchLock

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// What a signal or a file change asks the host to do.
enum HostSignal: Sendable {
    case stop
    case reload
}

/// SIGTERM/SIGINT (stop) and SIGHUP (reload) as an async sequence of requests.
final class SignalWatcher: Sendable {
    private let stream: AsyncStream<HostSignal>
    private let sources: Lock<[DispatchSourceSignal]>

    init() {
        var continuation: AsyncStream<HostSignal>.Continuation!
        stream = AsyncStream { continuation = $0 }
        let queue = DispatchQueue(label: "perch.signals")
        var sources: [DispatchSourceSignal] = []
        for (number, request) in [(SIGTERM, HostSignal.stop), (SIGINT, .stop), (SIGHUP, .reload)] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            let sink = continuation!
            source.setEventHandler { sink.yield(request) }
            source.resume()
            sources.append(source)
        }
        self.sources = Lock(sources)
    }

    /// The next request: a signal, or a reload when watched files changed.
    func next(orFileChange watcher: FileWatcher) async -> HostSignal {
        await withTaskGroup(of: HostSignal?.self) { group in
            group.addTask {
                for await request in self.stream { return request }
                return .stop
            }
            group.addTask {
                await watcher.nextChange()
                return Task.isCancelled ? nil : .reload
            }
            let first = await group.next() ?? .stop
            group.cancelAll()
            return first ?? .stop
        }
    }
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
            let files =
                isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).map { path + "/" + $0 } : [path]
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
