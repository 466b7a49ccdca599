import Foundation
import PerchConfig

/// A configuration directory in a fresh temporary folder, removed by `cleanup()`.
struct ConfigFixture {
    let directory: String

    static let baseConfig = """
        version: 1
        seed:
          users:
            - { uid: alice, name: Alice }
            - { uid: bob, name: Bob }
          groups:
            - guid: general
              name: General
              owner: alice
              members:
                - { uid: bob }
        """

    static let baseBot = """
        name: b
        user: { uid: botb, name: Bot B }
        groups: [general]
        rules:
          - on: message
            do:
              - reply: "hello"
        """

    init(config: String = ConfigFixture.baseConfig, bots: [String: String] = [:]) throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("perch-config-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/bots", withIntermediateDirectories: true)
        try config.write(toFile: directory + "/config.yaml", atomically: true, encoding: .utf8)
        for (name, text) in bots {
            try text.write(toFile: directory + "/bots/" + name, atomically: true, encoding: .utf8)
        }
    }

    /// Loads with paths relative to the fixture, so findings read `config.yaml:…` and `bots/…`.
    func load(environment: [String: String] = [:], plugins: Set<String> = []) -> LoadedConfiguration {
        var loaded = ConfigurationLoader(environment: environment, swiftPlugins: plugins)
            .load(configPath: directory + "/config.yaml")
        for index in loaded.findings.indices where loaded.findings[index].location.file.hasPrefix(directory + "/") {
            loaded.findings[index].location.file.removeFirst(directory.count + 1)
        }
        for index in loaded.findings.indices {
            loaded.findings[index].message = loaded.findings[index].message.replacingOccurrences(
                of: directory + "/", with: "")
        }
        return loaded
    }

    func cleanup() { try? FileManager.default.removeItem(atPath: directory) }
}
