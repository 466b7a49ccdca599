import Foundation
import PerchChat
import PerchConfig
import PerchLock
import PerchTestSupport
import PerchTesting
import Testing

@testable import PerchHost

/// A Swift plugin that writes down its start, the events it hears and its stop, and greets its
/// room from its start (acting outside any event).
struct LifecycleRecorder: BotPlugin {
    static let name = "recorder"
    static let lines = Lock<[String]>([])
    struct Configuration: Decodable, Sendable {
        var label: String
        var failsToStart: Bool?
    }
    let configuration: Configuration
    init(configuration: Configuration) { self.configuration = configuration }

    struct Refused: Error, CustomStringConvertible { var description: String { "no database today" } }

    func start(_ environment: PluginEnvironment) async throws {
        Self.lines.withLock { $0.append("start \(configuration.label)") }
        if configuration.failsToStart == true { throw Refused() }
        try await environment.send(MessageDraft(to: .group("room"), text: "\(configuration.label) is up"))
        try await environment.storage.set(configuration.label, for: "started")
    }

    func onTextMessageReceived(_ context: BotContext) async throws {
        guard context.message?.sender == "carol" else { return }
        Self.lines.withLock { $0.append("event \(configuration.label)") }
    }

    func stop() async {
        Self.lines.withLock { $0.append("stop \(configuration.label)") }
    }
}

/// Plugins' start and stop: on the host's start, reload and stop, in order, within a time limit.
@Suite(.serialized) struct PluginLifecycleTests {
    static func bot(_ name: String, uid: String, label: String, failing: Bool = false) -> String {
        """
        name: \(name)
        user: { uid: \(uid), name: \(name) }
        groups: [room]
        plugins:
          - { name: recorder, config: { label: \(label)\(failing ? ", failsToStart: true" : "") } }
        rules:
          - on: { command: never }
            do: [{ reply: x }]
        """
    }

    static var registry: PluginRegistry {
        var registry = PluginRegistry.standard
        registry.register(LifecycleRecorder.self)
        return registry
    }

    @Test func pluginsStartBeforeTheirFirstEventAndStopInTheReverseOrder() async throws {
        LifecycleRecorder.lines.withLock { $0 = [] }
        let bots = [
            "a.yaml": Self.bot("a", uid: "abot", label: "a1"), "b.yaml": Self.bot("b", uid: "bbot", label: "b1"),
        ]
        try await withTestHost(config: hostConfig, bots: bots, registry: Self.registry) { chat in
            // Started with the host, before any event, each bot's in turn.
            #expect(LifecycleRecorder.lines.withLock { $0 } == ["start a1", "start b1"])
            // What the start did on its own: a message as the bot, a value in the bot's storage.
            let greetings = try await chat.messages(in: .group("room")).filter { $0.text?.hasSuffix(" is up") == true }
            #expect(greetings.map { "\($0.sender) \($0.text ?? "")" }.sorted() == ["abot a1 is up", "bbot b1 is up"])
            #expect(try await chat.service.storedValue("started", in: "a") == .string("a1"))

            try await chat.post("hello", as: "carol", to: .group("room"))
            _ = try await chat.waitFor("both plugins heard it") {
                LifecycleRecorder.lines.withLock { $0.count } >= 4 ? true : nil
            }
            #expect(Set(LifecycleRecorder.lines.withLock { $0.suffix(2) }) == ["event a1", "event b1"])

            // A reload: the new instances start before the old ones stop (no event goes without
            // one), and the old ones stop in the reverse order.
            LifecycleRecorder.lines.withLock { $0 = [] }
            let folder = URL(fileURLWithPath: chat.directory).deletingLastPathComponent().path
            try Self.bot("a", uid: "abot", label: "a2").write(
                toFile: folder + "/bots/a.yaml", atomically: true, encoding: .utf8)
            let loaded = ConfigurationLoader(environment: [:], swiftPlugins: Self.registry.names)
                .load(configPath: folder + "/config.yaml")
            #expect(await chat.host.reload(loaded))
            #expect(LifecycleRecorder.lines.withLock { $0 } == ["start a2", "start b1", "stop b1", "stop a1"])
            try await chat.post("again", as: "carol", to: .group("room"))
            _ = try await chat.waitFor("the new instances heard it") {
                LifecycleRecorder.lines.withLock { $0.count } >= 6 ? true : nil
            }
            #expect(Set(LifecycleRecorder.lines.withLock { $0.suffix(2) }) == ["event a2", "event b1"])
            LifecycleRecorder.lines.withLock { $0 = [] }
        }
        // The host's stop: every plugin, the reverse of the start order.
        #expect(LifecycleRecorder.lines.withLock { $0 } == ["stop b1", "stop a2"])
    }

    @Test func aPluginThatDoesNotStartHearsNothingAndTheOthersGoOn() async throws {
        LifecycleRecorder.lines.withLock { $0 = [] }
        let bots = [
            "a.yaml": Self.bot("a", uid: "abot", label: "broken", failing: true),
            "b.yaml": Self.bot("b", uid: "bbot", label: "fine"),
        ]
        try await withTestHost(config: hostConfig, bots: bots, registry: Self.registry) { chat in
            #expect(
                chat.host.metrics.value(
                    "perch_plugin_lifecycle_failures_total", ["plugin": "recorder", "hook": "start"]) == 1)
            let logged = await chat.log.filter { $0.contains("did not start") }
            #expect(
                logged.count == 1
                    && logged[0].contains(
                        "plugin recorder did not start: no database today; it hears nothing until the next reload"),
                "\(logged)")
            try await chat.post("hello", as: "carol", to: .group("room"))
            _ = try await chat.waitFor("the working plugin heard it") {
                LifecycleRecorder.lines.withLock { $0.contains("event fine") } ? true : nil
            }
            try await chat.settle()
            #expect(!LifecycleRecorder.lines.withLock { $0.contains("event broken") })
        }
        // One that never started is not stopped.
        #expect(!LifecycleRecorder.lines.withLock { $0.contains("stop broken") })
    }

    @Test func aStartOrStopPastItsTimeLimitIsAbandoned() async throws {
        let started = ContinuousClock.now
        let problem = await PluginLifecycle.withinLimit(.milliseconds(50)) { try await Task.sleep(for: .seconds(30)) }
        #expect(problem == "it took longer than 0.05 seconds")
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(await PluginLifecycle.withinLimit(.seconds(5)) {} == nil)
        struct Broken: Error, CustomStringConvertible { var description: String { "broken" } }
        #expect(await PluginLifecycle.withinLimit(.seconds(5)) { throw Broken() } == "broken")
    }

    /// An external plugin starts with the host (its `initialize` before any event), may call the
    /// host on its own (no `params.context`), and is sent `stop` before its child is ended.
    @Test func anExternalPluginStartsWithTheHostActsOnItsOwnAndIsToldToStop() async throws {
        try await withScratchDirectory { directory in
            let script = directory + "/life.py"
            let out = directory + "/seen.txt"
            try """
            import json, sys
            def note(text):
                with open("\(out)", "a") as f:
                    f.write(text + "\\n")
            for line in sys.stdin:
                request = json.loads(line)
                method = request.get("method")
                if method is None:
                    continue  # an answer to our own call
                note(method + " " + json.dumps(request["params"].get("bot"), sort_keys=True))
                if method == "initialize":
                    # A call of its own, outside any event: no params.context.
                    call = {"jsonrpc": "2.0", "id": "own", "method": "host.storage.set", "params": {"key": "k", "value": {"up": True}}}
                    sys.stdout.write(json.dumps(call) + "\\n")
                    sys.stdout.flush()
                    note("answer " + sys.stdin.readline().strip())
                sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {}}) + "\\n")
                sys.stdout.flush()
                if method == "stop":
                    note("stopped")
                    break
            """.write(toFile: script, atomically: true, encoding: .utf8)
            let bot = botFile(
                "  - on: { command: never }\n    do: [{ reply: x }]",
                extra: "plugins:\n  - name: life\n    exec: [python3, \"\(script)\"]")
            @Sendable func seen() -> [String] {
                ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            }
            try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
                // No event yet: the host started it.
                #expect(seen().first == #"initialize {"name": "b", "uid": "bot"}"#, "\(seen())")
                _ = try await chat.waitFor("its own call answered") { seen().count >= 2 ? true : nil }
                #expect(seen()[1] == #"answer {"jsonrpc":"2.0","id":"own","result":{}}"#, "\(seen())")
                #expect(try await chat.service.storedValue("k", in: "b") == .object(["up": .bool(true)]))
            }
            #expect(Array(seen().suffix(2)) == [#"stop {"name": "b", "uid": "bot"}"#, "stopped"], "\(seen())")
        }
    }

    /// Stopping the host while the plugin is busy with an event is not the plugin failing, and its
    /// exit on `stop` is not a crash: neither is logged as a warning, nor followed by a restart.
    @Test func aStopWhileThePluginIsBusyLogsNoFailure() async throws {
        try await withScratchDirectory { directory in
            let script = directory + "/slow.py"
            let out = directory + "/seen.txt"
            try """
            import json, sys, threading, time
            def answer(request):
                if request["method"] == "event":
                    with open("\(out)", "a") as f:
                        f.write("event\\n")
                    time.sleep(30)
                sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {}}) + "\\n")
                sys.stdout.flush()
            for line in sys.stdin:
                request = json.loads(line)
                if request.get("method") == "stop":
                    answer(request)
                    break
                threading.Thread(target=answer, args=(request,), daemon=True).start()
            """.write(toFile: script, atomically: true, encoding: .utf8)
            let bot = botFile(
                "  - on: { command: never }\n    do: [{ reply: x }]",
                extra: "plugins:\n  - name: slow\n    exec: [python3, \"\(script)\"]")
            let running = Lock<TestChat?>(nil)
            try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
                running.withLock { $0 = chat }
                try await chat.post("hello", as: "carol", to: .group("room"))
                _ = try await chat.waitFor("the plugin busy with the event") {
                    (try? String(contentsOfFile: out, encoding: .utf8))?.contains("event") == true ? true : nil
                }
            }
            let log = await running.withLock { $0 }!.log
            #expect(!log.contains { $0.contains("warning") || $0.contains("restarting") }, "\(log)")
            #expect(log.contains { $0.contains("plugin slow exited with status 0 on its stop") }, "\(log)")
        }
    }

    /// An external plugin that answers `initialize` with an error refused to start: its child is
    /// ended and it hears nothing until the next reload, as a Swift plugin whose start throws.
    @Test func anExternalPluginRefusingToStartHearsNothing() async throws {
        try await withScratchDirectory { directory in
            let script = directory + "/refuse.py"
            let out = directory + "/seen.txt"
            try """
            import json, sys
            for line in sys.stdin:
                request = json.loads(line)
                with open("\(out)", "a") as f:
                    f.write(request["method"] + "\\n")
                if request["method"] == "initialize":
                    answer = {"error": {"code": -32000, "message": "no token in the environment"}}
                else:
                    answer = {"result": {"actions": [{"reply": "heard"}]}}
                sys.stdout.write(json.dumps(dict(answer, jsonrpc="2.0", id=request["id"])) + "\\n")
                sys.stdout.flush()
            """.write(toFile: script, atomically: true, encoding: .utf8)
            let bot = botFile(
                "  - on: { command: do }\n    do: [{ plugin: refuse }]",
                extra: "plugins:\n  - name: refuse\n    exec: [python3, \"\(script)\"]")
            try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
                #expect(
                    chat.host.metrics.value(
                        "perch_plugin_lifecycle_failures_total", ["plugin": "refuse", "hook": "start"])
                        == 1)
                let logged = await chat.log.filter { $0.contains("did not start") }
                #expect(logged.first?.contains("plugin error: no token in the environment") == true, "\(logged)")
                try await chat.post("!do it", as: "carol", to: .group("room"))
                try await chat.settle()
                #expect(try await chat.botMessages(in: .group("room")).isEmpty)
            }
            let seen = ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n")
            // It refused: it is ended, not asked to stop.
            #expect(seen == ["initialize"], "\(seen)")
        }
    }
}
