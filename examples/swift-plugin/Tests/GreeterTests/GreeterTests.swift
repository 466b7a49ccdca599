import Foundation
import Greeter
import PerchHost
import PerchTesting
import Testing

/// The greeter in a host of its own, in process, with its real bot file: what a plugin's test
/// looks like.
@Suite struct GreeterTests {
    static let config = """
        version: 1
        seed:
          users:
            - { uid: ada, name: Ada }
          groups:
            - { guid: lobby, name: Lobby, owner: ada }
        """

    @Test func itGreetsByNameAndCounts() async throws {
        var registry = PluginRegistry.standard
        registry.register(Greeter.self)
        let bot = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../bots/greeter.yaml"), encoding: .utf8)
        try await withTestHost(config: Self.config, bots: ["greeter.yaml": bot], registry: registry) { chat in
            try await chat.post("!hello", as: "ada", to: .group("lobby"))
            let first = try await chat.waitForMessage(in: .group("lobby")) { $0.sender == "greeter" }
            #expect(first.text == "Welcome, Ada!")
            try await chat.post("!hello", as: "ada", to: .group("lobby"))
            let second = try await chat.waitForMessage(in: .group("lobby")) { $0.text?.contains("2 times") == true }
            #expect(second.text == "Welcome, Ada! (2 times now)")
        }
    }
}
