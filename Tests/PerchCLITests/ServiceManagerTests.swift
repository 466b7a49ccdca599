import Foundation
import FoundationNetworking
import PerchLock
import PerchTestSupport
import Testing

@testable import PerchCLI

/// A Unix datagram socket standing in for systemd's notification socket.
final class NotificationSocket: Sendable {
    let descriptor: Int32
    /// What `NOTIFY_SOCKET` names: a path, or `@name` for the abstract namespace.
    let name: String

    init(abstract: Bool) throws {
        let unique = UUID().uuidString.prefix(8).lowercased()
        name = abstract ? "@perch-test-\(unique)" : "/tmp/perch-notify-\(unique).sock"
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(name.utf8)
        if abstract { path[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (abstract ? 0 : 1))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard descriptor >= 0, bound == 0 else { throw POSIXError(.EADDRINUSE) }
    }

    deinit {
        close(descriptor)
        if !name.hasPrefix("@") { unlink(name) }
    }

    /// The next message, or nil after `seconds`, waited for on a thread of its own (not one of the
    /// tests' pool).
    func next(within seconds: Int32 = 20) async -> String? {
        await onThread { self.receive(within: seconds) }
    }

    /// The next message, or nil after `seconds`.
    func receive(within seconds: Int32 = 20) -> String? {
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, seconds * 1000) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        return count < 0 ? nil : String(decoding: buffer[..<count], as: UTF8.self)
    }
}

@Suite struct ServiceManagerTests {
    @Test func aMessageReachesAPathAndAnAbstractName() async throws {
        for abstract in [false, true] {
            let listener = try NotificationSocket(abstract: abstract)
            #expect(ServiceManager(socket: listener.name).send(["READY=1", "STATUS=here"]))
            #expect(await listener.next(within: 5) == "READY=1\nSTATUS=here")
        }
        // No manager: nothing sent, nothing fails.
        #expect(!ServiceManager(socket: nil).send(["READY=1"]))
        #expect(!ServiceManager(socket: "").send(["READY=1"]))
        #expect(!ServiceManager(socket: "/tmp/perch-nobody-listens-\(UUID()).sock").send(["READY=1"]))
    }

    /// The file watcher looks at config.yaml and the bot files, not at the rest of the bots
    /// directory: an atomic write's temporary file, there for a moment, was a second reload.
    @Test func theFileWatcherLooksAtTheBotFilesOnly() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-watch-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory + "/bots", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for name in [
            "config.yaml", "bots/a.yaml", "bots/b.yml", "bots/.a.yaml.swp", "bots/.dat.nosync1A2B", "bots/notes.txt",
        ] {
            try "x".write(toFile: directory + "/" + name, atomically: false, encoding: .utf8)
        }
        let seen = FileWatcher.snapshot([directory + "/config.yaml", directory + "/bots"]).keys.sorted()
        #expect(seen == ["config.yaml", "bots/a.yaml", "bots/b.yml"].map { directory + "/" + $0 }.sorted())
    }

    /// `perch run` under a service manager: ready only once the API answers, reloading and ready
    /// again around SIGHUP and a refused reload, stopping at SIGTERM.
    @Test func perchRunTellsTheServiceManagerWhenItIsReadyReloadsAndStops() async throws {
        let (directory, config) = try notifiedHostDirectory("notify")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let listener = try NotificationSocket(abstract: false)
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = listener.name
        environment["PERCH_TEST_KEY"] = "a-test-key-of-some-length"
        let process = try ChildProcess(
            HostCrashTests.buildDirectory + "/perch", ["run", "--config", directory + "/config.yaml"],
            environment: environment)
        defer { process.terminate() }

        let ready = try #require(await listener.next())
        #expect(ready.hasPrefix("READY=1\nSTATUS=running: 0 bots, 0 rules, 0 errors, the API on 127.0.0.1:"))
        let port = try #require(ready.split(separator: ":").last.flatMap { Int($0) })
        // Ready means answering: the first request after READY=1 succeeds.
        let (_, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/readyz")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)

        kill(process.processIdentifier, SIGHUP)
        let reloading = try #require(await listener.next())
        #expect(reloading.hasPrefix("RELOADING=1\nMONOTONIC_USEC="))
        let time = reloading.split(separator: "\n")[1].dropFirst("MONOTONIC_USEC=".count)
        #expect(!time.isEmpty && time.allSatisfy { $0.isNumber })
        #expect(await listener.next() == ready)

        // A broken bot file (seen by the file watcher): the reload is refused, the host runs on.
        let refused = ready + "; the last reload was refused (see the log)"
        try "name: broken\nrules: [".write(toFile: directory + "/bots/broken.yaml", atomically: true, encoding: .utf8)
        #expect(await listener.next()?.hasPrefix("RELOADING=1\n") == true)
        #expect(await listener.next() == refused)
        // And goes on taking requests. (After a reload a file change asked for, the next request
        // was a stop: saving a file stopped the host.)
        #expect(await listener.next(within: 2) == nil)
        #expect(process.isRunning)
        kill(process.processIdentifier, SIGHUP)
        #expect(await listener.next()?.hasPrefix("RELOADING=1\n") == true)
        #expect(await listener.next() == refused)
        // A fixed file is loaded.
        try FileManager.default.removeItem(atPath: directory + "/bots/broken.yaml")
        #expect(await listener.next()?.hasPrefix("RELOADING=1\n") == true)
        #expect(await listener.next() == ready)
        // A setting read only at start: the reload says it waits for a restart.
        try (config + "  heartbeatSeconds: 20\n").write(
            toFile: directory + "/config.yaml", atomically: true, encoding: .utf8)
        #expect(await listener.next()?.hasPrefix("RELOADING=1\n") == true)
        #expect(await listener.next() == ready + "; a restart applies server.heartbeatSeconds")

        process.terminate()
        #expect(await listener.next() == "STOPPING=1\nSTATUS=stopping")
        #expect(try await exited(process))
        #expect(process.terminationStatus == 0)
    }
}

/// A new directory with `bots/` and a config.yaml of ``hostConfig`` with the API on a free port
/// and its key from `PERCH_TEST_KEY`: the directory and the config's text. The caller removes it.
func notifiedHostDirectory(_ name: String) throws -> (directory: String, config: String) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-\(name)-\(UUID())").path
    try FileManager.default.createDirectory(atPath: directory + "/bots", withIntermediateDirectories: true)
    let config = hostConfig + "\nserver:\n  listen: 127.0.0.1:0\n  apiKey: ${PERCH_TEST_KEY}\n"
    try config.write(toFile: directory + "/config.yaml", atomically: true, encoding: .utf8)
    return (directory, config)
}

@Suite struct SecondSignalTests {
    /// Ctrl-C twice: the first stops gracefully, which here waits for another process's write lock
    /// on the database; the second ends the process at once, saying so, with the signal's exit
    /// status. (The second did nothing: the stop ran on until the lock was freed or SQLite's busy
    /// timeout passed.)
    @Test func aSecondCtrlCDuringTheStopExitsAtOnce() async throws {
        let (directory, _) = try notifiedHostDirectory("signal")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = pluginFixtures + "/misbehaving_plugin.py"
        let bot = botFile(
            """
              - on: { command: do }
                do: [{ plugin: bad }]
            """, extra: "plugins:\n  - name: bad\n    exec: [python3, \"\(script)\"]\n    timeout_ms: 60000")
        try bot.write(toFile: directory + "/bots/b.yaml", atomically: true, encoding: .utf8)
        let listener = try NotificationSocket(abstract: false)
        let logPath = directory + "/perch.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = listener.name
        environment["PERCH_TEST_KEY"] = "a-test-key-of-some-length"
        let logFile = try #require(FileHandle(forWritingAtPath: logPath))
        let process = try ChildProcess(
            HostCrashTests.buildDirectory + "/perch", ["run", "--config", directory + "/config.yaml"],
            environment: environment, error: logFile.fileDescriptor)
        try logFile.close()
        defer { process.terminate(SIGKILL) }
        func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        let ready = try #require(await listener.next())
        let port = try #require(ready.split(separator: ":").last.flatMap { Int($0) })
        var post = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v3/messages")!)
        post.httpMethod = "POST"
        post.setValue("a-test-key-of-some-length", forHTTPHeaderField: "apikey")
        post.setValue("carol", forHTTPHeaderField: "onBehalfOf")
        post.setValue("application/json", forHTTPHeaderField: "Content-Type")
        post.httpBody = Data(#"{"receiver": "room", "receiverType": "group", "data": {"text": "!do hang"}}"#.utf8)
        let (_, response) = try await URLSession.shared.data(for: post)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(try await waitUntil(.seconds(20)) { log().contains("hanging") }, "\(log())")

        // Another process holds the database's write lock (a `sqlite3` shell left in a transaction,
        // a backup): the bot's last cursor save waits for it, and with it the stop.
        let holderOutput = Pipe()
        let holder = try ChildProcess(
            "python3",
            [
                "-c",
                "import sqlite3, sys, time\n"
                    + "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                    + "db.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\ntime.sleep(60)\n",
                directory + "/data/perch.sqlite",
            ], output: holderOutput.fileHandleForWriting.fileDescriptor)
        try holderOutput.fileHandleForWriting.close()
        defer { holder.terminate(SIGKILL) }
        let locked = await onThread { holderOutput.fileHandleForReading.availableData }
        #expect(String(decoding: locked, as: UTF8.self).hasPrefix("locked"))

        // Twice at once, as `timeout` sends it (to the process and to its group): one request.
        kill(process.processIdentifier, SIGINT)
        kill(process.processIdentifier, SIGINT)
        #expect(await listener.next() == "STOPPING=1\nSTATUS=stopping")
        try await Task.sleep(for: .milliseconds(1200))
        #expect(process.isRunning, "the stop waits for the write lock")
        kill(process.processIdentifier, SIGINT)
        #expect(try await exited(process))
        #expect(process.terminationStatus == 128 + SIGINT)
        #expect(log().contains("a second SIGINT (Ctrl-C) during the stop: exiting now"), "\(log())")
        #expect(!log().contains("info stopped"))
        // The plugin, waiting in its sleep, did not outlive the host.
        let pluginLine = try #require(log().split(separator: "\n").first { $0.contains("hanging, pid ") })
        let pluginPid = try #require(pluginLine.split(separator: " ").last.flatMap { Int32($0) })
        // Gone, or a zombie: its new parent (init, or a subreaper such as scripts/swift-test) reaps it.
        func ended() -> Bool {
            guard kill(pluginPid, 0) == 0 else { return true }
            let stat = (try? String(contentsOfFile: "/proc/\(pluginPid)/stat", encoding: .utf8)) ?? ""
            return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
        }
        #expect(try await waitUntil(.seconds(10)) { ended() }, "plugin \(pluginPid) still runs")
        holder.terminate(SIGKILL)
        #expect(try await exited(holder))
    }
}
