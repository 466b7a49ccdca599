import Testing

@testable import PerchCLI

/// Every command answers `--help` with its own usage, not the whole list.
@Suite struct HelpTests {
    @Test func eachCommandsHelpIsItsOwnUsage() {
        for command in ["send", "tail", "check", "backup", "verify", "threads", "pins", "dry-run", "run"] {
            var printed: [String] = []
            var code: Int32 = -1
            let parsed = ParsedArguments.forCommand(
                [command, "--help"], valued: [], exitCode: &code, print: { printed.append($0) }, printError: { _ in })
            #expect(parsed == nil && code == 0, "\(command)")
            let text = printed.joined()
            #expect(text.hasPrefix("usage: perch \(command) "), "\(command): \(text)")
            // Each line naming a command names this one.
            let named = text.split(separator: "\n").dropFirst().filter { $0.hasPrefix("  ") && !$0.hasPrefix("      ") }
                .compactMap { $0.split(separator: " ").first }
            #expect(!named.isEmpty && Set(named) == [Substring(command)], "\(command): \(text)")
        }
        #expect(Perch.usage(of: "nonsense") == nil)
    }
}
