import Foundation
import PerchChat
import PerchHost
import PerchTesting

/// A small config for host tests: alice owns `room` (bob admin, carol participant) and `other`.
let hostConfig = """
    version: 1
    seed:
      users:
        - { uid: alice, name: Alice }
        - { uid: bob, name: Bob }
        - { uid: carol, name: Carol }
      groups:
        - guid: room
          name: Room
          owner: alice
          members:
            - { uid: bob, scope: admin }
            - { uid: carol }
        - guid: other
          name: Other
          owner: alice
          members:
            - { uid: carol }
    """

/// The bot file of ``botFile(_:extra:)`` with one rule: a message starting with `prefix` runs the
/// Swift plugin `plugin`; and the standard registry with `type` registered.
func pluginBot<Plugin: BotPlugin>(_ type: Plugin.Type, on prefix: String) -> (file: String, registry: PluginRegistry) {
    var registry = PluginRegistry.standard
    registry.register(type)
    let file = botFile(
        """
          - on: message
            when: { text_matches: "^\(prefix)" }
            do: [{ plugin: \(Plugin.name) }]
        """, extra: "plugins:\n  - name: \(Plugin.name)")
    return (file, registry)
}

/// A bot file with one bot `b` (uid `bot`) in `room` and `other`, as moderator, and these rules.
func botFile(_ rules: String, extra: String = "") -> String {
    """
    name: b
    user: { uid: bot, name: Bot }
    system: true
    groups:
      - { guid: room, scope: moderator }
      - { guid: other, scope: moderator }
    \(extra)
    rules:
    \(rules)
    """
}

extension TestChat {
    /// The bot's messages in a conversation, oldest first, after the bots settled.
    func botMessages(in receiver: Receiver, bot: String = "bot", viewer: String = "alice") async throws -> [Message] {
        try await settle()
        return try await messages(in: receiver, viewer: viewer).filter { $0.sender == bot }
    }
}
