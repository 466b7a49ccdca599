import Foundation
import PerchConfig
import PerchService
import PerchTestSupport
import PerchTesting
import Testing

@testable import PerchHost

/// A schedule read on a time zone's wall clock, across the two changes of summer time.
@Suite struct ScheduleTimeZoneTests {
    let berlin = TimeZone(identifier: "Europe/Berlin")!

    /// UTC epoch seconds of a wall-clock time written in UTC.
    func utc(_ text: String) -> Int64 {
        let format = ISO8601DateFormatter()
        return Int64(format.date(from: text + "Z")!.timeIntervalSince1970)
    }

    @Test func aScheduleFollowsItsZoneThroughTheYear() throws {
        let nine = try CronExpression("0 9 * * *")
        // Winter (CET, UTC+1) and summer (CEST, UTC+2).
        #expect(nine.isDue(minute: utc("2026-12-01T08:00:00"), in: berlin))
        #expect(!nine.isDue(minute: utc("2026-12-01T09:00:00"), in: berlin))
        #expect(nine.isDue(minute: utc("2026-07-01T07:00:00"), in: berlin))
        #expect(!nine.isDue(minute: utc("2026-07-01T08:00:00"), in: berlin))
        // No zone: UTC.
        #expect(nine.isDue(minute: utc("2026-07-01T09:00:00"), in: nil))
    }

    /// 2026-10-25, 03:00 CEST becomes 02:00 CET (01:00 UTC): 02:30 comes twice and fires once.
    @Test func theHourRepeatedWhenTheClocksGoBackFiresOnce() throws {
        let halfPastTwo = try CronExpression("30 2 * * *")
        let fired = stride(from: utc("2026-10-24T22:00:00"), to: utc("2026-10-25T06:00:00"), by: 60).filter {
            halfPastTwo.isDue(minute: $0, in: berlin)
        }
        #expect(fired == [utc("2026-10-25T00:30:00")])
        // Every minute of the hour that follows the repeated one fires as usual.
        let everyMinute = try CronExpression("* 3 * * *")
        let third = stride(from: utc("2026-10-24T22:00:00"), to: utc("2026-10-25T06:00:00"), by: 60).filter {
            everyMinute.isDue(minute: $0, in: berlin)
        }
        #expect(third.count == 60)
        #expect(third.first == utc("2026-10-25T02:00:00"))
    }

    /// 2026-03-29, 02:00 CET becomes 03:00 CEST: 02:30 does not happen that night.
    @Test func theHourSkippedWhenTheClocksGoForwardDoesNotFire() throws {
        let halfPastTwo = try CronExpression("30 2 * * *")
        let fired = stride(from: utc("2026-03-28T22:00:00"), to: utc("2026-03-30T06:00:00"), by: 60).filter {
            halfPastTwo.isDue(minute: $0, in: berlin)
        }
        #expect(fired == [utc("2026-03-30T00:30:00")])
    }
}

/// The host's own timer, on a manual clock that jumps.
@Suite struct SchedulerTimerTests {
    /// Minutes the timer did not see (the clock jumped past them: a busy machine, a stop in a
    /// debugger) run late, up to five; the timer went from one minute it saw to the next.
    @Test func minutesTheTimerMissedRunLateUpToFive() async throws {
        let rules = """
              - on: { schedule: "* * * * *", group: room }
                do: [{ reply: tick }]
            """
        let directory = try writeTestConfiguration(config: hostConfig, bots: ["b.yaml": botFile(rules)])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let loaded = ConfigurationLoader().load(configPath: directory + "/config.yaml")
        try #require(loaded.isValid, "\(loaded.findings)")
        let clock = ManualClock(1_800_000_000 / 60 * 60 + 10)
        let host = BotHost(
            configuration: loaded,
            options: BotHost.Options(
                dataDirectory: directory + "/data", clock: clock,
                logger: HostLogger(minimum: .info, keepInMemory: true, sink: { _ in }), schedulesFromTimer: true))
        try await host.start()
        let service = try #require(await host.service)
        func ticks(_ count: Int) async throws -> Int {
            for _ in 0..<1_000 {
                let found = try await service.fetchPrevious(MessagesRequest(guid: "room", limit: 50), as: "alice")
                    .messages.filter { $0.sender == "bot" }.count
                if found >= count { return found }
                try await Task.sleep(for: .milliseconds(10))
            }
            return -1
        }
        clock.advance(by: 3 * 60)  // three minutes at once
        let logger = await host.options.logger
        #expect(try await ticks(3) == 3, "\(logger.records)")
        clock.advance(by: 60 * 60)  // an hour: the last five
        #expect(try await ticks(8) == 8)
        try await Task.sleep(for: .seconds(1.2))  // two more looks at the same minute: nothing new
        #expect(try await ticks(8) == 8)
        await host.stop()
    }
}
