import Foundation
import PerchConfig
import PerchLock
import PerchSQLite

/// `perch backup DIRECTORY`: a consistent copy of the data a host keeps, beside a running host or
/// a stopped one, laid out as a data directory (`perch.sqlite` and `media/`), so that restoring is
/// pointing `server.dataDirectory` at it, or copying it into place with the host stopped.
///
/// The database is one snapshot (``SQLiteChatStore/copy(path:to:)``), and the uploaded files are
/// those its rows name (an upload is never changed or removed once made). Everything is written
/// into a new directory beside `DIRECTORY`, flushed to the disk, and renamed to `DIRECTORY` only
/// when whole: a failed or killed backup leaves no `DIRECTORY`, and an existing one is never
/// touched. Exit 0 done, 1 failed, 64 a usage mistake.
enum BackupCommand {
    static func run(
        _ arguments: [String], print write: (String) -> Void, printError: (String) -> Void
    ) -> Int32 {
        var exitCode: Int32 = 0
        guard
            let parsed = ParsedArguments.forCommand(
                arguments, valued: ["config"], positional: 1, exitCode: &exitCode, print: write,
                printError: printError)
        else { return exitCode }
        guard let destination = parsed.positional.first, !destination.isEmpty else {
            printError("perch: backup needs the directory to write, which must not exist yet\n\n\(Perch.usage)")
            return 64
        }
        let loaded = ConfigurationLoader(swiftPlugins: Perch.builtInPlugins).load(
            configPath: parsed.options["config"] ?? "config.yaml")
        guard let config = loaded.config, loaded.isValid else {
            for finding in loaded.findings { printError(finding.description) }
            return 1
        }
        let data = loaded.resolve(config.server.dataDirectory)
        let started = Date()
        do {
            let copied = try backUp(data: data, to: destination)
            let seconds = String(format: "%.2f", Date().timeIntervalSince(started))
            let megabytes = String(format: "%.1f", Double(copied.bytes) / 1_048_576)
            write(
                "backed up \(data) to \(destination): \(copied.messages) messages, \(copied.media.count) "
                    + "uploaded file\(copied.media.count == 1 ? "" : "s"), a \(megabytes) MiB database, in \(seconds) s"
            )
            return 0
        } catch {
            let untouched =
                FileManager.default.fileExists(atPath: destination) ? "" : " (nothing was written to \(destination))"
            printError("perch: backup failed\(untouched): \(error)")
            return 1
        }
    }

    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    /// Writes the backup of the data directory `data` to `destination`; what it copied.
    static func backUp(data: String, to destination: String) throws -> StoreCopy {
        let target = destination.count > 1 && destination.hasSuffix("/") ? String(destination.dropLast()) : destination
        guard !FileManager.default.fileExists(atPath: target) else {
            throw Refusal(description: "\(target) already exists (a backup never writes over anything)")
        }
        let parent = (target as NSString).deletingLastPathComponent
        let above = parent.isEmpty ? "." : parent
        try PrivateFile.makeDirectory(above)
        // A directory of its own beside the target (mode 0700), renamed into place when whole.
        var template = Array((target + ".partial-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw PrivateFile.Failure(path: target + ".partial-XXXXXX", operation: "mkdtemp", code: errno)
        }
        let partial = String(cString: made)
        var renamed = false
        defer { if !renamed { try? FileManager.default.removeItem(atPath: partial) } }

        let copied = try SQLiteChatStore.copy(path: data + "/perch.sqlite", to: partial + "/perch.sqlite")
        for id in copied.media {
            // The API names each upload by 64 hex digits; anything else is not a file of ours.
            guard id.count == 64, id.allSatisfy(\.isHexDigit) else {
                throw Refusal(description: "the database names an upload '\(id)' that is not a media id")
            }
            let source = data + "/media/" + id
            do {
                try PrivateFile.copy(source, to: partial + "/media/" + id)
            } catch {
                guard error.code == ENOENT, error.path == source else { throw error }
                throw Refusal(description: "the upload \(id) is in the database but not in \(data)/media")
            }
        }
        if let failure = PrivateFile.sync(directory: partial) { throw failure }
        do {
            try PrivateFile.rename(partial, to: target)
        } catch {
            if error.code == EEXIST || error.code == ENOTEMPTY {
                throw Refusal(
                    description: "\(target) was made while the backup ran (a backup never writes over anything)")
            }
            // The fsync after the rename: in place, but its entry may not be on the disk yet.
            renamed = error.operation == "fsync"
            throw error
        }
        renamed = true
        return copied
    }
}
