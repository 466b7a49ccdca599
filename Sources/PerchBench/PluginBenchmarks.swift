import Foundation
import PerchChat
import PerchConfig
import PerchHost
import PerchService

/// What a plugin costs a message: a command answered by a JSON-RPC plugin in Python (the host
/// asks, the plugin answers with a reply action) against the same answer from a bot file's rule,
/// and a command with typed arguments (`usage`) against a plain regex rule taking the same words.
/// Each is a person's message and the bot's reply to it, one at a time, on a running host on the
/// embedded store: the time from the send until the reply is committed.
///
/// `reply_rule` and `jsonrpc_plugin` have the plugin in the bot, hearing every event (after the
/// rules), so their difference is the `handle` call alone; `reply_rule_no_plugin` and
/// `jsonrpc_plugin_no_events` (a plugin that asked for no events) are what a bot with a command
/// plugin costs without it, and `reply_rule_no_events_plugin` what such a plugin costs the bot's
/// rules. `pipe_echo` is the floor under a call: the same plugin driven over
/// its pipes by a thread that does nothing else, with a request of the same shape.
func benchmarkPlugins() async throws {
    let runs = environmentInt("PERCH_BENCH_PLUGIN_RUNS", default: 2000)
    let plugin = """
        import json, sys
        for line in sys.stdin:
            request = json.loads(line)
            result = {}
            if request.get("method") == "handle":
                result = {"actions": [{"reply": "pong"}]}
            elif request.get("method") == "initialize" and sys.argv[1:] == ["commands"]:
                result = {"events": []}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\\n")
            sys.stdout.flush()
        """
    let plugins = "plugins:\n  - { name: echo, exec: [python3, echo.py] }"
    let commandsOnly = "plugins:\n  - { name: echo, exec: [python3, echo.py, commands] }"
    let rules: [(name: String, rules: String, text: String, plugins: String)] = [
        ("reply_rule", "  - on: { command: ping }\n    do: [{ reply: pong }]", "!ping", plugins),
        ("jsonrpc_plugin", "  - on: { command: ping }\n    do: [{ plugin: echo }]", "!ping", plugins),
        ("reply_rule_no_plugin", "  - on: { command: ping }\n    do: [{ reply: pong }]", "!ping", ""),
        ("reply_rule_no_events_plugin", "  - on: { command: ping }\n    do: [{ reply: pong }]", "!ping", commandsOnly),
        ("jsonrpc_plugin_no_events", "  - on: { command: ping }\n    do: [{ plugin: echo }]", "!ping", commandsOnly),
        (
            "regex_rule",
            "  - on: message\n    when: { text_matches: '^!remind (?<when>\\S+) (?<text>.+)$' }\n"
                + "    do: [{ reply: \"in {when}: {text}\" }]", "!remind 1h30m take the bread out", ""
        ),
        (
            "typed_command",
            "  - on: { command: remind }\n    usage: \"<when:duration> <text:rest>\"\n"
                + "    do: [{ reply: \"in {when}: {text}\" }]", "!remind 1h30m take the bread out", ""
        ),
    ]
    var figures: [String: Any] = ["runs": runs]
    let floor = try pipeEcho(plugin, runs: runs)
    figures["pipe_echo_median_us"] = (floor.median / 1000).rounded3
    figures["pipe_echo_p99_us"] = (floor.p99 / 1000).rounded3
    for variant in rules {
        let directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("perch-plugins-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/bots", withIntermediateDirectories: true)
        try """
        version: 1
        seed:
          users: [{ uid: alice, name: Alice }]
          groups: [{ guid: general, name: General, owner: alice }]
        """.write(toFile: directory + "/config.yaml", atomically: true, encoding: .utf8)
        try plugin.write(toFile: directory + "/echo.py", atomically: true, encoding: .utf8)
        try """
        name: b
        user: { uid: bot, name: Bot }
        groups: [general]
        rate_limit: { per_minute: 100000, burst: 100000, per_conversation_per_minute: 100000 }
        \(variant.plugins)
        rules:
        \(variant.rules)
        """.write(toFile: directory + "/bots/b.yaml", atomically: true, encoding: .utf8)
        let loaded = ConfigurationLoader().load(configPath: directory + "/config.yaml")
        guard loaded.isValid else { throw BenchFailure(loaded.findings.map(\.description).joined(separator: "\n")) }
        let host = BotHost(
            configuration: loaded,
            options: BotHost.Options(
                dataDirectory: directory + "/data", logger: HostLogger(minimum: .warning), schedulesFromTimer: false))
        try await host.start()
        guard let service = await host.service else { throw BenchFailure("the host has no service") }
        let timing = try await measure(runs: runs, warmup: 100) {
            try await roundTrip(variant.text, service: service)
        }
        figures[variant.name + "_median_us"] = (timing.median / 1000).rounded3
        figures[variant.name + "_p99_us"] = (timing.p99 / 1000).rounded3
        await host.stop()
    }
    report("plugins", figures)
}

/// Sends `text` as alice into general and waits until the bot's reply is committed.
/// - Throws: ``BenchFailure`` when no reply comes within 10 seconds (the bot's log says why).
private func roundTrip(_ text: String, service: ChatService) async throws {
    var cursor = try await service.store.latestEventSequence()
    _ = try await service.send(MessageDraft(to: .group("general"), text: text), as: "alice")
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline {
        let page = try await service.events(for: "alice", after: cursor)
        if page.events.contains(where: { $0.name == .textMessageReceived && $0.message?.sender == "bot" }) { return }
        cursor = max(cursor, page.scannedThrough)
        await service.waitForEvents(after: cursor, for: "alice", endingAtTick: true)
    }
    throw BenchFailure("no reply to \(text) within 10 seconds")
}

/// The plugin's round trip with no host: `runs` requests written to its stdin by this thread, each
/// answer read from its stdout before the next, with `handle`'s params as the host sends them.
private func pipeEcho(_ plugin: String, runs: Int) throws -> (median: Double, p99: Double) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", plugin]
    let (input, output) = (Pipe(), Pipe())
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    defer {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
    let reader = output.fileHandleForReading.fileDescriptor
    var buffer = [UInt8](repeating: 0, count: 65_536)
    var samples: [Double] = []
    for id in 0..<(runs + 100) {
        let line = Data(
            (#"{"jsonrpc":"2.0","id":\#(id),"method":"handle","params":{"bot":{"name":"b","uid":"bot"},"#
                + #""event":{"name":"textMessageReceived","message":{"id":\#(id),"sender":"alice","#
                + #""receiver":"general","receiverType":"group","type":"text","category":"message","#
                + #""text":"!ping","sentAt":1800000000,"data":{"text":"!ping"}}},"captures":{},"#
                + #""command":{"name":"ping","args":""},"context":\#(id)}}"# + "\n").utf8)
        let start = DispatchTime.now().uptimeNanoseconds
        input.fileHandleForWriting.write(line)
        while true {
            let count = read(reader, &buffer, buffer.count)
            guard count > 0 else { throw BenchFailure("the plugin closed its stdout") }
            if buffer[count - 1] == UInt8(ascii: "\n") { break }
        }
        if id >= 100 { samples.append(Double(DispatchTime.now().uptimeNanoseconds - start)) }
    }
    samples.sort()
    return (samples[samples.count / 2], samples[min(samples.count - 1, samples.count * 99 / 100)])
}
