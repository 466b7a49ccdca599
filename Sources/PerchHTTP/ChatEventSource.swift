import CSched
import Dispatch
import Foundation
import PerchChat
import PerchHost
import PerchLock
import PerchService

/// Feeds one SSE connection from the user's event stream. The stream's page loop runs on the
/// connection's own thread, inside ``next(timeout:socket:)``: its task prefers the source's
/// ``ThreadExecutor``, so a commit that wakes the loop wakes that thread directly, which reads the
/// page, writes its frames and sends them (one thread wake a page, not two). While the
/// connection's thread is busy sending, the loop waits: a slow client holds back its own stream,
/// not the buffer's size. The thread sleeps in poll(2) on the executor's wake and the socket, so a
/// client that hangs up ends the stream at once and frees its slot. Once the client is gone, the
/// loop's last steps run on the shared pool.
final class ChatEventSource: EventStreamSource, @unchecked Sendable {
    /// Frames not yet handed to the connection, and whether the stream is over.
    private let state: Lock<(buffer: [UInt8], finished: Bool)>
    private let executor = ThreadExecutor(pollable: ())
    private var task: Task<Void, Never>?
    let metrics: HostMetrics

    /// Streams what `produce` appends (``append(_:)``) after `greeting`, until it returns; it runs
    /// on the connection's thread (see above).
    init(greeting: String, metrics: HostMetrics, produce: @escaping @Sendable (ChatEventSource) async -> Void) {
        self.metrics = metrics
        state = Lock((Array(greeting.utf8), false))
        metrics.increment("perch_sse_connections", by: 1)
        // The task keeps its source until it ends, which `close` makes happen.
        task = Task(executorPreference: executor) { [self] in
            await produce(self)
            self.finish()
        }
    }

    /// Streams `uid`'s events after `after`, as `session`
    /// (``ChatService/followEvents(for:session:after:notifications:_:)``), with the user's
    /// notifications as they are routed, the frames of a page written straight into the buffer.
    convenience init(
        service: ChatService, uid: String, session: String, name: String, after: Int64, notificationsAfter: Int64,
        metrics: HostMetrics
    ) {
        self.init(
            greeting: "event: perch.session\ndata: {\"session\":\(JSONWriter.quoted(name))}\n\n", metrics: metrics
        ) { source in
            try? await service.followEvents(
                for: uid, session: session, after: after, notifications: true, notificationsAfter: notificationsAfter
            ) { page in
                var frames: [UInt8] = []
                if let missed = page.missed {
                    frames += Array("event: perch.gap\ndata: \(PerchAPI.gapJSON(missed))\n\n".utf8)
                }
                guard !page.events.isEmpty || !frames.isEmpty || !page.notifications.isEmpty else { return true }
                for event in page.events {
                    frames += Array("id: \(event.seq)\nevent: \(event.name.rawValue)\ndata: ".utf8)
                    frames += event.jsonBytes
                    frames += [0x0A, 0x0A]
                }
                // No `id:`: a notification is not an event of the log, and must not move the
                // client's Last-Event-ID.
                for record in page.notifications { frames += Self.notificationFrame(record) }
                source.append(frames)
                return true
            }
        }
    }

    /// Streams every user's notifications routed after the outbox row `start` (the app's view of
    /// `GET /v3/notifications/stream`), each with its message as stored.
    convenience init(routedBy service: ChatService, after start: Int64, metrics: HostMetrics) {
        self.init(greeting: ": routed notifications\n\n", metrics: metrics) { source in
            var cursor = start
            while !Task.isCancelled {
                guard let seen = try? await service.store.latestEventSequence(),
                    let records = try? await service.routedNotifications(after: cursor, limit: 1000)
                else { return }
                if let last = records.last?.seq {
                    source.append(records.flatMap(Self.notificationFrame))
                    cursor = last
                    if records.count == 1000 { continue }
                }
                await service.waitForEvents(after: seen)
            }
        }
    }

    /// Streams `uid`'s notifications as they are routed, from the event `after` on, and nothing else
    /// (a user's view of `GET /v3/notifications/stream`).
    convenience init(
        notificationsOf uid: String, after: Int64, notificationsAfter: Int64, service: ChatService, metrics: HostMetrics
    ) {
        self.init(greeting: ": notifications of \(uid)\n\n", metrics: metrics) { source in
            try? await service.followEvents(
                for: uid, after: after, notifications: true, notificationsAfter: notificationsAfter
            ) { page in
                if !page.notifications.isEmpty { source.append(page.notifications.flatMap(Self.notificationFrame)) }
                return true
            }
        }
    }

    static func notificationFrame(_ record: NotificationRecord) -> [UInt8] {
        Array("event: onNotification\ndata: \(record.json)\n\n".utf8)
    }

    func append(_ bytes: [UInt8]) {
        state.withLock { $0.buffer += bytes }
        executor.signal()
    }

    func finish() {
        state.withLock { $0.finished = true }
        executor.signal()
    }

    /// Runs the stream's waiting steps on this (the connection's) thread until there is something
    /// to send, the stream is over or its client hung up (nil), or `timeout` passed (an empty
    /// chunk: a heartbeat).
    func next(timeout: Duration, socket: Int32) -> [UInt8]? {
        let (seconds, attoseconds) = timeout.components
        let deadline =
            DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
        while true {
            let ran = executor.runPending()
            // The frames so far (nil: the stream is over), or none yet.
            let taken = state.withLock { state -> [UInt8]?? in
                if !state.buffer.isEmpty {
                    defer { state.buffer = [] }
                    return .some(state.buffer)
                }
                return state.finished ? .some(nil) : .none
            }
            if let taken { return taken }
            if ran { continue }
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { return [] }
            guard executor.prepareToSleep() else { continue }
            defer { executor.awake() }
            // A client sends nothing on an event stream: its socket turns readable only when it
            // hangs up (or sends what will never be read).
            var descriptors = [
                pollfd(fd: executor.wakeDescriptor!, events: Int16(POLLIN), revents: 0),
                pollfd(fd: socket, events: Int16(POLLIN) | perch_pollrdhup(), revents: 0),
            ]
            let milliseconds = Int32(clamping: (deadline - now) / 1_000_000 + 1)
            guard poll(&descriptors, socket >= 0 ? 2 : 1, milliseconds) > 0 else { continue }
            if descriptors[1].revents & (perch_pollrdhup() | Int16(POLLHUP | POLLERR)) != 0 { return nil }
        }
    }

    /// The client went away: the loop is cancelled, and its remaining steps run on the shared pool.
    func close() {
        executor.stop()
        task?.cancel()
        metrics.increment("perch_sse_connections", by: -1)
    }
}
