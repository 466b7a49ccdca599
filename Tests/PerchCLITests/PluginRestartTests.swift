import Foundation
import PerchTestSupport
import PerchTesting
import Testing

/// An external plugin restarts when its file changes, and on demand (`perch plugin restart`).
@Suite(.serialized) struct PluginRestartTests {
    /// A copy of the misbehaving fixture (its `!do pid` answers its process id), in a folder of its own.
    static func pluginCopy() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-restart-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = directory + "/pid.py"
        try FileManager.default.copyItem(atPath: pluginFixtures + "/misbehaving_plugin.py", toPath: script)
        return script
    }

    static func bot(_ script: String) -> String {
        botFile(
            "  - on: { command: do }\n    do: [{ plugin: pid }]",
            extra: "hears: commands\nplugins:\n  - name: pid\n    exec: [python3, \"\(script)\"]")
    }

    /// The plugin's process id, as its answer to `!do pid` says it.
    static func pid(_ chat: TestChat) async throws -> String {
        let asked = try await chat.post("!do pid", as: "carol", to: .group("room"))
        let answer = try await chat.waitForMessage(in: .group("room")) { $0.sender == "bot" && $0.id > asked.id }
        return answer.text ?? ""
    }

    @Test func aPluginRestartsWhenItsFileChanges() async throws {
        let script = try Self.pluginCopy()
        defer { try? FileManager.default.removeItem(atPath: (script as NSString).deletingLastPathComponent) }
        try await withTestHost(config: hostConfig, bots: ["b.yaml": Self.bot(script)]) { chat in
            let first = try await Self.pid(chat)
            #expect(first.hasPrefix("fine pid "))
            let edited = try String(contentsOfFile: script, encoding: .utf8) + "\n# an edit\n"
            try edited.write(toFile: script, atomically: true, encoding: .utf8)
            _ = try await chat.waitFor(timeout: .seconds(10), "the restart") {
                await chat.log.contains { $0.contains("plugin pid: pid.py changed; restarting it") } ? true : nil
            }
            let second = try await Self.pid(chat)
            #expect(second.hasPrefix("fine pid ") && second != first, "\(first) \(second)")
        }
    }

    @Test func anOperatorRestartsAPluginOverTheAPI() async throws {
        let script = try Self.pluginCopy()
        defer { try? FileManager.default.removeItem(atPath: (script as NSString).deletingLastPathComponent) }
        try await withHTTPChat(bots: ["b.yaml": Self.bot(script)]) { http in
            let first = try await Self.pid(http.chat)
            let output = try await builtPerch(["plugin", "restart", "pid"], against: http)
            #expect(output == "restarted pid of b\n")
            let second = try await Self.pid(http.chat)
            #expect(second.hasPrefix("fine pid ") && second != first, "\(first) \(second)")

            let unknown = try await http.call("POST", "/v3/plugins/nothing/restart")
            #expect(unknown.status == 404 && unknown.errorCode == "ERR_PLUGIN_NOT_FOUND")
            let otherBot = try await http.call("POST", "/v3/plugins/pid/restart?bot=ghost")
            #expect(otherBot.status == 404 && otherBot.errorCode == "ERR_PLUGIN_NOT_FOUND")
            let token = try #require(
                try await http.call("POST", "/v3/users/carol/auth_tokens").data["authToken"] as? String)
            let byUser = try await http.call("POST", "/v3/plugins/pid/restart", as: .token(token))
            #expect(byUser.status == 401)
        }
    }
}
