import Dispatch
import Foundation
import PerchLock

#if canImport(Glibc)
    import Glibc
#endif

/// A plugin child's standard input. A line is written at once, on the caller's thread, when
/// nothing waits before it and the pipe takes it whole without waiting; otherwise it is queued for
/// a thread of its own, and the caller goes on to wait for what comes back.
///
/// Why the thread: a child that stops reading (stuck in a computation, or in a deadlock of its own)
/// fills its pipe, 64 KiB, and a write into a full pipe waits until the child reads. Written on the
/// thread that made the request, such a write held that thread (the bots' executor, or on
/// `perch run` an HTTP connection's thread, with every bot and request that thread runs) until the
/// request's timeout ended the child. The pipe is non-blocking on the host's side, so the caller's
/// write never waits: what the pipe does not take goes to the thread, which waits for room.
///
/// Why the write at once: handing every line to the thread cost the round trip of a JSON-RPC call
/// a thread wake-up, a third of it on a two-core machine.
final class PluginInput: Sendable {
    private struct Queue {
        var lines: [Data] = []
        /// Bytes queued or being written by the thread.
        var bytes = 0
        var closed = false
    }

    private let queue = Lock(Queue())
    private let ready = DispatchSemaphore(value: 0)
    private let descriptor: Int32

    /// How many bytes may wait for the child before a write is refused (it is not reading).
    static let limit = 16 << 20

    /// Writes to `handle` (closed once ``close()`` is called and what was written has gone, or the
    /// child is gone), from the callers' threads and a thread named after `plugin`.
    init(_ handle: FileHandle, plugin: String) {
        let descriptor = handle.fileDescriptor
        self.descriptor = descriptor
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        let thread = Thread { [queue, ready] in
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
                    guard Self.writeAll(line, to: descriptor) else {
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

    /// Queues `line` for the child, or writes it at once when nothing waits before it: false when
    /// the child is gone, or more than ``limit`` bytes already wait for it.
    func write(_ line: Data) -> Bool {
        let (accepted, queued) = queue.withLock { queue -> (Bool, Bool) in
            guard !queue.closed, queue.bytes + line.count <= Self.limit else { return (false, false) }
            var rest = line
            if queue.bytes == 0 {
                // Under the lock, so no line can be queued or written before this one's rest.
                switch Self.writeNow(line, to: descriptor) {
                case .none:
                    queue.closed = true
                    return (false, false)
                case .some(let count) where count == line.count: return (true, false)
                case .some(let count): rest = line.dropFirst(count)
                }
            }
            queue.lines.append(rest)
            queue.bytes += rest.count
            return (true, true)
        }
        if queued { ready.signal() }
        return accepted
    }

    /// Bytes queued for the thread, or being written by it.
    var pending: Int { queue.withLock { $0.bytes } }

    /// Drops what waits and closes the child's input once the write in progress, if any, ends.
    func close() {
        queue.withLock { $0.closed = true }
        ready.signal()
    }

    /// Writes what the pipe takes of `line` without waiting: the bytes written (0 when it is
    /// full), or nil when the child is gone.
    ///
    /// A write to a child that has exited fails with EPIPE instead of raising SIGPIPE, which would
    /// end a process that does not ignore it (a plugin author's tests on PerchTesting): SIGPIPE
    /// goes to the thread that wrote, so it is blocked around the write and, when raised, taken.
    private static func writeNow(_ line: Data, to descriptor: Int32) -> Int? {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        while true {
            let count = line.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count >= 0 { return count }
            switch errno {
            case EINTR: continue
            case EAGAIN: return 0
            case EPIPE:
                var zero = timespec()
                _ = sigtimedwait(&pipeSignal, nil, &zero)
                return nil
            default: return nil
            }
        }
    }

    /// Writes all of `line`, waiting for room in the pipe as long as it takes: false when the
    /// child is gone.
    private static func writeAll(_ line: Data, to descriptor: Int32) -> Bool {
        var offset = 0
        while offset < line.count {
            guard let count = writeNow(line.dropFirst(offset), to: descriptor) else { return false }
            offset += count
            if count == 0 {
                var room = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                _ = poll(&room, 1, -1)
            }
        }
        return true
    }
}
