import Foundation
import PerchChat
import PerchLock
import PerchService
import PerchYAML

/// An out-of-process plugin in any language: JSON-RPC 2.0, one JSON object per line, on the
/// child's stdin and stdout.
///
/// The host starts the child when it starts the bot (``start(_:)``) and sends `initialize`
/// (`{"bot", "plugin", "config"}`), again after each restart of the child; then one request per
/// event: `event` for every event the bot hears, `handle` for a rule's `plugin:` action; and
/// `stop` when the host stops the bot (``stop()``). Params carry `event`
/// (the listener callback's name, sequence and message as JSON), `bot`, `captures` and `command`.
/// The result may hold `actions`, a list in the bot-file vocabulary:
/// `[{"reply": "text"}, {"quote_reply": "text"}, {"pin": {"as": "app_system"}}, "delete"]`.
///
/// While it handles a request, the plugin may call the host (``hostCall(_:_:_:)``): a request of
/// its own with method `host.<action>` (`host.reply`, `host.pin`, ... the bot-file vocabulary),
/// `host.send`, `host.messages`, `host.threads` or `host.storage.*`, with `params.context` set to
/// the id of the host's request it is handling (without it, the call acts outside any event, as a
/// Swift plugin's ``PluginEnvironment`` does). The host answers each.
///
/// Supervised: a crash is logged and the plugin restarted with backoff (0.1 s doubling to 10 s); a
/// request past `timeout_ms` is abandoned and counted, and the child, presumed hung, is killed and
/// restarted on the next event; lines that are not JSON are logged and skipped. None of it stops
/// any other bot.
// `@unchecked Sendable`: every mutable part (the child process, its pipes, pending requests,
// contexts, hooks) sits behind a lock; the rest is immutable.
final class ExternalPlugin: BotPlugin, @unchecked Sendable {
    typealias Configuration = NoConfiguration
    static let name = "external"

    let pluginName: String
    let command: [String]
    let timeout: Duration
    let config: JSONValue
    let state = Lock<State>(State())
    /// Contexts of the host's requests in flight, by request id, for the plugin's own calls.
    private let contexts = Lock<[Int: BotContext]>([:])
    /// Set by ``start(_:)``, before the first event.
    let environment = Lock<PluginEnvironment?>(nil)
    /// What the child writes that the host logs (its stderr lines, the stdout lines that are not the
    /// protocol): 100 lines in 10 seconds, then one line with the count of those held back, so a
    /// plugin writing in a loop cannot flood the host's log (`perch_plugin_output_lines_total`
    /// counts every line).
    private let outputLines = RepeatedWarnings(window: 10, burst: 100)

    /// Whether a line of the child's output of `kind` is to be logged now, and the suffix that says
    /// how many were held back; counted either way.
    private func admitOutput(_ kind: String) -> String? {
        metrics?.increment("perch_plugin_output_lines_total", ["plugin": pluginName, "stream": kind])
        return outputLines.suffix(kind, at: Double(DispatchTime.now().uptimeNanoseconds) / 1e9)
    }

    struct State {
        var process: ChildProcess?
        var input: PluginInput?
        var nextId = 0
        var pending: [Int: CheckedContinuation<JSONValue, any Error>] = [:]
        var restarts = 0
        var notBefore: ContinuousClock.Instant?
        /// Set by ``stop()``: no child is started again.
        var stopped = false
        /// Watches the plugin's files while it runs (``watchFiles()``).
        var watcher: Task<Void, Never>?
        /// Whether the child has answered its `initialize`: requests wait for it until then.
        var ready = false
        /// The start of a child in progress, which every request arriving meanwhile waits on.
        var launch: Task<PluginInput, any Error>?
        /// The events the child asked for in its `initialize` answer (`events`); nil, every event.
        var events: Set<String>?

        /// Drops the current child: counts a restart, sets the backoff (0.1 s doubling to 10 s) and
        /// hands back the requests that were waiting on it.
        mutating func forget() -> ([CheckedContinuation<JSONValue, any Error>], Double) {
            process = nil
            ready = false
            input?.close()
            input = nil
            restarts += 1
            let delay = min(10, 0.1 * pow(2, Double(min(restarts - 1, 7))))
            notBefore = ContinuousClock.now + .milliseconds(Int(delay * 1000))
            let orphans = Array(pending.values)
            pending.removeAll()
            return (orphans, delay)
        }
    }

    struct PluginFailure: Error, CustomStringConvertible {
        var description: String
        /// Whether the plugin answered it (a JSON-RPC error), rather than the host concluding it.
        var isAnswer = false
    }

    let workingDirectory: String?

    init(name: String, command: [String], timeoutMilliseconds: Int, config: JSONValue, workingDirectory: String? = nil)
    {
        self.workingDirectory = workingDirectory
        pluginName = name
        self.command = command
        timeout = .milliseconds(timeoutMilliseconds)
        self.config = config
    }

    /// Whether `replacement` starts the same child as this one (the same command, timeout, config
    /// and working directory): a reload keeps this one, and its child, in its place, so its
    /// requests in flight are answered and a plugin that starts slowly does not start again
    /// because another bot's file changed.
    func continues(as replacement: any BotPlugin) -> Bool {
        guard let other = replacement as? ExternalPlugin else { return false }
        return pluginName == other.pluginName && command == other.command && timeout == other.timeout
            && config == other.config && workingDirectory == other.workingDirectory
    }

    required convenience init(configuration: NoConfiguration) throws {
        throw PluginFailure(description: "external plugins are created from `exec`")
    }

    var logger: HostLogger? { environment.withLock { $0?.logger } }
    var metrics: HostMetrics? { environment.withLock { $0?.metrics } }

    // MARK: Hooks

    func handle(_ context: BotContext) async throws { try await call("handle", context) }

    /// `event` for every event the bot hears, but a change of a thread subscription, which is
    /// `threadSubscriptionChanged` with `{bot, parentMessageId, uid, isSubscribed, event}`.
    func onEvent(_ context: BotContext) async throws {
        let name = context.event.name
        // The host calls it only for the events it ``hears(_:)``.
        guard name == .threadSubscribed || name == .threadUnsubscribed else { return try await call("event", context) }
        guard let parent = context.event.message?.id, let uid = context.event.actor else { return }
        var params = Self.params(context)
        params["parentMessageId"] = .number(Double(parent))
        params["uid"] = .string(uid)
        params["isSubscribed"] = .bool(name == .threadSubscribed)
        _ = try await request("threadSubscriptionChanged", params: .object(params))
    }

    /// The events the child listed in its `initialize` answer, or every event without a list (or
    /// before it answered); a change of a thread subscription always (`threadSubscriptionChanged`).
    /// A plugin that listed the events it handles is not asked about the others: a command plugin
    /// costs a busy room nothing but its commands.
    func hears(_ name: EventName) -> Bool {
        if name == .threadSubscribed || name == .threadUnsubscribed { return true }
        guard let wanted = state.withLock({ $0.events }) else { return true }
        return wanted.contains(name.rawValue)
    }

    /// `notification` with `{bot, plugin, notification}`; the answer's result is not read.
    func onNotification(_ notification: NotificationRecord, bot: BotIdentity) async throws {
        let json = (try? JSONValue(parsing: notification.json)) ?? .null
        _ = try await request(
            "notification",
            params: .object([
                "bot": .object(["name": .string(bot.name), "uid": .string(bot.uid)]),
                "plugin": .string(pluginName), "notification": json,
            ]))
    }

    private func call(_ method: String, _ context: BotContext) async throws {
        let result = try await request(
            method, params: .object(Self.params(context, event: false)), event: context.event.json, context: context)
        try await Self.run(result, context)
    }

    /// The params of a request about `context`'s event: `bot`, `event` (unless `event` is false),
    /// `captures`, `command`.
    static func params(_ context: BotContext, event: Bool = true) -> [String: JSONValue] {
        var params: [String: JSONValue] = [
            "bot": .object(["name": .string(context.bot.name), "uid": .string(context.bot.uid)]),
            "captures": .object(context.captures.mapValues(JSONValue.string)),
        ]
        if event { params["event"] = eventJSON(context.event) }
        if let command = context.command {
            params["command"] = .object(["name": .string(command.name), "args": .string(command.args)])
        }
        return params
    }

    // MARK: JSON-RPC

    /// Sends a request and waits for its answer, within `timeout` (the plugin's by default): past
    /// it the request is abandoned, and with `restartsOnTimeout` the child, presumed hung, is
    /// restarted. `event`, JSON as the event log has it, is written into the params as `event`
    /// as it is.
    func request(
        _ method: String, params: JSONValue, event: String? = nil, context: BotContext? = nil,
        timeout: Duration? = nil,
        restartsOnTimeout: Bool = true, on given: PluginInput? = nil
    ) async throws -> JSONValue {
        let input: PluginInput
        if let given { input = given } else { input = try await running(launching: method != "stop") }
        let id = state.withLock { state -> Int in
            state.nextId += 1
            return state.nextId
        }
        var parameters = params
        if case .object(var object) = params {
            if let bot = environment.withLock({ $0?.bot }) { object["bot"] = Self.json(of: bot) }
            if let context {
                object["context"] = .number(Double(id))
                contexts.withLock { $0[id] = context }
            }
            parameters = .object(object)
        }
        defer { contexts.withLock { _ = $0.removeValue(forKey: id) } }
        var writer = JSONWriter()
        writer.raw("{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":")
        writer.string(method)
        writer.raw(",\"params\":")
        if let event, case .object(let members) = parameters, !members.isEmpty {
            // Read into a JSONValue only to be written again, the event took 17 µs of a call.
            var others = JSONWriter()
            others.value(parameters)
            writer.raw(String(others.output.dropLast()))
            writer.raw(",\"event\":")
            writer.raw(event)
            writer.raw("}")
        } else {
            writer.value(parameters)
        }
        writer.raw("}\n")
        let line = writer.output
        let timeout = timeout ?? self.timeout
        // A cancelled request (the host stopping, or reloading its bots) is abandoned at once: a
        // stuck child held the host's stop until the request's timeout, up to ten minutes.
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                state.withLock { $0.pending[id] = continuation }
                guard !Task.isCancelled else {
                    fail(id, CancellationError())
                    return
                }
                guard input.write(Data(line.utf8)) else {
                    fail(id, PluginFailure(description: "cannot write to the plugin: it has exited, or is not reading"))
                    // Started again at the next request, as after a crash whose exit is not reported
                    // yet (without this, every request failed here until it was).
                    if dropChild() { metrics?.increment("perch_plugin_restarts_total", ["plugin": pluginName]) }
                    return
                }
                Task {
                    try? await Task.sleep(for: timeout)
                    if self.fail(id, PluginFailure(description: "timed out after \(timeout)")), restartsOnTimeout {
                        self.metrics?.increment("perch_plugin_timeouts_total", ["plugin": self.pluginName])
                        self.logger?.warning("plugin \(self.pluginName) timed out; restarting it")
                        // A restart, as after a crash: a hung child, or a crashed one whose exit has
                        // not been reported yet (its report then finds the child already replaced).
                        if self.dropChild() {
                            self.metrics?.increment("perch_plugin_restarts_total", ["plugin": self.pluginName])
                        }
                    }
                }
            }
        } onCancel: {
            fail(id, CancellationError())
        }
    }

    /// Resumes a pending request with an error; false when it was already answered.
    @discardableResult
    private func fail(_ id: Int, _ error: any Error) -> Bool {
        guard let continuation = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return false }
        continuation.resume(throwing: error)
        return true
    }

    /// The child's stdin, starting (or restarting, after the backoff) the child when needed and
    /// `launching`.
    /// - Throws: ``PluginFailure`` once the plugin is stopped, or when the child cannot start.
    func running(launching: Bool = true) async throws -> PluginInput {
        enum Next {
            case ready(PluginInput)
            case wait(Task<PluginInput, any Error>)
            case stopped
        }
        // One start at a time: the requests that arrive while a child starts wait for its
        // `initialize` to be answered, and none is written before it.
        let next = state.withLock { state -> Next in
            if state.ready, state.process?.isRunning == true, let input = state.input { return .ready(input) }
            if let launch = state.launch { return .wait(launch) }
            if state.stopped || !launching { return .stopped }
            let launch = Task { try await self.launch() }
            state.launch = launch
            return .wait(launch)
        }
        switch next {
        case .ready(let input): return input
        case .wait(let launch): return try await launch.value
        case .stopped: throw PluginFailure(description: "the plugin was stopped")
        }
    }

    /// Starts a child (after the backoff) and initializes it. A child that does not answer its
    /// `initialize` is ended.
    private func launch() async throws -> PluginInput {
        defer { state.withLock { $0.launch = nil } }
        if let wait = state.withLock({ $0.notBefore }), wait > ContinuousClock.now { try await Task.sleep(until: wait) }
        let input = try start()
        let answer: JSONValue
        do {
            // Starting an interpreter can take longer than handling an event: initialize gets 10 s at least.
            answer = try await request(
                "initialize", params: .object(["config": config, "plugin": .string(pluginName)]),
                timeout: max(timeout, .seconds(10)), on: input)
        } catch {
            if state.withLock({ $0.input === input }) { dropChild() }
            throw error
        }
        let events = wantedEvents(answer)
        state.withLock { state in
            guard state.input === input else { return }
            state.ready = true
            state.events = events
        }
        return input
    }

    /// The events an `initialize` answer asks for: its `events`, a list of listener names; nil
    /// (every event) without one. A list that is not one of names, or that names an event there is
    /// not, is logged; the plugin then hears every event, or the names there are.
    private func wantedEvents(_ answer: JSONValue) -> Set<String>? {
        guard let given = answer["events"], given != .null else { return nil }
        guard case .array(let items) = given, case let names = items.compactMap(\.stringValue),
            names.count == items.count
        else {
            logger?.warning(
                "plugin \(pluginName) answered initialize with events that are not a list of names; "
                    + "it hears every event")
            return nil
        }
        let known = Set(EventName.allCases.map(\.rawValue))
        let unknown = names.filter { !known.contains($0) }
        if !unknown.isEmpty {
            logger?.warning(
                "plugin \(pluginName) asked for events there are not: \(unknown.joined(separator: ", ")); "
                    + "they are \(known.sorted().joined(separator: ", "))")
        }
        return Set(names)
    }

    private func start() throws -> PluginInput {
        // Every signal back to its default for the child (``ChildProcess``): the host ignores
        // SIGPIPE (a write to a reader gone is an error to handle, not the end of the host), and an
        // ignored signal stays ignored in the programs a process starts, so `producer | head` in a
        // shell plugin went on writing into the closed pipe.
        let directory = workingDirectory.flatMap { $0.isEmpty ? nil : $0 }
        let (stdin, stdout, stderr) = (Pipe(), Pipe(), Pipe())
        let process: ChildProcess
        do {
            process = try ChildProcess(
                command[0], Array(command.dropFirst()), directory: directory,
                input: stdin.fileHandleForReading.fileDescriptor, output: stdout.fileHandleForWriting.fileDescriptor,
                error: stderr.fileHandleForWriting.fileDescriptor
            ) { [weak self] finished in self?.exited(finished) }
        } catch {
            throw PluginFailure(description: "cannot start \(command.joined(separator: " ")): \(error.reason)")
        }
        // The child's ends are the child's: its exit must end the reader's pipe.
        try? stdin.fileHandleForReading.close()
        try? stdout.fileHandleForWriting.close()
        try? stderr.fileHandleForWriting.close()
        let input = PluginInput(stdin.fileHandleForWriting, plugin: pluginName)
        state.withLock { state in
            state.process = process
            state.input = input
        }
        let reader = Thread { [weak self] in self?.read(stdout.fileHandleForReading, process: process) }
        reader.name = "perch-plugin-\(pluginName)"
        reader.start()
        // The child's stderr goes to the host's log, line by line.
        let errors = Thread { [weak self, pluginName] in
            Self.readLines(stderr.fileHandleForReading, logger: self?.logger, plugin: pluginName) { line in
                guard let self, let more = self.admitOutput("stderr") else { return }
                self.logger?.info("plugin \(pluginName) stderr: \(String(decoding: line, as: UTF8.self))\(more)")
            }
        }
        errors.name = "perch-plugin-\(pluginName)-stderr"
        errors.start()
        logger?.info("plugin \(pluginName) started", ["pid": String(process.processIdentifier)])
        return input
    }

    private func read(_ handle: FileHandle, process: ChildProcess) {
        Self.readLines(handle, logger: logger, plugin: pluginName) { [weak self] line in self?.receive(line) }
    }

    /// Calls `line` with each line the child writes until it closes the pipe; a line over 16 MiB is
    /// dropped with a warning.
    static func readLines(_ handle: FileHandle, logger: HostLogger?, plugin: String, _ line: (Data) -> Void) {
        var buffer = Data()
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { return }
            buffer.append(chunk)
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                line(Data(buffer[buffer.startIndex..<newline]))
                buffer.removeSubrange(buffer.startIndex...newline)
            }
            if buffer.count > 16 << 20 {
                logger?.warning("plugin \(plugin) wrote a line over 16 MiB; dropped")
                buffer.removeAll()
            }
        }
    }

    /// A line as a log shows it: its first 200 characters in quotes, control characters escaped,
    /// and its length when it is longer.
    static func shown(_ line: Data) -> String {
        let head = String(decoding: line.prefix(1024), as: UTF8.self).unicodeScalars
        var shown = ""
        for scalar in head.prefix(200) {
            shown += scalar.value < 0x20 || scalar.value == 0x7F ? scalar.escaped(asASCII: true) : String(scalar)
        }
        let cut = head.count > 200 || line.count > 1024
        return "\"" + shown + (cut ? "…\" (\(line.count) bytes)" : "\"")
    }

    private func receive(_ line: Data) {
        // Decoded once: a call of the plugin's own (it has a method), else a response (a numeric id).
        let message = try? JSONValue(parsing: String(decoding: line, as: UTF8.self))
        if case .object(let object)? = message, case .string(let method)? = object["method"] {
            let id = object["id"] ?? .null
            let params = object["params"] ?? .null
            Task { await self.answer(id: id, method: method, params: params) }
            return
        }
        guard case .object(let object)? = message, case .number(let number)? = object["id"],
            let id = Int(exactly: number)
        else {
            metrics?.increment("perch_plugin_garbage_lines_total", ["plugin": pluginName])
            if let more = admitOutput("stdout") {
                logger?.warning(
                    "plugin \(pluginName) wrote a line that is not a JSON-RPC response; skipped: "
                        + Self.shown(line) + more)
            }
            return
        }
        guard let continuation = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return }
        if let error = object["error"] {
            continuation.resume(
                throwing: PluginFailure(
                    description: "plugin error: \(error["message"]?.stringValue ?? "?")", isAnswer: true))
        } else {
            continuation.resume(returning: object["result"] ?? .null)
        }
    }

    /// Runs a call the plugin made to the host and writes the answer.
    private func answer(id: JSONValue, method: String, params: JSONValue) async {
        var writer = JSONWriter()
        writer.raw("{\"jsonrpc\":\"2.0\",\"id\":")
        writer.value(id)
        do {
            let context = try callContext(params)
            let result = try await Self.hostCall(method, params, context)
            writer.raw(",\"result\":")
            writer.value(result)
        } catch {
            let message: String
            var data: JSONValue = .null
            if let chat = error as? ChatError {
                message = chat.message
                // The code and its errorParams, as the HTTP API's `details` has them.
                data = .object(["code": .string(chat.code.rawValue), "params": .object(chat.params.mapValues(\.json))])
            } else {
                message = "\(error)"
            }
            writer.raw(",\"error\":")
            writer.value(.object(["code": .number(-32000), "message": .string(message), "data": data]))
        }
        writer.raw("}\n")
        let line = writer.output
        _ = state.withLock { $0.input }?.write(Data(line.utf8))
    }

    /// The context a call of the plugin's acts in: the host's request that `params.context` names,
    /// or, without one, none (the plugin acting on its own, as a Swift plugin's environment does).
    /// - Throws: ``PluginFailure`` for a `context` that names no request in flight, or a call
    ///   before the plugin has started.
    private func callContext(_ params: JSONValue) throws -> BotContext {
        if let given = params["context"], given != .null {
            guard case .number(let number) = given, let key = Int(exactly: number),
                let context = contexts.withLock({ $0[key] })
            else { throw PluginFailure(description: "params.context must name a request the host is waiting on") }
            return context
        }
        guard let environment = environment.withLock({ $0 }) else {
            throw PluginFailure(description: "the plugin has not started")
        }
        return environment.context()
    }

    /// The child's exit, reported by its process: an exit the plugin's stop asked for is expected;
    /// any other is a crash, counted, logged and followed by a restart after the backoff.
    private func exited(_ process: ChildProcess) {
        let (orphans, delay, stopping) = state.withLock {
            state -> ([CheckedContinuation<JSONValue, any Error>], Double, Bool) in
            guard state.process === process else { return ([], 0, false) }
            let stopping = state.stopped
            let (orphans, delay) = state.forget()
            return (orphans, delay, stopping)
        }
        if stopping {
            logger?.info("plugin \(pluginName) \(process.terminationDescription) on its stop")
            let failure = PluginFailure(description: "the plugin was stopped")
            for continuation in orphans { continuation.resume(throwing: failure) }
            return
        }
        guard !orphans.isEmpty || delay > 0 else { return }
        metrics?.increment("perch_plugin_restarts_total", ["plugin": pluginName])
        logger?.warning("plugin \(pluginName) \(process.terminationDescription); restarting in \(delay) s")
        for continuation in orphans { continuation.resume(throwing: PluginFailure(description: "the plugin exited")) }
    }

    /// Ends the child (the plugin's stop, or a hung child): SIGTERM, then SIGKILL after 0.5 s. The
    /// child is forgotten at once, so the next request starts a fresh one (after the backoff)
    /// instead of writing into the dying one. Returns whether there was a child to stop.
    @discardableResult
    func dropChild() -> Bool {
        let (process, orphans) = state.withLock {
            state -> (ChildProcess?, [CheckedContinuation<JSONValue, any Error>]) in
            guard let process = state.process else { return (nil, []) }
            let (orphans, _) = state.forget()
            return (process, orphans)
        }
        for continuation in orphans {
            continuation.resume(throwing: PluginFailure(description: "the plugin was stopped"))
        }
        guard let process else { return false }
        guard process.isRunning else { return true }
        process.terminate()
        Task.detached {
            try? await Task.sleep(for: .milliseconds(500))
            process.terminate(SIGKILL)
        }
        return true
    }

    // MARK: JSON

    static func json(of bot: BotIdentity) -> JSONValue {
        .object(["name": .string(bot.name), "uid": .string(bot.uid)])
    }

    static func eventJSON(_ event: ChatEvent) -> JSONValue {
        (try? JSONValue(parsing: event.json)) ?? .null
    }

    /// A YAML subtree as JSON, for the plugin's `initialize`.
    static func json(of node: YAMLNode) -> JSONValue {
        switch node.content {
        case .scalar(let text, let isPlain):
            guard isPlain else { return .string(text) }
            if node.isNull { return .null }
            if let flag = YAMLScalar.bool(text) { return .bool(flag) }
            if let number = YAMLScalar.integer(text) { return .number(Double(number)) }
            if let number = YAMLScalar.double(text) { return .number(number) }
            return .string(text)
        case .sequence(let items): return .array(items.map(json))
        case .mapping(let pairs):
            return .object(Dictionary(pairs.map { ($0.key.scalar ?? "", json(of: $0.value)) }) { first, _ in first })
        }
    }
}
