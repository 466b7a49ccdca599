import Foundation
import PerchChat
import PerchConfig
import Testing

/// config.yaml's `notifications.webhooks`.
@Suite struct WebhookConfigTests {
    static func load(_ webhooks: String) throws -> LoadedConfiguration {
        let fixture = try ConfigFixture(
            config: """
                version: 1
                notifications:
                  webhooks:
                \(webhooks)
                """, bots: [:])
        defer { fixture.cleanup() }
        return fixture.load(environment: ["PAGER_SECRET": "0123456789abcdef-pager"])
    }

    @Test func aWebhookLoadsWithItsDefaults() throws {
        let loaded = try Self.load(
            """
                - url: https://push.example.org/perch?token=abc
                  secret: ${PAGER_SECRET}
                - url: http://127.0.0.1:9000/hook
                  secret: ${PAGER_SECRET}
                  events: [mention, subscribed_thread]
                  name: local
                  maxAttempts: 5
            """)
        #expect(loaded.findings.isEmpty, "\(loaded.findings)")
        let webhooks = try #require(loaded.config).notifications.webhooks
        #expect(webhooks.count == 2)
        // The default name shows no path or query (they may hold a token).
        #expect(webhooks[0].name == "https://push.example.org")
        #expect(webhooks[0].secret == "0123456789abcdef-pager")
        #expect(webhooks[0].events == NotificationReason.allCases)
        #expect(
            webhooks[0].maxAttempts == 30 && webhooks[0].maxBackoffSeconds == 300 && webhooks[0].timeoutSeconds == 10)
        #expect(webhooks[1].events == [.mention, .subscribedThread] && webhooks[1].name == "local")
    }

    @Test func eachMistakeIsALocatedFinding() throws {
        let loaded = try Self.load(
            """
                - url: ftp://example.org/x
                  secret: short
                - url: http://a.example.org/1
                  secret: ${PAGER_SECRET}
                  name: same
                  maxAttempts: 0
                - url: http://b.example.org/2
                  secret: ${PAGER_SECRET}
                  name: same
                  events: []
                  timeoutSeconds: 9999
                - url: http://c.example.org/3
                  secret: ${PAGER_SECRET}
                  events: [everything]
            """)
        let found = loaded.findings.map { "\($0.location.line) \($0.path)" }
        #expect(
            found == [
                "4 notifications.webhooks[0].url", "5 notifications.webhooks[0].secret",
                "9 notifications.webhooks[1].maxAttempts", "12 notifications.webhooks[2].name",
                "13 notifications.webhooks[2].events", "14 notifications.webhooks[2].timeoutSeconds",
                "17 notifications.webhooks[3].events[0]",
            ], "\(loaded.findings)")
        #expect(loaded.findings.first { $0.path.hasSuffix("[2].name") }?.message.contains("webhooks[1]") == true)
        let reason = try #require(loaded.findings.last)
        #expect(reason.message.contains("everything") && reason.message.contains("subscribed_thread"), "\(reason)")
    }
}
