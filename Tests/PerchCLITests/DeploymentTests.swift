import Foundation
import PerchLock
import PerchSQLite
import PerchTestSupport
import PerchTesting
import Testing

/// contrib/systemd: the units systemd itself accepts, and the commands they run are ones `perch`
/// takes, run as the units run them.
@Suite struct DeploymentTests {
    static let units = ["perch.service", "perch-backup.service", "perch-backup.timer"]

    /// The units with `/usr/local/bin/perch` replaced by this build's `perch`, in a new directory.
    static func unitsForThisBuild() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-units-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for unit in units {
            let text = try String(contentsOfFile: repositoryRoot + "/contrib/systemd/" + unit, encoding: .utf8)
            try text.replacingOccurrences(of: "/usr/local/bin/perch", with: HostCrashTests.buildDirectory + "/perch")
                .write(toFile: directory + "/" + unit, atomically: true, encoding: .utf8)
        }
        return directory
    }

    /// One value of `key` in a unit's text.
    static func value(_ key: String, in unit: String) throws -> String {
        let text = try String(contentsOfFile: repositoryRoot + "/contrib/systemd/" + unit, encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix(key + "=") })
        return String(line.dropFirst(key.count + 1))
    }

    @Test func systemdAnalyzeVerifyFindsNothingToSayAboutTheUnits() async throws {
        let directory = try Self.unitsForThisBuild()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let verified = try await run("/usr/bin/systemd-analyze", ["verify"] + Self.units.map { directory + "/" + $0 })
        let said = verified.output
        #expect(verified.status == 0, "\(said)")
        // An unknown key or a bad value is only a warning to systemd: none may be said.
        #expect(said.isEmpty, "\(said)")
    }

    /// perch.service's ExecStart, with its configuration path pointed at a test's, under a
    /// notification socket as systemd gives it (Type=notify), then its ExecReload's signal and a stop.
    @Test func theServicesCommandRunsAsTheUnitRunsIt() async throws {
        let start = try Self.value("ExecStart", in: "perch.service").split(separator: " ").map(String.init)
        #expect(start.first == "/usr/local/bin/perch" && start.contains("--config"))
        #expect(try Self.value("Type", in: "perch.service") == "notify")
        #expect(try Self.value("ExecReload", in: "perch.service") == "/bin/kill -HUP $MAINPID")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-unit-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory + "/bots", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try (hostConfig + "\nserver:\n  listen: 127.0.0.1:0\n  apiKey: ${PERCH_API_KEY}\n").write(
            toFile: directory + "/config.yaml", atomically: true, encoding: .utf8)
        var arguments = Array(start.dropFirst())
        let config = try #require(arguments.firstIndex(of: "--config"))
        arguments[config + 1] = directory + "/config.yaml"

        let listener = try NotificationSocket(abstract: false)
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = listener.name
        environment["PERCH_API_KEY"] = "a-key-from-the-environment-file"
        let output = Pipe()
        let process = try ChildProcess(
            HostCrashTests.buildDirectory + "/perch", arguments, environment: environment,
            error: output.fileHandleForWriting.fileDescriptor)
        try output.fileHandleForWriting.close()
        defer { if process.isRunning { process.terminate() } }
        #expect(await listener.next()?.hasPrefix("READY=1\n") == true)
        kill(process.processIdentifier, SIGHUP)
        #expect(await listener.next()?.hasPrefix("RELOADING=1\n") == true)
        #expect(await listener.next()?.hasPrefix("READY=1\n") == true)
        process.terminate()
        #expect(await listener.next() == "STOPPING=1\nSTATUS=stopping")
        #expect(try await exited(process))
        #expect(process.terminationStatus == 0)
        // --log-format json: every line the journal gets is one JSON object.
        let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .split(separator: "\n")
        #expect(lines.count > 3)
        for line in lines {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "\(line)")
        }
    }

    /// perch-backup.service's two commands, as systemd would run them (its `%%` is a `%`), on a
    /// test's data and backup directories: a backup named by the time, and the ones older than 14
    /// days removed.
    @Test func theBackupServiceBacksUpAndRemovesOldBackups() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-unit-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory + "/bots", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try (hostConfig + "\nserver:\n  dataDirectory: data\n").write(
            toFile: directory + "/config.yaml", atomically: true, encoding: .utf8)
        try await withTestHost(configPath: directory + "/config.yaml", dataDirectory: directory + "/data") { chat in
            _ = try await chat.post("kept", as: "alice", to: .group("room"))
        }
        let backups = directory + "/backups"
        try FileManager.default.createDirectory(atPath: backups + "/old", withIntermediateDirectories: true)
        let old = Date().addingTimeInterval(-15 * 86_400)
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: backups + "/old")
        func shell(_ key: String) async throws -> Int32 {
            let command = try Self.value(key, in: "perch-backup.service")
                .replacingOccurrences(of: "%%", with: "%")
                .replacingOccurrences(of: "/usr/local/bin/perch", with: HostCrashTests.buildDirectory + "/perch")
                .replacingOccurrences(of: "/etc/perch/config.yaml", with: directory + "/config.yaml")
                .replacingOccurrences(of: "/var/lib/perch-backups", with: backups)
            return try await run("/bin/sh", ["-c", command]).status
        }
        #expect(try await shell("ExecStart") == 0)
        let made = try FileManager.default.contentsOfDirectory(atPath: backups).filter { $0 != "old" }
        #expect(made.count == 1)
        #expect(made.first?.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{6}Z/) != nil, "\(made)")
        #expect(try SQLiteChatStore.verify(path: backups + "/" + made[0] + "/perch.sqlite").isEmpty)
        #expect(try await shell("ExecStartPost") == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: backups) == made)
    }

    /// What perch.service's sandbox allows (ProtectSystem=strict with StateDirectory): every file
    /// system read-only but the data directory, in a mount namespace of a child process. The host
    /// starts, takes a message and an upload, reloads, is backed up and stops without writing
    /// anywhere else.
    @Test(.enabled(if: geteuid() == 0, "a mount namespace of the test's own needs root"))
    func theHostWritesNothingButItsDataDirectory() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("perch-ro-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (etc, state) = (root + "/etc", root + "/state")
        try FileManager.default.createDirectory(atPath: etc + "/bots", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: repositoryRoot + "/bots", toPath: etc + "/bots/shipped")
        for bot in try FileManager.default.contentsOfDirectory(atPath: etc + "/bots/shipped") {
            try FileManager.default.moveItem(atPath: etc + "/bots/shipped/" + bot, toPath: etc + "/bots/" + bot)
        }
        try FileManager.default.removeItem(atPath: etc + "/bots/shipped")
        let config = try String(contentsOfFile: repositoryRoot + "/config.yaml", encoding: .utf8)
            .replacingOccurrences(of: "listen: 127.0.0.1:8080", with: "listen: 127.0.0.1:0")
            .replacingOccurrences(of: "dataDirectory: data", with: "dataDirectory: \(state)")
        try config.write(toFile: etc + "/config.yaml", atomically: true, encoding: .utf8)
        let before = try FileManager.default.subpathsOfDirectory(atPath: etc).sorted()
        let script = #"""
            set -e
            mount --make-rprivate /
            mount --bind "$STATE" "$STATE"
            mount -o remount,bind,ro /
            ! touch "$ETC/written" 2>/dev/null
            export PERCH_API_KEY=a-key-for-the-sandbox-test
            "$PERCH" run --config "$ETC/config.yaml" > "$STATE/host.log" 2>&1 &
            host=$!
            for i in $(seq 200); do
                port=$(sed -n 's/.*address=127.0.0.1:\([0-9]*\) http listening.*/\1/p' "$STATE/host.log")
                [ -n "$port" ] && break
                sleep 0.05
            done
            call() { curl -s -o /dev/null -w '%{http_code}\n' -H "apikey: $PERCH_API_KEY" -H "onBehalfOf: carol" "$@"; }
            echo "send $(call -H 'Content-Type: application/json' -d '{"receiver":"general","receiverType":"group","type":"text","data":{"text":"hello <@uid:helper>"}}' "http://127.0.0.1:$port/v3/messages")"
            echo "upload $(printf 'bytes' | call -H 'Content-Type: text/plain' --data-binary @- "http://127.0.0.1:$port/v3/media?name=a.txt")"
            kill -HUP $host
            sleep 0.5
            "$PERCH" backup --config "$ETC/config.yaml" "$STATE/backup" > /dev/null && echo backup
            kill -TERM $host
            wait $host && echo stopped
            """#
        var environment = ProcessInfo.processInfo.environment
        environment["STATE"] = state
        environment["ETC"] = etc
        environment["PERCH"] = HostCrashTests.buildDirectory + "/perch"
        let sandboxed = try await run("/usr/bin/unshare", ["-m", "sh", "-c", script], environment: environment)
        let said = sandboxed.output
        #expect(sandboxed.status == 0, "\(said)")
        #expect(said.split(separator: "\n") == ["send 200", "upload 200", "backup", "stopped"], "\(said)")
        let log = try String(contentsOfFile: state + "/host.log", encoding: .utf8)
        #expect(log.contains("reloaded"), "\(log)")
        #expect(!log.contains(" error "), "\(log)")
        #expect(try FileManager.default.subpathsOfDirectory(atPath: etc).sorted() == before)
        #expect(FileManager.default.fileExists(atPath: state + "/backup/perch.sqlite"))
    }
}
