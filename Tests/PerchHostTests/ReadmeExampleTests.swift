import Foundation
import PerchChat
import PerchHost
import PerchTestSupport
import PerchTesting
import Testing

/// The README's first bot, as a newcomer copies it: beside the shipped bots, it loads and answers.
@Suite struct ReadmeExampleTests {
    /// The first ```yaml block after the README's heading `heading`.
    static func yamlBlock(after heading: String) throws -> String {
        let readme = try String(contentsOfFile: repositoryRoot + "/README.md", encoding: .utf8)
        let section = try #require(readme.range(of: "## " + heading).map { readme[$0.upperBound...] })
        let start = try #require(section.range(of: "```yaml\n"))
        let end = try #require(section[start.upperBound...].range(of: "```"))
        return String(section[start.upperBound..<end.lowerBound])
    }

    @Test func theFirstBotAnswersItsCommandAndSaysItInHelp() async throws {
        let greeter = try Self.yamlBlock(after: "A first bot")
        let shipped = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot + "/bots")
        var bots = try Dictionary(
            uniqueKeysWithValues: shipped.filter { $0.hasSuffix(".yaml") }.map { name in
                (name, try String(contentsOfFile: repositoryRoot + "/bots/" + name, encoding: .utf8))
            })
        bots["greeter.yaml"] = greeter
        let config = try String(contentsOfFile: repositoryRoot + "/config.yaml", encoding: .utf8)
        try await withTestHost(config: config, bots: bots) { chat in
            let hello = try await chat.post("!hello", as: "alice", to: .group("general"))
            let answer = try await chat.waitForMessage(in: .group("general")) { $0.sender == "greeter" }
            #expect(answer.text == "Hello, Alice!")
            #expect(answer.quotedMessageId == hello.id)
            let help = try await chat.post("!help", as: "alice", to: .group("general"))
            let listed = try await chat.waitForMessage(in: .group("general")) {
                $0.sender == "greeter" && $0.quotedMessageId == help.id
            }
            #expect(listed.text == "Greeter's commands:\n!hello — says hello back")
        }
    }
}
