import Foundation

/// Finds an external plugin's program the way the host starts it (`posix_spawnp` in the
/// configuration's directory): a name with a slash is a path from that directory, any other name
/// is looked up on `PATH`.
struct ProgramFinder: Sendable {
    /// The configuration's directory, the plugin's working directory (empty: the current one).
    let directory: String
    /// The `PATH` the host would run with.
    let searchPath: String

    /// Why `program` cannot be started, or nil when it can.
    func problem(with program: String) -> String? {
        if program.contains("/") {
            let full = program.hasPrefix("/") || directory.isEmpty ? program : directory + "/" + program
            guard Self.isFile(full) else { return "the program '\(program)' does not exist" }
            return access(full, X_OK) == 0 ? nil : "the program '\(program)' is not executable"
        }
        let found = searchPath.split(separator: ":", omittingEmptySubsequences: false).contains { entry in
            let place = entry.isEmpty ? (directory.isEmpty ? "." : directory) : String(entry)
            let full = place + "/" + program
            return Self.isFile(full) && access(full, X_OK) == 0
        }
        return found ? nil : "the program '\(program)' is not on PATH"
    }

    private static func isFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
    }
}
