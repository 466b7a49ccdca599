import Foundation
import PerchChat
import PerchConfig

/// `perch schema config|bot`: the JSON Schema of config.yaml or of a bot file (the Swift plugins'
/// configurations of this build included), for an editor's YAML support (docs/configuration.md,
/// "In an editor").
enum SchemaCommand {
    static func run(_ arguments: [String], print write: (String) -> Void, printError: (String) -> Void) -> Int32 {
        let which = arguments.dropFirst().first
        if which == "--help" || which == "-h" {
            write(Perch.usage(of: "schema") ?? "")
            return 0
        }
        guard arguments.count == 2, let which, which == "config" || which == "bot" else {
            printError("usage: perch schema config|bot")
            return 64
        }
        let schema =
            which == "config"
            ? ConfigJSONSchema.config : ConfigJSONSchema.bot(plugins: Perch.registry.configurationSchemas)
        write(text(schema))
        return 0
    }

    /// `value` as indented JSON with its keys sorted: the same text for the same schema.
    static func text(_ value: JSONValue) -> String {
        let data = try? JSONSerialization.data(
            withJSONObject: foundation(value), options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    private static func foundation(_ value: JSONValue) -> Any {
        switch value {
        case .null: return NSNull()
        case .bool(let flag): return flag
        case .number(let number): return Int64(exactly: number).map { $0 as Any } ?? number
        case .string(let text): return text
        case .array(let items): return items.map(foundation)
        case .object(let fields): return fields.mapValues(foundation)
        }
    }
}
