import Foundation
import Testing

@testable import PerchHost

/// A plugin's standard input: written at once when it can be, by its thread when the pipe is full,
/// and never a line cut by another.
@Suite struct PluginInputTests {
    /// Eight writers at once, lines of 1 to 90 KB, into a pipe read in small bites: every line
    /// arrives whole, and each writer's lines in the order it wrote them.
    @Test func concurrentLongLinesArriveWholeAndInOrder() async throws {
        let pipe = Pipe()
        let input = PluginInput(pipe.fileHandleForWriting, plugin: "test")
        let writers = 8
        let perWriter = 24
        let reader = Task.detached { () -> [String] in
            var received = Data()
            var bite = [UInt8](repeating: 0, count: 3_000)
            let descriptor = pipe.fileHandleForReading.fileDescriptor
            while true {
                let count = read(descriptor, &bite, bite.count)
                if count <= 0 { break }
                received.append(contentsOf: bite[0..<count])
                usleep(50)  // slower than the writers: the pipe fills, then has a little room
            }
            return String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for index in 0..<perWriter {
                        let size = 1_000 + (writer * 7_919 + index * 3_571) % 89_000
                        let letter = Array("abcdefgh")[writer]
                        let line = "\(writer) \(index) " + String(repeating: letter, count: size)
                        #expect(input.write(Data((line + "\n").utf8)))
                    }
                }
            }
        }
        // Everything queued; closing lets the thread finish what waits, then ends the pipe.
        try await Task.sleep(for: .milliseconds(100))
        while true {
            try await Task.sleep(for: .milliseconds(50))
            if input.pending == 0 { break }
        }
        input.close()
        let lines = await reader.value
        #expect(lines.count == writers * perWriter)
        var next = [Int](repeating: 0, count: writers)
        for line in lines {
            let words = line.split(separator: " ")
            guard words.count == 3, let writer = Int(words[0]), let index = Int(words[1]), writer < writers else {
                Issue.record("a line cut or mixed: \(line.prefix(40))… (\(line.count) bytes)")
                continue
            }
            let size = 1_000 + (writer * 7_919 + index * 3_571) % 89_000
            let letter = Array("abcdefgh")[writer]
            #expect(words[2].count == size && words[2].allSatisfy { $0 == letter }, "writer \(writer) line \(index)")
            #expect(index == next[writer], "writer \(writer): line \(index) after \(next[writer] - 1)")
            next[writer] = index + 1
        }
    }

    /// A write to a child that has gone is refused, and does not end the process with SIGPIPE.
    @Test func aWriteToAClosedPipeIsRefused() async throws {
        let pipe = Pipe()
        let input = PluginInput(pipe.fileHandleForWriting, plugin: "test")
        try pipe.fileHandleForReading.close()
        #expect(!input.write(Data("hello\n".utf8)))
        #expect(!input.write(Data("again\n".utf8)))
        input.close()
    }
}
