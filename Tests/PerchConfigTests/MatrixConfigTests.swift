import Foundation
import PerchConfig
import Testing

/// config.yaml's `backend: matrix` and what `perch check` says of bot files on it.
@Suite struct MatrixConfigTests {
    static let config = """
        version: 1
        backend: matrix
        matrix:
          homeserver: http://127.0.0.1:8008
          accounts:
            helper: ${HELPER_TOKEN}
          rooms:
            general: "#general:example.org"
            announcements: "!AbCdEf:example.org"
        """

    static let helper = """
        name: helper
        user: { uid: helper, name: Helper }
        groups: [general, { guid: announcements, scope: moderator }]
        rules:
          - on: mention
            when: { from: ["@alice:example.org"] }
            do: [{ quote_reply: "Hi {sender.name}" }]
        """

    static func load(_ config: String = config, bots: [String: String] = ["helper.yaml": helper]) throws
        -> LoadedConfiguration
    {
        let fixture = try ConfigFixture(config: config, bots: bots)
        defer { fixture.cleanup() }
        return fixture.load(environment: ["HELPER_TOKEN": "syt_helper_token", "OTHER_TOKEN": "syt_other"])
    }

    @Test func aMatrixConfigurationLoadsWithItsRoomsAndAccounts() throws {
        let loaded = try Self.load()
        #expect(loaded.findings.isEmpty, "\(loaded.findings)")
        let matrix = try #require(loaded.config).matrix
        #expect(loaded.config?.backend == .matrix)
        #expect(matrix.homeserver == "http://127.0.0.1:8008")
        #expect(matrix.accounts == ["helper": "syt_helper_token"])
        #expect(matrix.rooms == ["general": "#general:example.org", "announcements": "!AbCdEf:example.org"])
        #expect(matrix.followDigestSeconds == 60 && matrix.syncTimeoutSeconds == 30)
    }

    @Test func aBotWithoutAnAccountIsNamedWhereItsUserIs() throws {
        let other =
            "name: other\nuser: { uid: other-bot, name: Other }\ngroups: [general]\nrules:\n  - on: message\n    do: [{ reply: hi }]\n"
        let loaded = try Self.load(bots: ["helper.yaml": Self.helper, "other.yaml": other])
        #expect(
            loaded.findings.map(\.description) == [
                "bots/other.yaml:2:14: error: user.uid: bot 'other' has no Matrix account: add "
                    + "`other-bot: ${MATRIX_OTHER_BOT_TOKEN}` under matrix.accounts in config.yaml (its access token, "
                    + "from the environment)"
            ])
    }

    @Test func aRoomNamedTwiceIsRefusedAtItsSecondName() throws {
        let config = Self.config + "\n    random: \"#general:example.org\"\n"
        let loaded = try Self.load(config)
        #expect(
            loaded.findings.map(\.description) == [
                "config.yaml:10:13: error: matrix.rooms.random: room '#general:example.org' is already mapped as "
                    + "'general' (config.yaml:8:14)"
            ])
    }

    @Test func aGroupTheRoomsDoNotMapAndAPersonWhoIsNotAMatrixIdAreNamed() throws {
        let bot = Self.helper.replacingOccurrences(of: "groups: [general,", with: "groups: [random,")
            .replacingOccurrences(of: "\"@alice:example.org\"", with: "alice")
        let loaded = try Self.load(bots: ["helper.yaml": bot])
        #expect(
            loaded.findings.map(\.description) == [
                "bots/helper.yaml:3:10: error: groups[0]: unknown group 'random' (not in matrix.rooms)",
                "bots/helper.yaml:6:20: error: rules[0].when.from[0]: unknown user 'alice' (not a Matrix id like "
                    + "@alice:example.org, and not a bot)",
            ])
    }

    @Test func anActionMatrixCannotPerformIsAnError() throws {
        let bot = Self.helper + "\n  - on: message\n    do: [save, { react: \"👍\" }]\n"
        let loaded = try Self.load(bots: ["helper.yaml": bot])
        #expect(
            loaded.findings.map(\.description) == [
                "bots/helper.yaml:9:10: error: rules[1].do[0]: 'save' is not available on the matrix backend: "
                    + "Matrix has no saved messages (docs/matrix.md, \"What the backends can do\")"
            ])
    }

    @Test(arguments: [
        (
            "homeserver: http://127.0.0.1:8008", "homeserver: ftp://example.org",
            "config.yaml:4:15: error: matrix.homeserver: 'ftp://example.org' is not an http or https URL like http://127.0.0.1:8008"
        ),
        (
            "    general: \"#general:example.org\"", "    general: general",
            "config.yaml:8:14: error: matrix.rooms.general: 'general' is not a room id (!id) or alias (#name:server)"
        ),
        (
            "helper: ${HELPER_TOKEN}", "helper: \"\"",
            "config.yaml:6:13: error: matrix.accounts.helper: the access token is empty (is its environment variable set?)"
        ),
    ])
    func aWrongMatrixValueIsNamed(original: String, replacement: String, finding: String) throws {
        let loaded = try Self.load(Self.config.replacingOccurrences(of: original, with: replacement))
        #expect(loaded.findings.map(\.description) == [finding])
    }

    @Test func theEmbeddedBackendsSeedIsAWarningOnMatrixAndMatrixOneOnTheEmbeddedBackend() throws {
        let seeded = try Self.load(Self.config + "\nseed:\n  users:\n    - { uid: alice, name: Alice }\n")
        #expect(seeded.errors.isEmpty, "\(seeded.findings)")
        #expect(
            seeded.findings.map(\.description).first?.hasPrefix("config.yaml:11:3: warning: seed: `seed` creates")
                == true, "\(seeded.findings)")
        let embedded = try Self.load(
            Self.config.replacingOccurrences(of: "backend: matrix", with: "backend: embedded")
                + "\nseed:\n  groups:\n    - { guid: general, name: General, owner: helper }\n    - { guid: announcements, name: A, owner: helper }\n"
        )
        #expect(
            embedded.findings.map(\.description).contains {
                $0.hasPrefix("config.yaml:4:3: warning: matrix: `matrix` is read with `backend: matrix` only")
            }, "\(embedded.findings)")
    }
}
