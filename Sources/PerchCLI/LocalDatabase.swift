import Foundation
import PerchConfig
import PerchSQLite

/// The database of a configuration, opened by a command that works on it directly (`send --local`,
/// `storage`), beside a running host too.
enum LocalDatabase {
    /// The store of `configPath`'s data directory, or nil after saying why: the configuration does
    /// not load (or, with `requireValid`, has errors), there is no database yet, or it cannot open.
    /// The caller closes it.
    static func open(configPath: String, requireValid: Bool, printError: (String) -> Void) -> SQLiteChatStore? {
        let loaded = ConfigurationLoader(swiftPlugins: Perch.builtInPlugins).load(configPath: configPath)
        guard let config = loaded.config, loaded.isValid || !requireValid else {
            for finding in loaded.findings { printError(finding.description) }
            return nil
        }
        let path = loaded.resolve(config.server.dataDirectory) + "/perch.sqlite"
        guard FileManager.default.fileExists(atPath: path) else {
            printError("perch: no database at \(path): start the host first (make run)")
            return nil
        }
        do {
            return try SQLiteChatStore(path: path)
        } catch {
            printError("perch: \(error)")
            return nil
        }
    }
}
