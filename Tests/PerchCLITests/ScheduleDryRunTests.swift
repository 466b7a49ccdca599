import Foundation
import PerchTestSupport
import PerchTesting
import Testing

/// `perch dry-run --at TIME`: what the schedule rules due then would post, doing nothing.
@Suite struct ScheduleDryRunTests {
    static let bot = botFile(
        """
          - name: standup
            on: { schedule: "0 9 * * Mon-Fri", group: room, timezone: Europe/Berlin }
            do: [{ reply: "Standup time, {group.guid}!" }]
          - name: digest
            on: { schedule: "0 8 * * *", user: alice }
            do: [{ reply: "Your digest" }]
        """)

    @Test func aScheduleIsFiredAtTheTimeGivenAndNothingIsPosted() async throws {
        let directory = try writeTestConfiguration(config: hostConfig, bots: ["b.yaml": Self.bot])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func dryRun(_ at: String) async throws -> ProgramRun {
            try await run(
                HostCrashTests.buildDirectory + "/perch",
                ["dry-run", "--config", directory + "/config.yaml", "--at", at], together: false)
        }
        // Monday 7 December 2026, 09:00 in Berlin is 08:00 UTC: both rules are due.
        let monday = try await dryRun("2026-12-07T08:00Z")
        #expect(monday.status == 0, "\(monday.errors)")
        #expect(
            monday.output
                == "b / standup in group room:\n  - reply: Standup time, room!\nb / digest to alice:\n  - reply: Your digest\n"
        )
        // The same minute written another way, and a Sunday, when only the digest is.
        let spaced = try await dryRun("2026-12-07 08:00")
        #expect(spaced.output == monday.output)
        let sunday = try await dryRun("2026-12-06T09:00+01:00")
        #expect(sunday.output == "b / digest to alice:\n  - reply: Your digest\n")
        let none = try await dryRun("2026-12-07T10:30Z")
        #expect(none.output == "no schedule rule is due at 2026-12-07T10:30Z\n")
        let wrong = try await dryRun("tomorrow")
        #expect(wrong.status == 64 && wrong.errors.contains("dry-run --at TIME takes a UTC time"))
        // Nothing was posted.
        try await withTestHost(configPath: directory + "/config.yaml", dataDirectory: directory + "/data") { chat in
            let posted = try await chat.botMessages(in: .group("room"))
            #expect(posted.isEmpty)
        }
    }
}
