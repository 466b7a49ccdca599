import Foundation
import PerchLock
import PerchTestSupport
import Synchronization
import Testing

@testable import PerchCLI

/// ``ChildProcess``: what a child gets and how its end is told.
@Suite struct ChildProcessTests {
    /// Runs `sh -c script` to its end and returns what it wrote and how it ended.
    func shell(
        _ script: String, environment: [String: String]? = nil, directory: String? = nil
    ) async throws -> (output: String, process: ChildProcess) {
        let output = Pipe()
        let process = try ChildProcess(
            "sh", ["-c", script], environment: environment, directory: directory,
            output: output.fileHandleForWriting.fileDescriptor)
        try output.fileHandleForWriting.close()
        let written = await onThread { output.fileHandleForReading.readDataToEndOfFile() }
        #expect(try await exited(process))
        return (String(decoding: written, as: UTF8.self), process)
    }

    /// With 1,500 more descriptors open than usual (past the count at which Foundation's `Process`
    /// read beyond its directory buffer), the child starts and holds its three and nothing else,
    /// whether or not they were close-on-exec; and no signal is ignored in it, though this process
    /// ignores SIGPIPE.
    @Test func theChildGetsItsThreeDescriptorsAndDefaultSignalsWithManyOpen() async throws {
        // Room for them beside the other tests' (`perch run` raises its limit so too).
        #expect(FileDescriptorLimit.raise() >= 4096)
        var extra: [Int32] = []
        defer { for fd in extra { close(fd) } }
        for index in 0..<1500 {
            // Half of them inheritable, as Foundation's own pipes are.
            let fd = open("/dev/null", O_RDONLY | (index % 2 == 0 ? O_CLOEXEC : 0))
            try #require(fd >= 0)
            extra.append(fd)
        }
        let previous = signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, previous) }
        // `ls` in the child's place (exec: no shell opening pipes beside it) lists its own: the
        // three it was given and the directory it reads (3).
        let (listing, process) = try await shell("exec ls /proc/self/fd")
        #expect(listing.split(separator: "\n") == ["0", "1", "2", "3"], "\(listing)")
        #expect(process.termination == .exit(0))
        let (status, _) = try await shell("exec grep '^SigIgn' /proc/self/status")
        // Signals 1 to 31 (SIGPIPE is 13); 32 and 33 are glibc's own, which it keeps as they are.
        let mask = status.split(separator: "\t").last?.split(separator: "\n").first
        let ignored = try #require(mask.flatMap { UInt64($0, radix: 16) }, "\(status)")
        #expect(ignored & 0x7fff_ffff == 0, "\(status)")
    }

    @Test func exitsSignalsEnvironmentAndDirectoryAreTheChildsOwn() async throws {
        let seven = try await shell("exit 7").process
        #expect(seven.termination == .exit(7) && seven.terminationStatus == 7 && !seven.isRunning)
        let killed = try await shell("kill -TERM $$").process
        #expect(killed.termination == .signal(SIGTERM) && killed.terminationStatus == SIGTERM)
        let (said, _) = try await shell(
            "echo \"$PERCH_CHILD\"; pwd", environment: ["PERCH_CHILD": "x y"], directory: "/")
        #expect(said == "x y\n/\n")
    }

    @Test func anUnknownProgramIsRefusedAndTheEndIsToldOnce() async throws {
        #expect(throws: ChildProcess.SpawnError.self) { try ChildProcess("perch-no-such-program-\(UUID())") }
        let ends = Mutex(0)
        let process = try ChildProcess("sleep", ["30"]) { _ in ends.withLock { $0 += 1 } }
        #expect(process.isRunning && process.termination == nil)
        process.terminate()
        #expect(try await exited(process))
        #expect(process.termination == .signal(SIGTERM))
        #expect(try await waitUntil(.seconds(10)) { ends.withLock { $0 } == 1 })
        // Its end seen, a signal goes nowhere (the id may be another process's by now).
        process.terminate(SIGKILL)
        #expect(process.termination == .signal(SIGTERM))
    }
}
