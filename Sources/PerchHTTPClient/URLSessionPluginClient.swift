import Foundation
import PerchHost

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The host's HTTP client for plugins reached over HTTP, on URLSession (libcurl underneath).
public struct URLSessionPluginClient: PluginHTTPClient {
    /// One session for every post: a session lives until it is invalidated, so one per plugin would
    /// stay behind at every reload.
    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["User-Agent": "Perch"]
        return URLSession(configuration: configuration)
    }()

    public init() {}

    public func post(_ url: URL, headers: [String: String], body: [UInt8], within time: Duration)
        async throws(PluginHTTPFailure) -> (status: Int, body: [UInt8])
    {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = Data(body)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        // The deadline is the timer's below. URLSession's own timeout is the longest wait between two
        // reads (an answer sent a byte at a time never trips it), and swift-corelibs-foundation hands
        // libcurl whole seconds, so an interval under one second times out at once: it is kept past
        // the deadline.
        request.timeoutInterval = Double(time.components.seconds + 2)
        let call = Task { try await Self.session.data(for: request) }
        // On Dispatch's threads, not the cooperative pool: a host whose pool is busy would keep a
        // timer task waiting past the deadline, and the post's late answer would be taken.
        let timer = DispatchWorkItem { call.cancel() }
        let nanoseconds = time.components.seconds * 1_000_000_000 + time.components.attoseconds / 1_000_000_000
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(max(0, nanoseconds))), execute: timer)
        defer { timer.cancel() }
        do {
            let (data, response) = try await withTaskCancellationHandler {
                try await call.value
            } onCancel: {
                call.cancel()
            }
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, Array(data))
        } catch {
            // Cancelled by the caller (the host stopping), or by the timer: the post's own task is
            // cancelled either way, and before it started it throws CancellationError, not a
            // URLError (a full parallel run hit that: the timeout was told as the host stopping).
            if Task.isCancelled { throw .cancelled }
            if error is CancellationError { throw .timedOut }
            if let error = error as? URLError, error.code == .timedOut || error.code == .cancelled {
                throw .timedOut
            }
            throw .unreachable(error.localizedDescription)
        }
    }
}
