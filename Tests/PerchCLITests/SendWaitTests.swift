import Foundation
import PerchCLI
import PerchTestSupport
import PerchTesting
import Synchronization
import Testing

/// `perch send --wait` reports every kind of effect that followed the message, where the sender
/// can see it: the bot's messages (its direct answer too), its reaction, its pin. The waits are
/// long: under the whole suite's load an in-process bot was seen to take more than 4 s.
@Suite struct SendWaitTests {
    static let bot = botFile(
        """
          - on: { command: all }
            do:
              - react: "👀"
              - pin
              - direct_message: "psst"
              - reply: "done"
          - on: { command: out }
            do: [kick]
        """)

    @Test func theLocalSendReportsEveryEffect() async throws {
        let directory = try writeTestConfiguration(config: hostConfig, bots: ["b.yaml": Self.bot])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withTestHost(configPath: directory + "/config.yaml", dataDirectory: directory + "/data") { _ in
            let lines = Mutex<[String]>([])
            let parsed = try ParsedArguments(
                [
                    "send", "--config", directory + "/config.yaml", "--as", "carol", "--group", "room", "--wait", "10",
                    "!all",
                ],
                valued: ["config", "as", "group", "to", "thread", "quote", "wait"], positional: 1)
            let code = await SendCommand.run(
                parsed, print: { line in lines.withLock { $0.append(line) } }, printError: { _ in })
            #expect(code == 0)
            let output = lines.withLock { $0 }
            let sent = try #require(output.first?.split(separator: " ").dropFirst().first.map(String.init))
            #expect(output.first == "sent \(sent) carol: !all")
            for expected in ["  \(sent) bot reacted 👀", "  \(sent) pinned by bot"] {
                #expect(output.contains(expected), "\(output)")
            }
            #expect(output.contains { $0.hasSuffix(" bot: psst") }, "\(output)")
            #expect(output.contains { $0.hasSuffix(" bot: done") }, "\(output)")
        }
    }

    /// Over the HTTP API, what followed in the conversation, its thread and the bots' direct
    /// conversations with the sender, and what was done to the message.
    @Test func theSendOverHTTPReportsWhatFollowedAndWhatWasDoneToIt() async throws {
        try await withHTTPChat(bots: ["b.yaml": Self.bot]) { http in
            let output = try await builtPerch(
                ["send", "--as", "carol", "--group", "room", "--wait", "10", "!all"], against: http)
            let lines = output.split(separator: "\n").map(String.init)
            let sent = try #require(lines.first?.split(separator: " ").dropFirst().first.map(String.init))
            #expect(lines.first == "sent \(sent) carol: !all")
            #expect(lines.contains { $0.hasSuffix(" bot: done") }, "\(lines)")
            #expect(lines.contains { $0.hasSuffix(" bot: psst") }, "\(lines)")
            #expect(lines.contains("  \(sent) 👀 ×1"), "\(lines)")
            #expect(lines.contains("  \(sent) pinned by bot"), "\(lines)")
            // A member change: the sender kicked out.
            let kicked = try await builtPerch(
                ["send", "--as", "carol", "--group", "room", "--wait", "10", "!out"], against: http)
            #expect(kicked.split(separator: "\n").last == "  carol is no longer in room", "\(kicked)")
        }
    }
}
