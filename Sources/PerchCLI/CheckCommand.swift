import Foundation
import PerchConfig
import PerchHost
import PerchYAML

/// `perch check [--config path] [--format text|json]`: validates config.yaml and every bot file.
public struct CheckCommand {
    public var configPath: String
    public var json: Bool
    public var loader: ConfigurationLoader

    public init(configPath: String, json: Bool, loader: ConfigurationLoader) {
        self.configPath = configPath
        self.json = json
        self.loader = loader
    }

    /// Prints the findings and the summary; returns the exit code (0 clean, 1 with errors).
    public func run(print write: (String) -> Void) -> Int32 {
        var loaded = loader.load(configPath: configPath)
        if loaded.isValid {
            // Plugin configurations are decoded by the plugins' own types, as the host does.
            loaded.findings += Perch.registry.check(loaded.bots)
        }
        if json {
            write(Self.json(loaded))
        } else {
            for finding in loaded.findings { write(finding.description) }
            write(Self.summary(loaded))
        }
        return loaded.isValid ? 0 : 1
    }

    public static func summary(_ loaded: LoadedConfiguration) -> String {
        let errors = loaded.errors.count
        let warnings = loaded.findings.count - errors
        func plural(_ count: Int, _ word: String) -> String { "\(count) \(word)\(count == 1 ? "" : "s")" }
        var text =
            "\(plural(loaded.bots.count, "bot")), \(plural(loaded.ruleCount, "rule")), \(plural(errors, "error"))"
        if warnings > 0 { text += ", \(plural(warnings, "warning"))" }
        return text
    }

    struct Report: Encodable {
        struct Item: Encodable {
            var file: String
            var line: Int
            var column: Int
            var severity: String
            var path: String
            var message: String
        }
        var valid: Bool
        var bots: Int
        var rules: Int
        var errors: Int
        var findings: [Item]
    }

    public static func json(_ loaded: LoadedConfiguration) -> String {
        let report = Report(
            valid: loaded.isValid, bots: loaded.bots.count, rules: loaded.ruleCount, errors: loaded.errors.count,
            findings: loaded.findings.map {
                .init(
                    file: $0.location.file, line: $0.location.line, column: $0.location.column,
                    severity: $0.severity.rawValue, path: $0.path, message: $0.message)
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(report)) ?? Data(), as: UTF8.self)
    }
}
