import PerchService
import Testing

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

    @Test func theSuffixSaysWhatWasHeldBack() {
        let warnings = RepeatedWarnings(window: 60, burst: 1)
        #expect(warnings.suffix("k", at: 0) == "")
        #expect(warnings.suffix("k", at: 1) == nil)
        #expect(warnings.suffix("k", at: 60) == " (1 more like it since the last such line, not logged)")
    }
}
