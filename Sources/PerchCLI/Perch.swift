import CSched
import Foundation
import PerchConfig
import PerchHost
import PerchLock
import PerchMatrix
import PerchSQLite

/// The `perch` command: parses the words, runs one subcommand, returns its exit code.
public enum Perch {
    public static let version = PerchVersion.current

    static let usage = """
        usage: perch <command> [options]

        commands:
          check [--config config.yaml] [--format text|json]   validate config.yaml and bots/*.yaml; with
                [--connect]                                    --connect, also ask the Matrix homeserver
          run   [--config config.yaml] [--log-format text|json] start the host on the configured backend
          dry-run --as UID (--group GUID | --to UID) [--thread ID] [--config config.yaml] "text"
                                                               show which bots and rules would fire, doing nothing
          dry-run --at TIME [--config config.yaml]             what the schedule rules due at TIME (UTC, such as
                                                               2026-12-07T09:00Z) would post, doing nothing
          send --as UID (--group GUID | --to UID) [--thread ID] [--quote ID] [--wait SECONDS] "text"
                                                               post over the HTTP API (PERCH_API_KEY), or with
                                                               --local into the local database; --wait: print
                                                               every effect that followed, a while after
          tail --as UID                                        live events of a user, readable; through the
                                                               host's restarts, missing none
          tail --notifications [--as UID]                      notifications as they are routed: everyone's,
                                                               or one user's
          pins --as UID (--group GUID | --to UID)              a conversation's pinned messages
          threads --as UID [--limit N] [--page N]              a user's threads inbox, newest reply first
          plugin restart NAME [--bot BOT]                      stop and start a running host's plugin (every
                                                               bot's that has it, or BOT's)
          storage list [--bot NAME] [--prefix P]               the plugins' stored values (a bot's, or the stores)
          storage clear --bot NAME [--prefix P]                remove a bot's (or a namespace's) values
          verify [--config config.yaml]                        check every page of the database, read-only
                                                               (beside a running host too)
          backup [--config config.yaml] DIRECTORY              a consistent copy of the database and uploads,
                                                               laid out as a data directory (beside a running
                                                               host too)
          schema config|bot                                    the JSON Schema of config.yaml or of a bot file,
                                                               for an editor (plugins' configuration included)
          version                                              print the version

        """

    /// One command's part of ``usage`` (`perch send --help`): its lines, with the usage's first line;
    /// nil for a command the usage does not name.
    static func usage(of command: String) -> String? {
        var lines: [Substring] = []
        var inside = false
        for line in usage.split(separator: "\n", omittingEmptySubsequences: false) {
            let words = line.split(separator: " ")
            if line.hasPrefix("  "), !line.hasPrefix("      "), let first = words.first {
                inside = first == command
            } else if !line.hasPrefix("      ") {
                inside = false
            }
            if inside { lines.append(line) }
        }
        guard !lines.isEmpty else { return nil }
        return "usage: perch \(command) [options]\n\n" + lines.joined(separator: "\n") + "\n"
    }

    /// `perch tail`, `perch pins`, `perch threads` (over the HTTP API).
    public static func client(_ command: String, _ arguments: [String]) async -> Int32 {
        await ClientCommands.run(command, arguments)
    }

    /// `perch send`: over the HTTP API when `PERCH_API_KEY` is set, else into the local database.
    public static func send(_ arguments: [String]) async -> Int32 {
        if let key = ProcessInfo.processInfo.environment["PERCH_API_KEY"], !key.isEmpty, !arguments.contains("--local")
        {
            return await ClientCommands.run("send", arguments)
        }
        var exitCode: Int32 = 0
        guard
            let parsed = ParsedArguments.forCommand(
                arguments.filter { $0 != "--local" },
                valued: ["config", "as", "group", "to", "thread", "quote", "wait"], positional: 1, exitCode: &exitCode)
        else { return exitCode }
        return await SendCommand.run(
            parsed, print: { print($0) }, printError: { FileHandle.standardError.write(Data(($0 + "\n").utf8)) })
    }

    /// `perch check --connect`: the checks of `perch check`, then (on the Matrix backend) what the
    /// homeserver tells: each account signs in, is in its rooms with the power its rules need, no
    /// room is encrypted (docs/matrix.md). Exit 1 when either finds an error.
    public static func checkConnected(_ arguments: [String]) async -> Int32 {
        var exitCode: Int32 = 0
        guard
            let parsed = ParsedArguments.forCommand(
                arguments.filter { $0 != "--connect" }, valued: ["config"], exitCode: &exitCode)
        else { return exitCode }
        let loader = ConfigurationLoader(swiftPlugins: builtInPlugins)
        let check = CheckCommand(configPath: parsed.options["config"] ?? "config.yaml", json: false, loader: loader)
        let code = check.run(print: { print($0) })
        guard code == 0 else { return code }
        let loaded = loader.load(configPath: check.configPath)
        guard loaded.config?.backend == .matrix else {
            print("--connect asks the Matrix homeserver, and this configuration's backend is embedded: nothing to ask")
            return 0
        }
        let findings = await ConnectCheck(loaded).run()
        for finding in findings { print(finding.description) }
        return findings.contains { $0.severity == .error } ? 1 : 0
    }

    /// The Swift plugins this process's commands know: Perch's own, or the registry a build of
    /// one's own gave ``main(registry:arguments:)``.
    public static var registry: PluginRegistry { chosenRegistry.withLock { $0 } }
    private static let chosenRegistry = Lock(PluginRegistry.standard)

    /// The Swift plugins this build registers, by name.
    public static var builtInPlugins: Set<String> { registry.names }

    /// `perch`'s whole command line, with `registry`'s Swift plugins known to every command (`run`,
    /// `check` with each plugin's configuration keys, `dry-run`, `send --local`): the entry point of
    /// `perch` itself (with ``PluginRegistry/standard``) and of a build of one's own with one's own
    /// plugins (docs/plugins.md, "Your own Swift plugin in your own perch"). Sets the process up
    /// (line-buffered output, the allocator, SIGPIPE ignored) and returns the exit code.
    public static func main(registry: PluginRegistry, arguments: [String] = Array(CommandLine.arguments.dropFirst()))
        async -> Int32
    {
        chosenRegistry.withLock { $0 = registry }
        perch_set_up_process_output()
        Allocator.tuneForHost()
        switch arguments.first {
        case "run", "dry-run": return await RunCommand.run(arguments)
        case "tail", "pins", "threads", "plugin": return await client(arguments[0], arguments)
        case "check" where arguments.contains("--connect"): return await checkConnected(arguments)
        case "send": return await send(arguments)
        case "storage":
            return await StorageCommand.run(
                arguments, print: { print($0) },
                printError: { FileHandle.standardError.write(Data(($0 + "\n").utf8)) })
        default: return main(arguments)
        }
    }

    public static func main(
        _ arguments: [String], print write: @escaping (String) -> Void = { print($0) },
        printError: @escaping (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
    ) -> Int32 {
        if arguments.first == "backup" {
            return BackupCommand.run(Array(arguments), print: write, printError: printError)
        }
        if arguments.first == "schema" {
            return SchemaCommand.run(Array(arguments), print: write, printError: printError)
        }
        var exitCode: Int32 = 0
        guard
            let parsed = ParsedArguments.forCommand(
                arguments, valued: ["config", "format"], exitCode: &exitCode, print: write, printError: printError)
        else { return exitCode }
        let configPath = parsed.options["config"] ?? "config.yaml"
        let loader = ConfigurationLoader(swiftPlugins: builtInPlugins)
        switch parsed.command {
        case "check":
            let format = parsed.options["format"] ?? "text"
            guard format == "text" || format == "json" else {
                printError("perch: --format is text or json, not '\(format)'")
                return 64
            }
            return CheckCommand(configPath: configPath, json: format == "json", loader: loader).run(print: write)
        case "run", "dry-run":
            printError("perch: \(parsed.command!) runs from the executable (RunCommand); this entry point checks only")
            return 64
        case "verify":
            // `--format` is check's: taken here, it would be ignored without a word.
            guard parsed.options["format"] == nil else {
                printError("perch: unknown option --format for verify\n\n\(usage)")
                return 64
            }
            return verify(loader.load(configPath: configPath), print: write, printError: printError)
        case "version", "--version":
            write("perch \(version)")
            return 0
        case nil, "help":
            write(usage)
            return parsed.command == nil ? 64 : 0
        default:
            printError("perch: unknown command '\(parsed.command!)'\n\n\(usage)")
            return 64
        }
    }

    /// `perch verify`: every page and index of the configured database, checked read-only, as an
    /// admin runs `fsck -n`: the host's own check at open is skipped after a clean stop (the file as
    /// that stop left it), so a disk's damage to a file at rest shows here or when a page is read.
    /// Exit 0 whole, 1 damaged or not there.
    static func verify(_ loaded: LoadedConfiguration, print write: (String) -> Void, printError: (String) -> Void)
        -> Int32
    {
        guard let config = loaded.config, loaded.isValid else {
            for finding in loaded.findings { printError(finding.description) }
            return 1
        }
        let path = loaded.resolve(config.server.dataDirectory) + "/perch.sqlite"
        let started = Date()
        do {
            let problems = try SQLiteChatStore.verify(path: path)
            guard problems.isEmpty else {
                for problem in problems { write("\(path): \(problem)") }
                printError(
                    "perch: \(path) is damaged (\(problems.count) problem\(problems.count == 1 ? "" : "s") above); "
                        + "restore it from a backup")
                return 1
            }
            let seconds = String(format: "%.2f", Date().timeIntervalSince(started))
            write("\(path): every page and index whole (checked in \(seconds) s)")
            return 0
        } catch {
            printError("perch: \(error)")
            return 1
        }
    }
}
