import Dispatch
import PerchChat
import PerchTestSupport
import Testing

@testable import PerchService

/// The users the service remembers for a second (every `onBehalfOf` request and bot action reads one).
@Suite struct RecentUsersTests {
    let dave = User(uid: "dave", name: "Dave")

    @Test func aUserIsRememberedForASecond() {
        let users = RecentUsers()
        users.remember(dave, at: 5_000)
        #expect(users.user("dave", at: 5_000)?.name == "Dave")
        #expect(users.user("dave", at: 5_000 + RecentUsers.lifetime - 1)?.name == "Dave")
        #expect(users.user("dave", at: 5_000 + RecentUsers.lifetime) == nil)
        #expect(users.user("erin", at: 5_000) == nil)
    }

    /// A reader reads the clock before it takes the lock; a writer may store the user in between,
    /// stamped later than the reader's clock. That entry is fresh. (The age was computed as
    /// `now - at` and overflowed: the host crashed under concurrent requests for one user.)
    @Test func anEntryStampedAfterTheReadersClockIsFresh() {
        let users = RecentUsers()
        users.remember(dave, at: 9_000)
        #expect(users.user("dave", at: 8_000)?.name == "Dave")
    }

    @Test func concurrentReadersAndWritersOfOneUser() {
        let users = RecentUsers()
        let dave = self.dave
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            for _ in 0..<2_000 {
                if index % 2 == 0 {
                    users.remember(dave)
                } else {
                    _ = users["dave"]
                }
            }
        }
        #expect(users["dave"]?.name == "Dave")
    }
}
