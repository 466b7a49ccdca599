import Foundation
import PerchChat
import PerchHost
import PerchLock
import PerchTesting
import Testing

/// The harness plugin authors test their bots with: a real host in-process on a temporary
/// directory, shut down and removed whatever the test body does.
@Suite struct TestHostTests {
    static let config = """
        version: 1
        seed:
          users:
            - { uid: alice, name: Alice }
          groups:
            - { guid: room, name: Room, owner: alice }
        """
    static let echo = """
        name: echo
        user: { uid: echo, name: Echo }
        groups: [{ guid: room }]
        rules:
          - on: { command: say }
            do: [{ reply: "{args}" }]
        """

    struct Thrown: Error {}

    @Test func aBotAnswersAndSettleWaitsForIt() async throws {
        try await withTestHost(config: Self.config, bots: ["echo.yaml": Self.echo]) { chat in
            let asked = try await chat.post("!say hello", as: "alice", to: .group("room"))
            try await chat.settle()
            // Settled: the answer is there without waiting for it.
            let texts = try await chat.messages(in: .group("room")).map { "\($0.sender): \($0.text ?? "")" }
            #expect(texts == ["alice: !say hello", "echo: hello"])
            let answer = try await chat.waitForMessage(in: .group("room")) { $0.sender == "echo" }
            #expect(answer.id > asked.id)
        }
    }

    @Test func theHostStopsAndItsDirectoryGoesWhenTheBodyThrows() async throws {
        let seen = Lock<(host: BotHost?, directory: String)>((nil, ""))
        await #expect(throws: Thrown.self) {
            try await withTestHost(config: Self.config, bots: ["echo.yaml": Self.echo]) { chat in
                seen.withLock { $0 = (chat.host, chat.directory) }
                throw Thrown()
            }
        }
        let (host, directory) = seen.withLock { $0 }
        #expect(await host?.state == .stopped)
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    @Test func aWaitThatRunsOutSaysWhatItWaitedFor() async throws {
        try await withTestHost(config: Self.config, bots: ["echo.yaml": Self.echo]) { chat in
            await #expect {
                _ = try await chat.waitForMessage(in: .group("room"), timeout: .milliseconds(100)) { _ in true }
            } throws: { error in
                (error as? TestHostTimeout)?.description
                    == "timed out waiting for a matching message in group(\"room\")"
            }
        }
    }

    @Test func anInvalidConfigurationIsRefusedWithItsFindings() async throws {
        await #expect {
            try await withTestHost(config: Self.config, bots: ["echo.yaml": "name: echo\nrules: 3\n"]) { _ in
                Issue.record("the body ran")
            }
        } throws: { error in
            "\(error)".contains("bots/echo.yaml:")
        }
    }
}
