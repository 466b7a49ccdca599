import CCurl
import Foundation
import PerchLock

/// A thread with its own libcurl handle, which makes one HTTP request at a time, keeping its
/// connection to the homeserver alive between them.
///
/// Why not URLSession: on Linux each of its requests goes through libcurl's multi interface,
/// Dispatch timers and sources and several thread hops, which cost a bot more CPU per handled
/// message than the whole of a Python bot framework's handling; a blocking `curl_easy_perform` on a
/// thread of its own costs a few tens of microseconds. A lane's thread waits for its next request;
/// a long-poll waits on its own lane, so it never holds up a send.
public final class CurlLane: @unchecked Sendable {
    public struct Answer: Sendable {
        public var status: Int
        public var body: Data
    }

    public struct Failure: Error, Sendable {
        public var reason: String
        public var cancelled: Bool
        /// No answer came in the time given.
        public var timedOut: Bool
    }

    private struct Job {
        var method: String
        var url: String
        /// Header lines ("Name: value"), each ended by a newline.
        var headers: String
        var body: Data?
        var timeoutMilliseconds: Int
        var cancel: CancelFlag
        var done: @Sendable (Result<Answer, Failure>) -> Void
    }

    /// A request's stop flag, read by libcurl's progress callback: kept alive by the request and
    /// by its caller's cancellation handler, whichever lets it go last.
    final class CancelFlag: @unchecked Sendable {
        let pointer = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        init() { pointer.initialize(to: 0) }
        deinit { pointer.deallocate() }
    }

    private let jobs = Lock<(queue: [Job], closed: Bool)>(([], false))
    private let ready = DispatchSemaphore(value: 0)

    private static let initialized: Bool = perch_curl_global_init() == 0

    public init(name: String) {
        _ = Self.initialized
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Makes a request with `headers` (a JSON body's `Content-Type` is set here); returns its
    /// answer (any status), or throws when none came.
    public func perform(
        _ method: String, _ url: String, headers: [(String, String)] = [], body: Data?, timeout: Duration
    ) async throws(Failure) -> Answer {
        // A line break in a value would start a header of its own: it is not sent.
        let lines = headers.filter { !($0.0 + $0.1).contains(where: \.isNewline) }.map { "\($0.0): \($0.1)\n" }
        let milliseconds = Int(
            timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let cancel = CancelFlag()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Answer, Failure>, Never>) in
                let job = Job(
                    method: method, url: url, headers: lines.joined(), body: body,
                    timeoutMilliseconds: max(1, milliseconds), cancel: cancel,
                    done: { continuation.resume(returning: $0) })
                let accepted = jobs.withLock { state -> Bool in
                    guard !state.closed else { return false }
                    state.queue.append(job)
                    return true
                }
                if accepted {
                    ready.signal()
                } else {
                    continuation.resume(
                        returning: .failure(Failure(reason: "closed", cancelled: true, timedOut: false)))
                }
            }
        } onCancel: {
            // The request stops at libcurl's next progress call (at least once a second).
            cancel.pointer.pointee = 1
        }
        return try result.get()
    }

    /// Ends the lane's thread once the requests queued before are done.
    public func close() {
        jobs.withLock { $0.closed = true }
        ready.signal()
    }

    private func run() {
        let handle = perch_curl_new()
        defer { perch_curl_free(handle) }
        var error = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        while true {
            ready.wait()
            let next = jobs.withLock { state -> Job? in
                state.queue.isEmpty ? nil : state.queue.removeFirst()
            }
            guard let job = next else {
                if jobs.withLock({ $0.closed && $0.queue.isEmpty }) { return }
                continue
            }
            var answer = perch_curl_answer(status: 0, body: nil, size: 0, capacity: 0)
            let code: Int32 = job.method.withCString { method in
                job.url.withCString { url in
                    job.headers.withCString { extra in
                        (job.body ?? Data()).withUnsafeBytes { raw in
                            perch_curl_perform(
                                handle, method, url, extra,
                                job.body == nil
                                    ? nil
                                    : raw.baseAddress?.assumingMemoryBound(to: CChar.self)
                                        ?? UnsafePointer<CChar>(bitPattern: 1),
                                job.body?.count ?? 0, job.timeoutMilliseconds, job.cancel.pointer, &answer, &error)
                        }
                    }
                }
            }
            let body = answer.body.map { Data(bytes: $0, count: answer.size) } ?? Data()
            free(answer.body)
            if code == 0 {
                job.done(.success(Answer(status: answer.status, body: body)))
            } else {
                let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                job.done(
                    .failure(
                        Failure(
                            reason: reason, cancelled: code == 42 /* CURLE_ABORTED_BY_CALLBACK */,
                            timedOut: code == 28 /* CURLE_OPERATION_TIMEDOUT */)))
            }
        }
    }
}
