import PerchChat
import PerchService
import PerchTestSupport
import Testing

/// The plugins' storage: JSON values, atomic increments, compare-and-set, expiry, prefixes and
/// namespaces, and the string API beside them.
@Suite struct PluginStorageTests {
    @Test func jsonValuesRoundTripAndStringsAreSharedWithTheStringAPI() async throws {
        try await withChat { chat in
            let service = chat.service
            let value: JSONValue = .object(["count": .number(3), "tags": .array([.string("a"), .bool(true)])])
            try await service.setStoredValue(value, for: "k", in: "bot")
            #expect(try await service.storedValue("k", in: "bot") == value)
            // A string is its plain text: the string API reads it, and the JSON API reads the
            // string API's.
            try await service.setStoredValue(.string("plain"), for: "s", in: "bot")
            #expect(try await service.pluginValue(bot: "bot", key: "s") == "plain")
            try await service.setPluginValue(bot: "bot", key: "old", value: "7")
            #expect(try await service.storedValue("old", in: "bot") == .string("7"))
            try await service.setStoredValue(nil, for: "k", in: "bot")
            #expect(try await service.storedValue("k", in: "bot") == nil)
            await expectRefusal(.badRequest) { try await service.setStoredValue(.null, for: "", in: "bot") }
            await expectRefusal(.badRequest) {
                try await service.setStoredValue(.bool(true), for: "k", in: "bot", expiresIn: 0)
            }
        }
    }

    @Test func incrementsAreAtomicAndTakeOldNumbersWrittenAsText() async throws {
        try await withChat { chat in
            let service = chat.service
            try await withThrowingTaskGroup(of: Int64.self) { group in
                for _ in 0..<50 { group.addTask { try await service.incrementStoredValue("hits", in: "bot") } }
                var seen: Set<Int64> = []
                for try await value in group { seen.insert(value) }
                #expect(seen == Set(1...50))
            }
            #expect(try await service.storedValue("hits", in: "bot") == .number(50))
            try await service.setPluginValue(bot: "bot", key: "karma", value: "2")
            #expect(try await service.incrementStoredValue("karma", in: "bot", by: 5) == 7)
            try await service.setStoredValue(.string("many"), for: "word", in: "bot")
            await expectRefusal(.badRequest) { _ = try await service.incrementStoredValue("word", in: "bot") }
        }
    }

    @Test func compareAndSetExpiryPrefixesAndNamespaces() async throws {
        try await withChat { chat in
            let service = chat.service
            #expect(try await service.compareAndSetStoredValue("lock", in: "bot", expected: nil, new: .string("a")))
            #expect(!(try await service.compareAndSetStoredValue("lock", in: "bot", expected: nil, new: .string("b"))))
            #expect(try await service.compareAndSetStoredValue("lock", in: "bot", expected: .string("a"), new: nil))
            #expect(try await service.storedValue("lock", in: "bot") == nil)

            try await service.setStoredValue(.number(1), for: "session:1", in: "bot", expiresIn: 60)
            try await service.setStoredValue(.number(2), for: "session:2", in: "bot")
            try await service.setStoredValue(.number(3), for: "other", in: "bot")
            #expect(
                try await service.storedValues(in: "bot", prefix: "session:").map(\.key) == ["session:1", "session:2"])
            chat.clock.advance(by: 61)
            #expect(try await service.storedValue("session:1", in: "bot") == nil)
            #expect(try await service.storedValues(in: "bot", prefix: "session:").map(\.key) == ["session:2"])
            // An expired key counts as absent for compare-and-set and increments.
            #expect(try await service.incrementStoredValue("session:1", in: "bot") == 1)

            try await service.setStoredValue(.number(9), for: "other", in: "bot/karma")
            #expect(try await service.storedValue("other", in: "bot") == .number(3))
            #expect(try await service.storedValue("other", in: "bot/karma") == .number(9))
            #expect(try await service.clearStoredValues(in: "bot", prefix: "session:") == 2)
            #expect(try await service.storedValues(in: "bot").map(\.key) == ["other"])
            #expect(try await service.pluginStores().contains("bot/karma"))
        }
    }
}
