import Foundation
import PerchChat
import PerchSQLite
import PerchService
import PerchTestSupport
import Testing

/// Users as the service answers them: recently read ones come from memory, so what matters is
/// that a change is never hidden from the service that made it, nor for long from another one.
@Suite struct UserTests {
    @Test func aChangeIsSeenAtOnceHereAndWithinASecondByAnotherProcess() async throws {
        try await withChat { chat in
            // Another service on the same file stands for another process (`perch send --local`).
            let other = try SQLiteChatStore(path: chat.path)
            let elsewhere = ChatService(store: other)
            #expect(try await chat.service.user("dave").name == "Dave")
            #expect(try await elsewhere.user("dave").name == "Dave")
            _ = try await chat.service.updateUser(uid: "dave", name: "David", role: "bot")
            let here = try await chat.service.user("dave")
            #expect(here.name == "David")
            #expect(here.role == "bot")
            var seen = try await elsewhere.user("dave").name
            let deadline = ContinuousClock.now + .seconds(3)
            while seen != "David", ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                seen = try await elsewhere.user("dave").name
            }
            #expect(seen == "David")
            await other.close()
        }
    }

    @Test func anUnknownUserIsRefusedEveryTime() async throws {
        try await withChat { chat in
            for _ in 0..<2 {
                await expectRefusal(.uidNotFound) { _ = try await chat.service.user("nobody") }
            }
            _ = try await chat.service.createUser(uid: "nobody", name: "Now Somebody")
            #expect(try await chat.service.user("nobody").name == "Now Somebody")
        }
    }
}
