import PerchConfig
import Testing

/// The declaration of a command's typed arguments, and the durations they take.
@Suite struct CommandUsageTests {
    @Test func aUsageReadsBackAsWritten() throws {
        let usage = try CommandUsage(parsing: "  <who:user>   <when:duration> <note> [count:integer] [text:rest]")
        #expect(usage.text == "<who:user> <when:duration> <note> [count:integer] [text:rest]")
        #expect(usage.parameters.map(\.isOptional) == [false, false, false, true, true])
        #expect(usage.placeholders == ["who", "when", "when.seconds", "note", "count", "text"])
    }

    @Test(arguments: [
        ("90s", 90), ("10m", 600), ("2h", 7200), ("1d", 86_400), ("1w", 604_800), ("1h30m", 5400), ("2H", 7200),
    ])
    func durations(_ text: String, _ seconds: Int64) {
        #expect(CommandUsage.seconds(in: text) == seconds)
    }

    @Test(arguments: ["", "m", "10", "10x", "0m", "1h30", "h1", "99999999999d", "5000w", "1½m"])
    func notDurations(_ text: String) {
        #expect(CommandUsage.seconds(in: text) == nil)
    }
}
