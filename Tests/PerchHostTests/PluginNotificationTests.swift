import Foundation
import PerchChat
import PerchConfig
import PerchHost
import PerchLock
import PerchService
import PerchTestSupport
import PerchTesting
import Testing

/// A Swift plugin that keeps the notifications it is handed.
struct NotificationCollector: BotPlugin {
    static let name = "collector"
    static let seen = Lock<[String]>([])
    init(configuration: NoConfiguration) {}

    func onNotification(_ notification: NotificationRecord, bot: BotIdentity) async throws {
        let line =
            "\(bot.name) \(notification.uid) \(notification.reason.rawValue) \(notification.message?.text ?? "-")"
        Self.seen.withLock { $0.append(line) }
    }
}

/// The plugins' `onNotification` hook: what a plugin that delivers notifications its own way sees.
@Suite(.serialized) struct PluginNotificationTests {
    @Test func aSwiftPluginThatAsksSeesEveryRoutedNotificationAndOthersNone() async throws {
        var registry = PluginRegistry.standard
        registry.register(NotificationCollector.self)
        NotificationCollector.seen.withLock { $0 = [] }
        let listening = botFile(
            "  - on: { command: never }\n    do: [{ reply: x }]",
            extra: "plugins:\n  - { name: collector, notifications: true }")
        let deaf = """
            name: deaf
            user: { uid: deafbot, name: Deaf }
            groups: [room]
            plugins:
              - { name: collector }
            rules:
              - on: { command: never }
                do: [{ reply: x }]
            """
        try await withTestHost(config: hostConfig, bots: ["b.yaml": listening, "deaf.yaml": deaf], registry: registry) {
            chat in
            try await Task.sleep(for: .milliseconds(200))
            try await chat.post("hello <@uid:carol>", as: "alice", to: .group("room"))
            try await chat.post("just you", as: "bob", to: .user("carol"))
            let expected = [
                "b bob message hello <@uid:carol>", "b bot message hello <@uid:carol>",
                "b carol mention hello <@uid:carol>", "b carol message just you",
                "b deafbot message hello <@uid:carol>",
            ]
            _ = try await chat.waitFor(timeout: .seconds(10), "the notifications") {
                NotificationCollector.seen.withLock { $0.count } >= expected.count ? true : nil
            }
            try await Task.sleep(for: .milliseconds(100))
            #expect(NotificationCollector.seen.withLock { $0 }.sorted() == expected)
        }
    }

    @Test func anExternalPluginIsSentANotificationRequest() async throws {
        try await withScratchDirectory { directory in
            let script = directory + "/notified.py"
            let out = directory + "/seen.jsonl"
            try """
            import json, sys
            for line in sys.stdin:
                request = json.loads(line)
                if request.get("method") == "notification":
                    with open(\(String(reflecting: out)), "a") as seen:
                        seen.write(json.dumps(request["params"]) + "\\n")
                print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {}}), flush=True)
            """.write(toFile: script, atomically: true, encoding: .utf8)
            let bot = botFile(
                "  - on: { command: never }\n    do: [{ reply: x }]",
                extra: "plugins:\n  - name: notified\n    exec: [python3, \"\(script)\"]\n    notifications: true")
            try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
                try await Task.sleep(for: .milliseconds(200))
                let sent = try await chat.post("hi <@uid:carol>", as: "alice", to: .group("room"))
                let lines = try await chat.waitFor(timeout: .seconds(10), "the plugin's notifications") {
                    () -> [String]? in
                    let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
                    let lines = text.split(separator: "\n").map(String.init)
                    return lines.count >= 3 ? lines : nil
                }
                let carol = try #require(
                    lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                        .first { ($0["notification"] as? [String: Any])?["uid"] as? String == "carol" })
                #expect((carol["bot"] as? [String: Any])?["name"] as? String == "b")
                #expect(carol["plugin"] as? String == "notified")
                let notification = try #require(carol["notification"] as? [String: Any])
                #expect(notification["reason"] as? String == "mention")
                #expect((notification["message"] as? [String: Any])?["id"] as? Int == Int(sent.id))
            }
        }
    }

    /// A JSON-RPC plugin hears every subscription change in its bot's conversations, one made
    /// through the API too, as `threadSubscriptionChanged`.
    @Test func anExternalPluginHearsSubscriptionChangesFromAnySource() async throws {
        try await withScratchDirectory { directory in
            let script = directory + "/follows.py"
            let out = directory + "/seen.jsonl"
            try """
            import json, sys
            for line in sys.stdin:
                request = json.loads(line)
                if request.get("method") == "threadSubscriptionChanged":
                    params = request["params"]
                    with open(\(String(reflecting: out)), "a") as seen:
                        seen.write(json.dumps([params["parentMessageId"], params["uid"], params["isSubscribed"]]) + "\\n")
                print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {}}), flush=True)
            """.write(toFile: script, atomically: true, encoding: .utf8)
            let bot = botFile(
                "  - on: { command: never }\n    do: [{ reply: x }]",
                extra: "plugins:\n  - name: follows\n    exec: [python3, \"\(script)\"]")
            try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
                let root = try await chat.post("a thread", as: "alice", to: .group("room"))
                _ = try await chat.service.subscribeToThread(root.id, as: "carol")
                _ = try await chat.service.unsubscribeFromThread(root.id, as: "carol")
                let lines = try await chat.waitFor(timeout: .seconds(10), "the plugin's calls") { () -> [String]? in
                    let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
                    let lines = text.split(separator: "\n").map(String.init)
                    return lines.count >= 2 ? lines : nil
                }
                #expect(lines == ["[\(root.id), \"carol\", true]", "[\(root.id), \"carol\", false]"])
            }
        }
    }

    /// A JSON-RPC plugin's storage calls: JSON values, increments, compare-and-set, listing, and a
    /// namespace of its own.
    @Test func anExternalPluginUsesItsStorage() async throws {
        try await withScratchDirectory { directory in
            let script = directory + "/store.py"
            try """
            import json, sys
            def call(method, params):
                print(json.dumps({"jsonrpc": "2.0", "id": "c", "method": method, "params": params}), flush=True)
                while True:
                    answer = json.loads(sys.stdin.readline())
                    if answer.get("id") == "c":
                        return answer.get("result")
            for line in sys.stdin:
                request = json.loads(line)
                if request.get("method") == "handle":
                    context = request["params"]["context"]
                    call("host.storage.set", {"context": context, "key": "profile", "value": {"likes": ["tea"], "n": 2}})
                    call("host.storage.increment", {"context": context, "key": "hits", "by": 5})
                    hits = call("host.storage.increment", {"context": context, "key": "hits"})["value"]
                    first = call("host.storage.compareAndSet", {"context": context, "key": "lock", "expected": None, "new": "me"})["set"]
                    second = call("host.storage.compareAndSet", {"context": context, "key": "lock", "expected": None, "new": "you"})["set"]
                    call("host.storage.set", {"context": context, "namespace": "mine", "key": "hits", "value": 1})
                    listed = call("host.storage.list", {"context": context})["values"]
                    profile = call("host.storage.get", {"context": context, "key": "profile"})["value"]
                    text = "%d %s %s %s %s" % (hits, first, second, [v["key"] for v in listed], profile["likes"][0])
                    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"actions": [{"reply": text}]}}), flush=True)
                else:
                    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {}}), flush=True)
            """.write(toFile: script, atomically: true, encoding: .utf8)
            let bot = botFile(
                "  - on: { command: store }\n    do: [{ plugin: store }]",
                extra: "hears: commands\nplugins:\n  - name: store\n    exec: [python3, \"\(script)\"]")
            try await withTestHost(config: hostConfig, bots: ["b.yaml": bot]) { chat in
                try await chat.post("!store", as: "carol", to: .group("room"))
                let answer = try await chat.waitForMessage(in: .group("room")) { $0.sender == "bot" }
                #expect(answer.text == "6 True False ['hits', 'lock', 'profile'] tea")
                #expect(try await chat.service.storedValue("hits", in: "b/mine") == .number(1))
                #expect(try await chat.service.pluginValue(bot: "b", key: "lock") == "me")
            }
        }
    }

    @Test func aPluginReachedOverHTTPCannotAskForNotifications() throws {
        let bot = botFile(
            "  - on: { command: go }\n    do: [{ plugin: remote }]",
            extra: "plugins:\n  - { name: remote, url: \"https://example.org/hook\", notifications: true }")
        let directory = try writeTestConfiguration(config: hostConfig, bots: ["b.yaml": bot])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loaded = ConfigurationLoader(swiftPlugins: PluginRegistry.standard.names).load(
            configPath: directory + "/config.yaml")
        let finding = try #require(loaded.findings.first { $0.path.hasSuffix("notifications") })
        #expect(finding.message.contains("notifications.webhooks"))
    }
}
