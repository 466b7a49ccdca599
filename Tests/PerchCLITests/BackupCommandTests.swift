import Foundation
import PerchCLI
import PerchChat
import PerchSQLite
import PerchService
import PerchTestSupport
import PerchTesting
import Synchronization
import Testing

/// `perch backup DIRECTORY`: one consistent snapshot of the database and the uploads its rows name,
/// taken beside a running host, laid out as a data directory a host starts on; never written over
/// anything, and nothing left behind when it fails.
@Suite struct BackupCommandTests {
    static func backup(_ words: [String]) -> (code: Int32, output: [String], errors: [String]) {
        let lines = Mutex<[String]>([])
        let errors = Mutex<[String]>([])
        let code = Perch.main(
            ["backup"] + words, print: { line in lines.withLock { $0.append(line) } },
            printError: { line in errors.withLock { $0.append(line) } })
        return (code, lines.withLock { $0 }, errors.withLock { $0 })
    }

    /// What is in `directory` (names only), for "nothing was left behind".
    static func listing(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test func aBackupBesideARunningHostHoldsWhatWasCommittedAndAHostStartsOnIt() async throws {
        let backups = FileManager.default.temporaryDirectory.appendingPathComponent("perch-backups-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: backups) }
        let destination = backups + "/monday"
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (0..<20_000).map { UInt8($0 % 251) })
        var config = ""
        var mediaID = ""
        var before: [Message] = []
        try await withHTTPChat { http in
            config = (http.chat.directory as NSString).deletingLastPathComponent + "/config.yaml"
            let uploaded = try await http.call(
                "POST", "/v3/media?name=plan.png", as: .user("carol"), body: png, headers: ["Content-Type": "image/png"]
            )
            let url = try #require(uploaded.data["url"] as? String)
            mediaID = String(url.dropFirst("/v3/media/".count))
            let sent = try await http.sendImage(uploaded.data, to: "other", as: "carol")
            #expect(sent.status == 200)
            for index in 0..<300 { _ = try await http.chat.post("before \(index)", as: "alice", to: .group("room")) }
            try await http.chat.settle()
            before = try await http.chat.messages(in: .group("room"), viewer: "alice")

            let done = Self.backup(["--config", config, destination])
            #expect(done.code == 0, "\(done.errors)")
            let summary = try #require(done.output.first)
            #expect(summary.hasPrefix("backed up ") && summary.contains(" to \(destination): "))
            #expect(summary.contains("1 uploaded file,") && summary.contains("messages"))

            // Written after the backup: not in it.
            _ = try await http.chat.post("after the backup", as: "alice", to: .group("room"))
        }
        #expect(Self.listing(destination) == ["media", "perch.sqlite"])
        #expect(Self.listing(backups) == ["monday"])
        #expect(fileMode(destination) == 0o700)
        #expect(fileMode(destination + "/perch.sqlite") == 0o600)
        #expect(fileMode(destination + "/media") == 0o700)
        #expect(fileMode(destination + "/media/" + mediaID) == 0o600)
        #expect(FileManager.default.contents(atPath: destination + "/media/" + mediaID) == png)
        // One file, no log beside it, every page whole.
        #expect(try SQLiteChatStore.verify(path: destination + "/perch.sqlite").isEmpty)

        // Restored: the backup is a data directory (the test host's own configuration went with it).
        let restoring = try writeTestConfiguration(config: hostConfig, bots: [:])
        defer { try? FileManager.default.removeItem(atPath: restoring) }
        try await withTestHost(configPath: restoring + "/config.yaml", dataDirectory: destination) { chat in
            let restored = try await chat.messages(in: .group("room"), viewer: "alice")
            #expect(restored.map(\.id) == before.map(\.id))
            #expect(restored.map(\.text) == before.map(\.text))
            #expect(!restored.contains { $0.text == "after the backup" })
            let file = try await chat.service.media(mediaID, as: "carol")
            #expect(file.name == "plan.png" && file.size == Int64(png.count))
        }
    }

    @Test func aBackupTakenWhileMessagesArriveHoldsOneMomentOfTheConversation() async throws {
        try await withShippedCopy { directory in
            let config = directory + "/config.yaml"
            let destination = directory + "/backup"
            var posted: [Int64] = []
            try await withTestHost(configPath: config, dataDirectory: directory + "/data") { chat in
                let poster = Task {
                    var ids: [Int64] = []
                    for index in 0..<2_000 {
                        ids.append(try await chat.post("busy \(index)", as: "carol", to: .group("general")).id)
                    }
                    return ids
                }
                while try await chat.service.store.latestEventSequence() < 200 {
                    try await Task.sleep(for: .milliseconds(1))
                }
                let done = Self.backup(["--config", config, destination])
                #expect(done.code == 0, "\(done.errors)")
                posted = try await poster.value
            }
            try await withTestHost(configPath: config, dataDirectory: destination) { chat in
                let kept = Set(
                    try await chat.messages(in: .group("general"), viewer: "carol").filter { $0.sender == "carol" }.map(
                        \.id))
                // Everything up to one moment, nothing after it: the posts kept are a prefix of the posts made.
                #expect(!kept.isEmpty)
                #expect(Array(posted.prefix(kept.count)) == posted.filter(kept.contains))
            }
        }
    }

    /// A backup onto a disk with no room (a 64 KiB file system of the test's own, mounted in a
    /// mount namespace of a child process): the failure names the copy, not the database, and
    /// leaves nothing on that disk.
    @Test(.enabled(if: geteuid() == 0, "a mount namespace of the test's own needs root"))
    func aBackupOntoAFullDiskFailsNamingTheCopyAndLeavesNothing() async throws {
        try await withShippedCopy { directory in
            let config = directory + "/config.yaml"
            try await withTestHost(configPath: config, dataDirectory: directory + "/data") { chat in
                for index in 0..<300 { _ = try await chat.post("message \(index)", as: "alice", to: .group("general")) }
            }
            let small = directory + "/small"
            try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
            let backup = try await run(
                "/usr/bin/unshare",
                [
                    "-m", "sh", "-c",
                    #"mount -t tmpfs -o size=64k tmpfs "$1" && "$2" backup --config "$3" "$1/copy"; code=$?; ls -A "$1"; exit $code"#,
                    "sh", small, HostCrashTests.buildDirectory + "/perch", config,
                ], together: false)
            let (listed, said) = (backup.output, backup.errors)
            #expect(backup.status == 1, "\(said)")
            #expect(said.contains("nothing was written to \(small)/copy"), "\(said)")
            #expect(said.contains("cannot write \(small)/copy.partial-"), "\(said)")
            #expect(!said.contains("damaged"), "\(said)")
            // What the full disk held when the backup gave up: nothing.
            #expect(listed.isEmpty, "\(listed)")
        }
    }

    @Test func aBackupNeverWritesOverAnythingAndLeavesNothingWhenItFails() async throws {
        try await withShippedCopy { directory in
            let config = directory + "/config.yaml"
            let data = directory + "/data"
            try await withTestHost(configPath: config, dataDirectory: data) { chat in
                _ = try await chat.post("hello", as: "alice", to: .group("general"))
            }

            // Something already there, even an empty directory: refused, left as it was.
            let taken = directory + "/taken"
            try FileManager.default.createDirectory(atPath: taken, withIntermediateDirectories: true)
            let overTaken = Self.backup(["--config", config, taken])
            #expect(overTaken.code == 1)
            #expect(overTaken.errors.first?.contains("\(taken) already exists") == true, "\(overTaken.errors)")
            #expect(Self.listing(taken).isEmpty)
            try Data("mine".utf8).write(to: URL(fileURLWithPath: directory + "/file"))
            #expect(Self.backup(["--config", config, directory + "/file"]).code == 1)
            #expect(FileManager.default.contents(atPath: directory + "/file") == Data("mine".utf8))
            let before = Self.listing(directory)

            // An upload the database names but the media directory lacks: no backup at all.
            try await withTestHost(configPath: config, dataDirectory: data) { chat in
                _ = try await chat.service.registerMedia(
                    MediaFile(
                        id: String(repeating: "ab", count: 32), uploader: "alice", name: "gone.txt",
                        mimeType: "text/plain", extension: "txt", size: 4, createdAt: 1))
            }
            let lacking = Self.backup(["--config", config, directory + "/copy"])
            #expect(lacking.code == 1)
            #expect(
                lacking.errors.first?.contains("is in the database but not in \(data)/media") == true,
                "\(lacking.errors)")
            #expect(lacking.errors.first?.contains("nothing was written to \(directory)/copy") == true)
            #expect(Self.listing(directory) == before)

            // A database whose first page is damaged: named, and nothing written.
            let path = data + "/perch.sqlite"
            var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            bytes.replaceSubrange(100..<108, with: [UInt8](repeating: 0xFF, count: 8))
            try bytes.write(to: URL(fileURLWithPath: path))
            let damaged = Self.backup(["--config", config, directory + "/copy"])
            #expect(damaged.code == 1)
            #expect(damaged.errors.first?.contains("damaged") == true, "\(damaged.errors)")
            #expect(Self.listing(directory) == before)

            // No database at all.
            try FileManager.default.removeItem(atPath: data)
            let missing = Self.backup(["--config", config, directory + "/copy"])
            #expect(missing.code == 1)
            #expect(missing.errors.first?.contains("no such file") == true, "\(missing.errors)")
            #expect(Self.listing(directory) == before.filter { $0 != "data" })

            // Words backup does not take are usage mistakes.
            for words in [[], ["a", "b"], ["--format", "json", "x"], ["--bogus", "x"]] {
                #expect(Self.backup(words).code == 64, "\(words)")
            }
        }
    }
}
