import Foundation

/// The bots' plugin values.
extension SQLiteTransaction {
    func pluginValue(bot: String, key: String) throws -> String? {
        try db.query("SELECT value FROM plugin_state WHERE bot = ? AND key = ?", [.text(bot), .text(key)]) {
            $0.text(0)
        }.first
    }

    func setPluginValue(bot: String, key: String, value: String?) throws {
        if let value {
            try db.run(
                """
                INSERT INTO plugin_state (bot, key, value) VALUES (?, ?, ?)
                ON CONFLICT (bot, key) DO UPDATE SET value = excluded.value
                """, [.text(bot), .text(key), .text(value)])
        } else {
            try db.run("DELETE FROM plugin_state WHERE bot = ? AND key = ?", [.text(bot), .text(key)])
        }
    }
}
