import PerchTestSupport
import Testing

@testable import PerchService

@Suite struct RepeatedWarningsTests {
    @Test func aRepeatedWarningIsOneLineAWindowCarryingWhatItHeldBack() {
        let warnings = RepeatedWarnings(window: 60, burst: 1)
        #expect(warnings.admit("reply ERR_TOO_MANY_REQUESTS", at: 100) == 0)
        #expect(warnings.admit("reply ERR_TOO_MANY_REQUESTS", at: 100.5) == nil)
        #expect(warnings.admit("reply ERR_TOO_MANY_REQUESTS", at: 159.9) == nil)
        // Another kind has a window of its own.
        #expect(warnings.admit("pin ERR_PERMISSION_DENIED", at: 120) == 0)
        // The window has passed: logged, with the two held back, and a new window opens.
        #expect(warnings.admit("reply ERR_TOO_MANY_REQUESTS", at: 160) == 2)
        #expect(warnings.admit("reply ERR_TOO_MANY_REQUESTS", at: 200) == nil)
        #expect(warnings.admit("pin ERR_PERMISSION_DENIED", at: 180) == 0)
        #expect(warnings.admit("reply ERR_TOO_MANY_REQUESTS", at: 500) == 1)
        #expect(warnings.admit("reply ERR_TOO_MANY_REQUESTS", at: 561) == 0)
    }

    @Test func theFirstBurstOfAWindowIsLoggedAndTheRestCounted() {
        let warnings = RepeatedWarnings(window: 60, burst: 3)
        #expect((0..<5).map { warnings.admit("k", at: Double($0)) } == [0, 0, 0, nil, nil])
        #expect(warnings.admit("k", at: 60) == 2)
        #expect(warnings.admit("k", at: 61) == 0)
    }

    /// The service's clock is the wall clock: set back an hour, a window opened "in the future"
    /// does not hold the kind back for that hour.
    @Test func aClockSetBackOpensANewWindow() {
        let warnings = RepeatedWarnings(window: 60, burst: 1)
        #expect(warnings.admit("full", at: 10_000) == 0)
        #expect(warnings.admit("full", at: 10_001) == nil)
        #expect(warnings.admit("full", at: 6_400) == 1)
        #expect(warnings.admit("full", at: 6_401) == nil)
    }

    /// A kind that names what varies (a path) must not grow the table for ever: once many kinds
    /// were seen, finished windows are forgotten; one that held lines back is kept ten windows
    /// more, for the count its next line carries.
    @Test func finishedKindsAreForgottenOnceThereAreMany() {
        let warnings = RepeatedWarnings(window: 60, burst: 1)
        #expect(warnings.admit("held", at: 0) == 0)
        #expect(warnings.admit("held", at: 1) == nil)
        // 5,000 kinds in 500 s: ten a second.
        for index in 0..<5_000 { _ = warnings.admit("path \(index)", at: Double(index) / 10) }
        #expect(warnings.keptCount <= RepeatedWarnings.keptKinds)
        #expect(warnings.admit("held", at: 550) == 1)
        // Ten windows after its last line, a kind that held lines back is forgotten too.
        #expect(warnings.admit("held", at: 551) == nil)
        for index in 0..<2_000 { _ = warnings.admit("later \(index)", at: 1_200 + Double(index) / 10) }
        #expect(warnings.admit("held", at: 1_400) == 0)
    }

    @Test func theSuffixSaysWhatWasHeldBack() {
        let warnings = RepeatedWarnings(window: 60, burst: 1)
        #expect(warnings.suffix("k", at: 0) == "")
        #expect(warnings.suffix("k", at: 1) == nil)
        #expect(warnings.suffix("k", at: 60) == " (1 more like it since the last such line, not logged)")
    }
}
