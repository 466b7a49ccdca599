import Foundation
import PerchLock
import PerchTestSupport
import PerchTesting
import Testing

/// The data directory holds every conversation: what Perch makes there is its owner's alone.
@Suite struct DataDirectoryTests {
    static let config = """
        version: 1
        seed:
          users:
            - { uid: alice, name: Alice }
        """

    @Test func aNewDataDirectoryAndDatabaseAreTheOwnersAlone() async throws {
        let root = try writeTestConfiguration(config: Self.config, bots: [:])
        defer { try? FileManager.default.removeItem(atPath: root) }
        // Two levels missing: each directory Perch makes is 0700.
        let data = root + "/var/perch"
        try await withTestHost(configPath: root + "/config.yaml", dataDirectory: data) { chat in
            _ = try await chat.post("hello", as: "alice", to: .user("alice"))
            #expect(fileMode(root + "/var") == 0o700)
            #expect(fileMode(data) == 0o700)
            #expect(fileMode(data + "/perch.sqlite") == 0o600)
            // SQLite gives the log and the shared-memory index the database's own mode.
            #expect(fileMode(data + "/perch.sqlite-wal") == 0o600)
            #expect(fileMode(data + "/perch.sqlite-shm") == 0o600)
            #expect(await !chat.log.contains { $0.contains("can be read by every user") })
        }
    }

    @Test func aDatabaseEveryUserCanReadIsWarnedAboutAndLeftAsItIs() async throws {
        let root = try writeTestConfiguration(config: Self.config, bots: [:])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = root + "/data"
        try await withTestHost(configPath: root + "/config.yaml", dataDirectory: data) { _ in }
        chmod(data + "/perch.sqlite", 0o644)
        try await withTestHost(configPath: root + "/config.yaml", dataDirectory: data) { chat in
            let warning = await chat.log.first { $0.contains("can be read by every user") }
            #expect(warning?.contains("mode=644") == true)
            #expect(warning?.contains("path=\(data)/perch.sqlite") == true)
        }
        // An admin's choice is theirs: the mode is not changed behind their back.
        #expect(fileMode(data + "/perch.sqlite") == 0o644)
        // A group may read it (a backup user's group, say): no warning for that.
        chmod(data + "/perch.sqlite", 0o640)
        try await withTestHost(configPath: root + "/config.yaml", dataDirectory: data) { chat in
            #expect(await !chat.log.contains { $0.contains("can be read by every user") })
        }
    }

    @Test func aPrivateFileIsWrittenWholeOrNotAtAll() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("perch-private-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try PrivateFile.write(bytes, to: root + "/a/b/file")
        #expect(FileManager.default.contents(atPath: root + "/a/b/file") == Data(bytes))
        #expect(fileMode(root + "/a/b/file") == 0o600)
        #expect(fileMode(root + "/a") == 0o700 && fileMode(root + "/a/b") == 0o700)
        try PrivateFile.write([], to: root + "/a/b/empty")
        #expect(FileManager.default.contents(atPath: root + "/a/b/empty") == Data())

        // A file already there is never overwritten.
        #expect(throws: PrivateFile.Failure.self) { try PrivateFile.write([1, 2, 3], to: root + "/a/b/file") }
        #expect(FileManager.default.contents(atPath: root + "/a/b/file") == Data(bytes))
        do {
            try PrivateFile.write([1], to: root + "/a/b/file")
        } catch {
            #expect(error.code == EEXIST && error.operation == "create")
            #expect(error.description == "create \(root)/a/b/file: File exists")
        }
        // A directory that cannot be made (a file stands in the way): the error names it.
        do {
            try PrivateFile.write([1], to: root + "/a/b/file/inner/x")
            Issue.record("a file under a file was written")
        } catch {
            #expect(error.path == root + "/a/b/file" && error.operation == "mkdir" && error.code == ENOTDIR)
            #expect(error.description == "mkdir \(root)/a/b/file: Not a directory")
        }
        // Nor is a file taken for the directory asked for.
        do {
            try PrivateFile.makeDirectory(root + "/a/b/file")
            Issue.record("a file was taken for a directory")
        } catch {
            #expect(error.path == root + "/a/b/file" && error.code == ENOTDIR)
        }
        #expect(FileManager.default.contents(atPath: root + "/a/b/file") == Data(bytes))
        // A copy: in pieces of a megabyte, private, whole; a missing source names itself.
        let large = (0..<(3 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try PrivateFile.write(large, to: root + "/large")
        try PrivateFile.copy(root + "/large", to: root + "/c/large")
        #expect(FileManager.default.contents(atPath: root + "/c/large") == Data(large))
        #expect(fileMode(root + "/c/large") == 0o600 && fileMode(root + "/c") == 0o700)
        do {
            try PrivateFile.copy(root + "/absent", to: root + "/c/absent")
            Issue.record("a missing file was copied")
        } catch {
            #expect(error.path == root + "/absent" && error.code == ENOENT)
        }
        #expect(!FileManager.default.fileExists(atPath: root + "/c/absent"))
        // A rename never replaces what is there, not even an empty directory.
        try PrivateFile.makeDirectory(root + "/empty")
        do {
            try PrivateFile.rename(root + "/c", to: root + "/empty")
            Issue.record("an empty directory was replaced")
        } catch {
            #expect(error.code == EEXIST && error.operation == "rename")
        }
        #expect(FileManager.default.fileExists(atPath: root + "/c/large"))
        try PrivateFile.rename(root + "/c", to: root + "/d")
        #expect(FileManager.default.contents(atPath: root + "/d/large") == Data(large))

        // An existing directory keeps its mode.
        try FileManager.default.createDirectory(atPath: root + "/open", withIntermediateDirectories: true)
        chmod(root + "/open", 0o755)
        try PrivateFile.makeDirectory(root + "/open")
        #expect(fileMode(root + "/open") == 0o755)
    }
}
