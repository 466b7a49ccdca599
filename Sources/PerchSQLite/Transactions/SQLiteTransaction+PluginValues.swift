import Foundation
import PerchService

/// The bots' plugin values: plain text (the string API, the Matrix backend's records) or JSON with
/// an optional expiry (the plugins' storage).
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
                ON CONFLICT (bot, key) DO UPDATE SET value = excluded.value, is_json = 0, expires_at = 0
                """, [.text(bot), .text(key), .text(value)])
        } else {
            try db.run("DELETE FROM plugin_state WHERE bot = ? AND key = ?", [.text(bot), .text(key)])
        }
    }

    func pluginEntry(bot: String, key: String) throws -> StoredPluginValue? {
        try db.query(
            "SELECT key, value, is_json, expires_at FROM plugin_state WHERE bot = ? AND key = ?",
            [.text(bot), .text(key)], row: Self.storedValue
        ).first
    }

    func pluginEntries(bot: String, prefix: String, limit: Int) throws -> [StoredPluginValue] {
        // Keys from `prefix` up to the next key that does not start with it: a range the primary key
        // seeks, not a LIKE (whose `%` and `_` a key may hold).
        try db.query(
            """
            SELECT key, value, is_json, expires_at FROM plugin_state
            WHERE bot = ?1 AND key >= ?2 AND substr(key, 1, length(?2)) = ?2 ORDER BY key LIMIT ?3
            """, [.text(bot), .text(prefix), .int(Int64(limit))], row: Self.storedValue)
    }

    func setPluginEntry(bot: String, key: String, text: String, isJSON: Bool, expiresAt: Int64) throws {
        try db.run(
            """
            INSERT INTO plugin_state (bot, key, value, is_json, expires_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (bot, key) DO UPDATE
            SET value = excluded.value, is_json = excluded.is_json, expires_at = excluded.expires_at
            """, [.text(bot), .text(key), .text(text), .int(isJSON ? 1 : 0), .int(expiresAt)])
    }

    func clearPluginValues(bot: String, prefix: String) throws -> Int {
        try db.run(
            "DELETE FROM plugin_state WHERE bot = ?1 AND substr(key, 1, length(?2)) = ?2", [.text(bot), .text(prefix)])
    }

    func pluginStores() throws -> [String] {
        try db.query("SELECT DISTINCT bot FROM plugin_state ORDER BY bot") { $0.text(0) }
    }

    private static func storedValue(_ row: SQLiteConnection.Row) -> StoredPluginValue {
        StoredPluginValue(key: row.text(0), text: row.text(1), isJSON: row.int(2) != 0, expiresAt: row.int(3))
    }
}
