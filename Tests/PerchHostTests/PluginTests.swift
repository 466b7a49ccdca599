import Foundation
import PerchChat
import PerchConfig
import PerchLock
import PerchService
import PerchTestSupport
import PerchTesting
import Testing

@testable import PerchHost

/// The host's event bus for plugins.
@Suite struct HostEventBusTests {
    @Test func busListenersAreKeyedAndADuplicateIdReplaces() async {
        let bus = HostEventBus()
        let log = Lock<[String]>([])
        bus.register(id: "screen") { _ in log.withLock { $0.append("first") } }
        bus.register(id: "screen") { _ in log.withLock { $0.append("second") } }
        bus.register(id: "other") { _ in log.withLock { $0.append("other") } }
        await bus.publish(.threadSubscriptionChanged(parentMessageId: 1, uid: "u", isSubscribed: true))
        #expect(log.withLock { $0 }.sorted() == ["other", "second"])
        #expect(bus.listenerIds == ["other", "screen"])
    }
}

@Suite struct ExternalPluginTests {
    @Test func thePythonExamplePluginAnswers() async throws {
        let script = repositoryRoot + "/examples/plugins/echo_plugin.py"
        let bot = botFile(
            """
              - on: { command: echo }
                do: [{ plugin: echo }]
            """, extra: "plugins:\n  - name: echo\n    exec: [python3, \"\(script)\"]\n    config: { prefix: \"py: \" }"
        )
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
            let first = try await chat.post("!echo hello", as: "carol", to: .group("room"))
            let answer = try await chat.waitForMessage(in: .group("room")) { $0.sender == "bot" }
            #expect(answer.text == "py: hello (#1 from carol)")
            #expect(answer.quotedMessageId == first.id)
            try await chat.post("!echo again", as: "carol", to: .group("room"))
            _ = try await chat.waitForMessage(in: .group("room")) { $0.text == "py: again (#2 from carol)" }
            // The plugin calls the host: its key-value store and a reply.
            try await chat.post("!echo count", as: "carol", to: .group("room"))
            _ = try await chat.waitForMessage(in: .group("room")) { $0.text == "counted 1" }
            try await chat.post("!echo count", as: "carol", to: .group("room"))
            _ = try await chat.waitForMessage(in: .group("room")) { $0.text == "counted 2" }
            #expect(try await chat.service.pluginValue(bot: "b", key: "count") == "2")
            // A refused host call tells the plugin the error's code and its params. (Subscribing
            // someone other than the sender needs the bot file's allow_subscribing_others.)
            try await chat.post("!echo ghost", as: "carol", to: .group("room"))
            let refused = try await chat.waitForMessage(in: .group("room")) { $0.text?.hasPrefix("refused") == true }
            #expect(
                refused.text
                    == #"refused: ERR_PERMISSION_DENIED {"reason": "subscribing someone other than the sender needs allow_subscribing_others: true", "uid": "ghost"}"#
            )
        }
    }

    /// A bot that answers `!ping N` with `pong N`, beside the misbehaving plugins.
    static let pongBot = """
        name: good
        user: { uid: goodbot, name: Good }
        groups: [room]
        rules:
          - on: { command: ping }
            do: [{ reply: "pong {args}" }]
        """

    /// A plugin stops reading its input, and is sent more than a pipe holds: the write waits on a
    /// thread of its own, and the bots that share the stuck bot's thread answer meanwhile, long
    /// before the request's timeout. (Written on the bot's own thread, the write held it, and every
    /// bot on it, until the timeout ended the plugin: 20 s here.)
    @Test func aPluginThatStopsReadingItsInputHoldsNoBotsThread() async throws {
        let stuck = """
            name: stuck
            user: { uid: stuckbot, name: Stuck }
            groups: [room]
            hears: commands
            plugins:
              - { name: wedged, exec: [python3, "\(pluginFixtures)/wedged_plugin.py"], timeout_ms: 20000 }
            rules:
              - on: { command: do }
                do: [{ plugin: wedged }]
            """
        // One thread for every bot, as a connector's host executor has it.
        let executor = HostExecutor(name: "perch-test-bots")
        let bots = ["stuck.yaml": stuck, "good.yaml": Self.pongBot]
        try await withTestHost(config: hostConfig, bots: bots, executor: executor) { chat in
            // About 120 KB (the text, and again as the command's arguments), past initialize.
            try await chat.post("!do " + String(repeating: "x", count: 60_000), as: "carol", to: .group("room"))
            try await Task.sleep(for: .milliseconds(500))
            try await chat.post("!ping 1", as: "carol", to: .group("room"))
            let pong = try await chat.waitFor(timeout: .seconds(10), "the other bot's answer") {
                try await chat.messages(in: .group("room")).first { $0.sender == "goodbot" }?.text
            }
            #expect(pong == "pong 1")
            #expect(chat.host.metrics.value("perch_plugin_timeouts_total", ["plugin": "wedged"]) == 0)
        }
        executor.stop()
    }

    /// Lines longer than the pipe holds, written to a plugin that reads slowly by two writers at
    /// once (the bot's requests and the notification feed), reach it whole and in order: each
    /// line the host starts is finished before another begins.
    @Test func longLinesFromTwoWritersReachASlowPluginWhole() async throws {
        try await withScratchDirectory { directory in
            let script = directory + "/slow_reader.py"
            try """
            import json, sys, time
            for line in sys.stdin:
                time.sleep(0.05)  # reads slowly: the host's writes find the pipe full
                request = json.loads(line)  # a line cut or mixed with another ends the plugin here
                result = {}
                if request.get("method") == "handle":
                    args = request["params"]["command"]["args"]
                    result = {"actions": [{"reply": "%d %s" % (len(args), args[0])}]}
                sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\\n")
                sys.stdout.flush()
            """.write(toFile: script, atomically: true, encoding: .utf8)
            let bot = botFile(
                "  - on: { command: long }\n    do: [{ plugin: slow }]",
                extra: "plugins:\n  - name: slow\n    exec: [python3, \"\(script)\"]\n    notifications: true")
            try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
                for letter in ["a", "b", "c"] {
                    // About 100 KB a request, and each message notifies two members besides the sender.
                    try await chat.post(
                        "!long " + String(repeating: letter, count: 50_000) + " <@uid:alice>", as: "carol",
                        to: .group("room"))
                }
                let replies = try await chat.waitFor(timeout: .seconds(20), "the three answers") { () -> [String]? in
                    let replies = try await chat.botMessages(in: .group("room")).compactMap(\.text)
                    return replies.count >= 3 ? replies : nil
                }
                #expect(replies == ["50013 a", "50013 b", "50013 c"])
                #expect(chat.host.metrics.value("perch_plugin_restarts_total", ["plugin": "slow"]) == 0)
            }
        }
    }

    /// A plugin that lists the events it handles in its `initialize` answer is asked about those
    /// only (its commands still reach it); a list that is not one of names is logged, and the
    /// plugin hears every event, as one that lists none.
    @Test(
        arguments: [
            (#"["onMessageEdited"]"#, ["handle", "event onMessageEdited"], nil),
            (
                #"["onMessageEdited", "onMessageEdit"]"#, ["handle", "event onMessageEdited"],
                "asked for events there are not: onMessageEdit"
            ),
            (
                #""all""#,
                ["handle", "event onTextMessageReceived", "event onTextMessageReceived", "event onMessageEdited"],
                "events that are not a list of names"
            ),
        ] as [(String, [String], String?)])
    func aPluginHearsTheEventsItAskedFor(events: String, expected: [String], warning: String?) async throws {
        try await withScratchDirectory { directory in
            let script = directory + "/picky.py"
            let out = directory + "/seen.txt"
            try """
            import json, sys
            for line in sys.stdin:
                request = json.loads(line)
                method = request["method"]
                result = {}
                if method == "initialize":
                    result = {"name": "picky", "events": \(events)}
                elif method in ("event", "handle"):
                    with open("\(out)", "a") as f:
                        f.write(method + ("" if method == "handle" else " " + request["params"]["event"]["name"]) + "\\n")
                sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\\n")
                sys.stdout.flush()
            """.write(toFile: script, atomically: true, encoding: .utf8)
            let bot = botFile(
                "  - on: { command: do }\n    do: [{ plugin: picky }]",
                extra: "plugins:\n  - name: picky\n    exec: [python3, \"\(script)\"]")
            try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
                try await chat.post("!do", as: "carol", to: .group("room"))
                let plain = try await chat.post("just talking", as: "carol", to: .group("room"))
                _ = try await chat.service.edit(plain.id, text: "just talking, edited", as: "carol")
                let seen = try await chat.waitFor(timeout: .seconds(10), "the edit's event") { () -> [String]? in
                    let lines = ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n")
                    return lines.last == "event onMessageEdited" ? lines.map(String.init) : nil
                }
                #expect(seen == expected)
                let warned = await chat.log.filter { $0.contains("warning") && $0.contains("plugin picky") }
                if let warning {
                    #expect(warned.count == 1 && warned[0].contains(warning), "\(warned)")
                } else {
                    #expect(warned.isEmpty, "\(warned)")
                }
            }
        }
    }

    /// A reload keeps an external plugin's child when the plugin is as it was, however the other
    /// bots changed, and starts a new one when its settings changed.
    @Test func aReloadKeepsAPluginsChildUnlessThePluginChanged() async throws {
        let script = pluginFixtures + "/misbehaving_plugin.py"
        func pluginBot(timeout: Int) -> String {
            botFile(
                """
                  - on: { command: do }
                    do: [{ plugin: bad }]
                """,
                extra:
                    "hears: commands\nplugins:\n  - name: bad\n    exec: [python3, \"\(script)\"]\n    timeout_ms: \(timeout)"
            )
        }
        try await withTestHost(
            config: hostConfig, bots: ["b.yaml": pluginBot(timeout: 5000), "good.yaml": Self.pongBot]
        ) {
            chat in
            func pid() async throws -> String {
                let before = try await chat.messages(in: .group("room")).count
                try await chat.post("!do pid", as: "carol", to: .group("room"))
                return try await chat.waitFor("the plugin's pid") {
                    let messages = try await chat.messages(in: .group("room"))
                    return messages.count > before + 1 ? messages.last { $0.sender == "bot" }?.text : nil
                }
            }
            // The configuration's own path, as `perch run` reloads it (the plugins run in its folder).
            let folder = URL(fileURLWithPath: chat.directory).deletingLastPathComponent().path
            func reload(_ file: String, _ text: String) async throws {
                try text.write(toFile: folder + "/bots/" + file, atomically: true, encoding: .utf8)
                let loaded = ConfigurationLoader(environment: [:], swiftPlugins: PluginRegistry.standard.names)
                    .load(configPath: folder + "/config.yaml")
                #expect(await chat.host.reload(loaded))
            }
            let first = try await pid()
            #expect(first.hasPrefix("fine pid "))
            try await reload("good.yaml", Self.pongBot.replacingOccurrences(of: "pong", with: "pang"))
            #expect(try await pid() == first)
            try await reload("b.yaml", pluginBot(timeout: 6000))
            let second = try await pid()
            #expect(second.hasPrefix("fine pid ") && second != first)
        }
    }

    /// An answer is read whole before its actions run: one malformed action runs none of them and
    /// the log names it (the first ran, the rest were dropped, and the log did not say which); an
    /// action the service refuses does not keep the next from running, as in a rule.
    @Test func aPluginsAnswerRunsWholeOrNotAtAll() async throws {
        let script = pluginFixtures + "/misbehaving_plugin.py"
        let bot = botFile(
            """
              - on: { command: do }
                do: [{ plugin: bad }]
            """, extra: "plugins:\n  - name: bad\n    exec: [python3, \"\(script)\"]")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
            try await chat.post("!do malformed", as: "carol", to: .group("room"))
            try await chat.settle(timeout: .seconds(30))
            #expect(try await chat.botMessages(in: .group("room")).isEmpty)
            let malformed = await chat.log.filter { $0.contains("plugin bad failed") }
            #expect(
                malformed.last?.contains(
                    "actions[1]: unknown action 'explode'; none of the answer's actions ran") == true, "\(malformed)")
            try await chat.post("!do badpin", as: "carol", to: .group("room"))
            try await chat.settle(timeout: .seconds(30))
            #expect(try await chat.botMessages(in: .group("room")).isEmpty)
            let badPin = await chat.log.filter { $0.contains("plugin bad failed") }
            #expect(
                badPin.last?.contains("actions[1]: pin 'when_full' is refuse or unpin_oldest, found 'rotate'") == true,
                "\(badPin)")

            try await chat.post("!do refused", as: "carol", to: .group("room"))
            _ = try await chat.waitFor(timeout: .seconds(10), "the action after the refused one") {
                try await chat.botMessages(in: .group("room")).first { $0.text == "after the refused one" }
            }
            try await chat.settle()
            let refused = await chat.log.filter { $0.contains("plugin bad failed") }
            #expect(refused.last?.contains("actions[0] (subscribe): ") == true, "\(refused)")
            #expect(chat.host.metrics.value("perch_handler_errors_total", ["bot": "b"]) == 3)
        }
    }

    /// A plugin whose program is not there (perch check warns of it) fails each event it is given,
    /// saying why once, and the other bots answer on.
    @Test func aPluginWhoseProgramIsMissingFailsSayingWhy() async throws {
        let bad = botFile(
            """
              - on: { command: do }
                do: [{ plugin: gone }]
            """, extra: "hears: commands\nplugins:\n  - name: gone\n    exec: [perch-no-such-plugin, --flag]")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bad, "good.yaml": Self.pongBot]) { chat in
            try await chat.post("!do it", as: "carol", to: .group("room"))
            try await chat.post("!ping 1", as: "carol", to: .group("room"))
            _ = try await chat.waitForMessage(in: .group("room")) { $0.text == "pong 1" }
            try await chat.settle()
            let failed = await chat.log.filter { $0.contains("plugin gone failed") }
            #expect(
                failed.last?.contains("cannot start perch-no-such-plugin --flag: No such file or directory") == true,
                "\(failed)")
        }
    }

    /// A plugin that writes tens of thousands of lines on stderr and stdout gets a hundred logged in
    /// ten seconds, each stream; every line is still counted.
    @Test func aFloodingPluginIsHeldToAFewLogLines() async throws {
        let script = pluginFixtures + "/misbehaving_plugin.py"
        let bot = botFile(
            """
              - on: { command: do }
                do: [{ plugin: loud }]
            """, extra: "hears: commands\nplugins:\n  - name: loud\n    exec: [python3, \"\(script)\"]")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
            try await chat.post("!do flood", as: "carol", to: .group("room"))
            _ = try await chat.waitForMessage(in: .group("room"), timeout: .seconds(60)) {
                $0.text == "fine after the flood"
            }
            let metrics = chat.host.metrics
            #expect(
                try await waitUntil(.seconds(30)) {
                    metrics.value("perch_plugin_output_lines_total", ["plugin": "loud", "stream": "stderr"]) == 20_000
                })
            #expect(metrics.value("perch_plugin_output_lines_total", ["plugin": "loud", "stream": "stdout"]) == 20_000)
            let log = await chat.log
            #expect(log.filter { $0.contains("plugin loud stderr:") }.count <= 100)
            #expect(log.filter { $0.contains("not a JSON-RPC response") }.count <= 100)
        }
    }

    @Test func aCrashingAHangingAndAGarbagePluginDoNotStopOtherBots() async throws {
        let script = pluginFixtures + "/misbehaving_plugin.py"
        let bad = botFile(
            """
              - on: { command: do }
                do: [{ plugin: bad }]
            """,
            extra: "hears: commands\nplugins:\n  - name: bad\n    exec: [python3, \"\(script)\"]\n    timeout_ms: 300")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bad, "good.yaml": Self.pongBot]) { chat in
            // Each misbehaviour lands while the other bot keeps answering. (The waits are bounds, not
            // speeds: a loaded run, ThreadSanitizer with every suite at once, passed 10 s restarting
            // the plugin.)
            try await chat.post("!do crash", as: "carol", to: .group("room"))
            try await chat.post("!ping 1", as: "carol", to: .group("room"))
            try await chat.settle(timeout: .seconds(30))
            try await chat.post("!do hang", as: "carol", to: .group("other"))
            try await chat.post("!ping 2", as: "carol", to: .group("room"))
            try await chat.settle(timeout: .seconds(30))
            try await chat.post("!do garbage", as: "carol", to: .group("room"))
            try await chat.post("!ping 3", as: "carol", to: .group("room"))
            let pongs = try await chat.waitFor("three pongs") {
                let texts = try await chat.messages(in: .group("room")).filter { $0.sender == "goodbot" }.compactMap(
                    \.text)
                return texts.count == 3 ? texts : nil
            }
            #expect(pongs == ["pong 1", "pong 2", "pong 3"])
            // After its crash and its hang the plugin is restarted and answers again.
            try await chat.settle(timeout: .seconds(30))
            try await chat.post("!do ok", as: "carol", to: .group("room"))
            _ = try await chat.waitFor(timeout: .seconds(10), "the restarted plugin") {
                try await chat.messages(in: .group("room")).first { $0.text == "fine ok" }
            }
            let metrics = chat.host.metrics
            // Each of the three was a restart: the crash (counted once, whether its exit or the
            // request's timeout told first), the hang and the garbage (neither answered in time).
            // A hang's restart was not counted, nor a crash whose exit was reported after the timeout.
            #expect(metrics.value("perch_plugin_restarts_total", ["plugin": "bad"]) == 3)
            #expect(metrics.value("perch_plugin_timeouts_total", ["plugin": "bad"]) >= 2)
            #expect(metrics.value("perch_plugin_garbage_lines_total", ["plugin": "bad"]) >= 1)
            // The log says what the line was (cut to 200 characters) and how the child ended.
            let log = await chat.log
            #expect(log.contains { $0.contains(#"not a JSON-RPC response; skipped: "this is not json""#) }, "\(log)")
            #expect(log.contains { $0.contains("plugin bad exited with status 3") }, "\(log)")
        }
    }

    /// A plugin killed by a signal is logged as such, not as an exit status.
    @Test func aPluginKilledByASignalIsLoggedAsSuch() async throws {
        let script = pluginFixtures + "/misbehaving_plugin.py"
        let bot = botFile(
            "  - on: { command: do }\n    do: [{ plugin: bad }]",
            extra: "hears: commands\nplugins:\n  - name: bad\n    exec: [python3, \"\(script)\"]\n    timeout_ms: 3000")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
            try await chat.post("!do killed", as: "carol", to: .group("room"))
            let line = try await chat.waitFor(timeout: .seconds(20), "the log line") {
                await chat.log.first { $0.contains("plugin bad killed by signal") }
            }
            #expect(line.contains("killed by signal 9 (SIGKILL)"), "\(line)")
        }
    }

    @Test func aLongLineIsShownCut() {
        let shown = ExternalPlugin.shown(Data(("x\u{1b}" + String(repeating: "y", count: 500)).utf8))
        // 200 characters shown (the escape counted as one), then the length.
        #expect(shown == #""x\u{1B}"# + String(repeating: "y", count: 198) + #"…" (502 bytes)"#)
        #expect(ExternalPlugin.shown(Data("short".utf8)) == #""short""#)
    }
}

/// A Swift plugin that hears edits only, and writes down each event it is called with.
struct EditListener: BotPlugin {
    static let name = "edits"
    static let heard = Lock<[String]>([])
    init(configuration: NoConfiguration) {}
    func hears(_ name: EventName) -> Bool { name == .messageEdited }
    func onEvent(_ context: BotContext) async throws {
        Self.heard.withLock { $0.append(context.event.name.rawValue) }
    }
}

/// `hears`: a plugin is called only for the events it wants, and the bot's rules answer the others
/// as they would without it.
@Suite(.serialized) struct PluginHearingTests {
    @Test func aSwiftPluginIsCalledForTheEventsItHearsOnly() async throws {
        EditListener.heard.withLock { $0 = [] }
        var registry = PluginRegistry.standard
        registry.register(EditListener.self)
        let bot = botFile(
            "  - on: { command: ping }\n    do: [{ reply: pong }]", extra: "plugins:\n  - name: edits")
        try await withTestHost(config: hostConfig, bots: ["b.yaml": bot], registry: registry) { chat in
            let said = try await chat.post("!ping", as: "carol", to: .group("room"))
            _ = try await chat.waitForMessage(in: .group("room")) { $0.text == "pong" }
            _ = try await chat.service.edit(said.id, text: "!ping again", as: "carol")
            _ = try await chat.waitFor("the edit heard") { EditListener.heard.withLock { $0.isEmpty ? nil : true } }
            try await chat.settle()
            #expect(EditListener.heard.withLock { $0 } == ["onMessageEdited"])
        }
    }
}
