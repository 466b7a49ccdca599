import Foundation
import PerchChat
import PerchLock
import PerchSQLite
import PerchService
import PerchTestSupport
import Testing

@Suite struct CrashTests {
    /// The build directory holding the test binary and its sibling executables.
    static var buildDirectory: String {
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: executable).deletingLastPathComponent().path
    }

    @Test func killingAWriterMidStreamLosesNoAcknowledgedMessage() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "perch-crash-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/perch.sqlite"

        let output = Pipe()
        let process = try ChildProcess(
            Self.buildDirectory + "/PerchStoreProbe", [database, "1000000"],
            output: output.fileHandleForWriting.fileDescriptor)
        try output.fileHandleForWriting.close()

        // Read acknowledgements until enough have arrived, then kill -9 mid-stream. The blocking
        // reads run on a thread of their own, off the concurrency pool the other tests need.
        let handle = output.fileHandleForReading
        let acknowledged: [String: Int64] = await withCheckedContinuation { continuation in
            Thread {
                var acknowledged: [String: Int64] = [:]
                var buffer = Data()
                while acknowledged.count < 400 {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    buffer.append(chunk)
                    while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                        buffer.removeSubrange(buffer.startIndex...newline)
                        let parts = line.split(separator: " ")
                        if parts.count == 3, parts[0] == "ok", let id = Int64(parts[2]) {
                            acknowledged["m\(parts[1])"] = id
                        }
                    }
                }
                continuation.resume(returning: acknowledged)
            }.start()
        }
        kill(process.processIdentifier, SIGKILL)
        // Not `waitForExit()`: it would hold a thread of the tests' pool.
        while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        #expect(process.termination == .signal(SIGKILL))
        #expect(acknowledged.count >= 400)

        let store = try SQLiteChatStore(path: database)
        let service = ChatService(store: store)
        var stored: [String: [Int64]] = [:]
        var request = MessagesRequest(guid: "crash", limit: 100)
        while true {
            let page = try await service.fetchNext(request, as: "reader")
            for message in page.messages { stored[message.muid, default: []].append(message.id) }
            guard page.hasMore, let next = page.nextCursor else { break }
            request.messageId = next
        }
        var eventIds: [Int64: Int] = [:]
        var cursor: Int64 = 0
        while true {
            let page = try await service.events(for: "reader", after: cursor, limit: 1000)
            for event in page.events where event.name == .textMessageReceived {
                eventIds[event.message!.id, default: 0] += 1
            }
            guard page.scannedThrough > cursor else { break }
            cursor = page.scannedThrough
        }
        for (muid, id) in acknowledged {
            #expect(stored[muid] == [id], "acknowledged \(muid) must be stored exactly once")
            #expect(eventIds[id] == 1, "acknowledged \(muid) must have exactly one event")
        }
        #expect(stored.values.allSatisfy { $0.count == 1 })
        // The store still takes writes after the crash.
        _ = try await service.send(MessageDraft(to: .group("crash"), text: "after"), as: "writer")
        await store.close()
    }
}
