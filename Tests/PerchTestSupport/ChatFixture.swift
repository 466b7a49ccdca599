import Foundation
import PerchChat
import PerchSQLite
import PerchService
import Testing

/// A chat service on a fresh temporary database with a manual clock and a seeded cast:
/// group `g` (public) owned by alice, with bob (admin), carol (moderator) and dave (participant);
/// erin exists but is in no group.
public struct ChatFixture: Sendable {
    public let directory: String
    public let store: SQLiteChatStore
    public let service: ChatService
    public let clock: ManualClock

    public var path: String { directory + "/perch.sqlite" }

    public static func make(settings: ChatSettings = ChatSettings(), logger: any ChatLogger = StandardErrorLogger())
        async throws
        -> ChatFixture
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-chat-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let store = try SQLiteChatStore(path: directory + "/perch.sqlite")
        let clock = ManualClock()
        let service = ChatService(store: store, clock: clock, settings: settings, logger: logger)
        let fixture = ChatFixture(directory: directory, store: store, service: service, clock: clock)
        for uid in ["alice", "bob", "carol", "dave", "erin"] {
            _ = try await service.createUser(uid: uid, name: uid.capitalized)
        }
        _ = try await service.createGroup(guid: "g", name: "G", owner: "alice")
        try await service.addMembers(
            to: "g", [("bob", .admin), ("carol", .moderator), ("dave", .participant)], by: "alice")
        return fixture
    }

    public func close() async {
        await store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    @discardableResult
    public func say(
        _ text: String, as sender: String = "dave", to receiver: Receiver = .group("g"), parent: Int64 = 0,
        quote: Int64 = 0, muid: String = ""
    ) async throws -> Message {
        try await service.send(
            MessageDraft(to: receiver, text: text, muid: muid, parentMessageId: parent, quotedMessageId: quote),
            as: sender)
    }
}

/// Runs `body` with a fresh fixture and always closes it.
public func withChat(
    settings: ChatSettings = ChatSettings(), logger: any ChatLogger = StandardErrorLogger(),
    _ body: (ChatFixture) async throws -> Void
) async throws {
    let fixture = try await ChatFixture.make(settings: settings, logger: logger)
    do {
        try await body(fixture)
    } catch {
        await fixture.close()
        throw error
    }
    await fixture.close()
}

/// Expects `body` to be refused with `code` (and, when given, these params); returns the error.
@discardableResult
public func expectRefusal(
    _ code: ChatError.Code, params: [String: ChatError.ParamValue]? = nil,
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
) async -> ChatError? {
    do {
        try await body()
        Issue.record("expected \(code.rawValue), but the call succeeded", sourceLocation: sourceLocation)
        return nil
    } catch let error as ChatError {
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
        if let params { #expect(error.params == params, sourceLocation: sourceLocation) }
        return error
    } catch {
        Issue.record("expected \(code.rawValue), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
