import Dispatch
import Foundation
import PerchLock

#if canImport(Glibc)
    import Glibc
#endif

/// A plugin child's standard input, written by a thread of its own: a request or an answer is
/// queued, and the caller goes on to wait for what comes back.
///
/// Why: a child that stops reading (stuck in a computation, or in a deadlock of its own) fills its
/// pipe, 64 KiB, and a write into a full pipe waits until the child reads. Written on the thread
/// that made the request, under a lock, such a write held that thread (the bots' executor, or on
/// `perch run` an HTTP connection's thread, with every bot and request that thread runs) until the
/// request's timeout ended the child. Now it holds this thread only.
final class PluginInput: Sendable {
    private struct Queue {
        var lines: [Data] = []
        /// Bytes queued or being written.
        var bytes = 0
        var closed = false
    }

    private let queue = Lock(Queue())
    private let ready = DispatchSemaphore(value: 0)

    /// How many bytes may wait for the child before a write is refused (it is not reading).
    static let limit = 16 << 20

    /// Writes to `handle` (closed once ``close()`` is called and what was written has gone, or the
    /// child is gone), from a thread named after `plugin`.
    init(_ handle: FileHandle, plugin: String) {
        let thread = Thread { [queue, ready] in
            // A write to a child that has exited fails with EPIPE instead of raising SIGPIPE, which
            // would end a process that does not ignore it (a plugin author's tests on PerchTesting).
            // SIGPIPE from a write goes to the thread that wrote: blocked here, it stays pending on
            // this thread, and goes with it.
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
            while true {
                ready.wait()
                let (batch, closed) = queue.withLock { queue in
                    let batch = queue.lines
                    queue.lines = []
                    return (batch, queue.closed)
                }
                if closed { break }
                var written = 0
                for line in batch {
                    do {
                        try handle.write(contentsOf: line)
                    } catch {
                        // The child is gone: what comes next is refused.
                        queue.withLock { $0.closed = true }
                        break
                    }
                    written += line.count
                }
                queue.withLock { $0.bytes -= written }
            }
            try? handle.close()
        }
        thread.name = "perch-plugin-\(plugin)-in"
        thread.start()
    }

    /// Queues `line` for the child: false when the child is gone, or more than ``limit`` bytes
    /// already wait for it.
    func write(_ line: Data) -> Bool {
        let queued = queue.withLock { queue -> Bool in
            guard !queue.closed, queue.bytes + line.count <= Self.limit else { return false }
            queue.lines.append(line)
            queue.bytes += line.count
            return true
        }
        if queued { ready.signal() }
        return queued
    }

    /// Drops what waits and closes the child's input once the write in progress, if any, ends.
    func close() {
        queue.withLock { $0.closed = true }
        ready.signal()
    }
}
