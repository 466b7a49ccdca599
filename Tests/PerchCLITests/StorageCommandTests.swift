import Foundation
import PerchChat
import PerchSQLite
import PerchService
import Testing

@testable import PerchCLI

/// `perch storage list` and `clear` on the local database.
@Suite struct StorageCommandTests {
    @Test func storageIsListedAndClearedFromTheCommandLine() async throws {
        try await withShippedCopy { directory in
            try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
            let store = try SQLiteChatStore(path: directory + "/data/perch.sqlite")
            let service = ChatService(store: store)
            try await service.setStoredValue(.number(3), for: "karma:swift", in: "helper")
            try await service.setStoredValue(.string("on"), for: "mode", in: "helper/karma")
            await store.close()
            let config = ["--config", directory + "/config.yaml"]
            func perch(_ words: [String]) async -> (Int32, [String]) {
                var lines: [String] = []
                let code = await StorageCommand.run(
                    ["storage"] + words + config, print: { lines.append($0) }, printError: { lines.append($0) })
                return (code, lines)
            }
            #expect(await perch(["list"]) == (0, ["helper", "helper/karma"]))
            #expect(await perch(["list", "--bot", "helper"]) == (0, ["karma:swift = 3"]))
            #expect(await perch(["list", "--bot", "helper/karma"]) == (0, [#"mode = "on""#]))
            #expect(await perch(["clear", "--bot", "helper", "--prefix", "karma:"]) == (0, ["removed 1 value"]))
            #expect(await perch(["list", "--bot", "helper"]) == (0, ["nothing stored for helper"]))
            #expect(await perch(["clear"]).0 == 64)
        }
    }
}
