import Foundation
import PerchChat
import PerchConfig
import PerchSQLite
import PerchService

/// `perch storage list [--bot NAME] [--prefix P]` and `perch storage clear --bot NAME [--prefix P]`:
/// the plugins' storage in the local database, beside a running host too. `--bot` takes a bot's
/// name or `bot/namespace`; `list` without it names every store.
enum StorageCommand {
    static func run(_ arguments: [String], print write: (String) -> Void, printError: (String) -> Void) async -> Int32 {
        var exitCode: Int32 = 0
        guard
            let parsed = ParsedArguments.forCommand(
                arguments, valued: ["config", "bot", "prefix"], positional: 1, exitCode: &exitCode, print: write,
                printError: printError)
        else { return exitCode }
        let action = parsed.positional.first ?? ""
        guard action == "list" || (action == "clear" && parsed.options["bot"] != nil) else {
            printError("usage: perch storage list [--bot NAME] [--prefix P] | storage clear --bot NAME [--prefix P]")
            return 64
        }
        guard
            let store = LocalDatabase.open(
                configPath: parsed.options["config"] ?? "config.yaml", requireValid: false, printError: printError)
        else { return 1 }
        let service = ChatService(store: store)
        let prefix = parsed.options["prefix"] ?? ""
        var status: Int32 = 0
        do {
            switch (action, parsed.options["bot"]) {
            case ("list", nil):
                let stores = try await service.pluginStores().filter { !$0.hasPrefix("~") }
                if stores.isEmpty { write("no plugin storage") }
                for name in stores { write(name) }
            case ("list", let bot?):
                let values = try await service.storedValues(in: bot, prefix: prefix)
                if values.isEmpty { write("nothing stored for \(bot)" + (prefix.isEmpty ? "" : " under '\(prefix)'")) }
                for entry in values {
                    var writer = JSONWriter()
                    writer.value(entry.value)
                    let expiry = entry.expiresAt == 0 ? "" : "  (expires \(Self.time(entry.expiresAt)))"
                    write("\(entry.key) = \(writer.output)\(expiry)")
                }
            default:
                let removed = try await service.clearStoredValues(in: parsed.options["bot"]!, prefix: prefix)
                write("removed \(removed) value\(removed == 1 ? "" : "s")")
            }
        } catch {
            printError("perch: \(error)")
            status = 1
        }
        await store.close()
        return status
    }

    static func time(_ seconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(seconds)))
    }
}
