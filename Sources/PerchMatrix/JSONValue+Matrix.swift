import Foundation
import PerchChat

/// Reading and writing the JSON of Matrix's API.
extension JSONValue {
    /// The value as text: this JSON, compact.
    var encoded: Data {
        var writer = JSONWriter(capacity: 256)
        writer.value(self)
        return Data(writer.bytes)
    }

    /// Parses a JSON text.
    static func parse(_ data: Data) throws -> JSONValue {
        try JSONValue(parsing: String(decoding: data, as: UTF8.self))
    }

    var objectValue: [String: JSONValue]? {
        if case .object(let object) = self { return object }
        return nil
    }

    var arrayValue: [JSONValue]? {
        if case .array(let array) = self { return array }
        return nil
    }

    var intValue: Int64? {
        if case .number(let number) = self, number == number.rounded(), abs(number) < 9e15 { return Int64(number) }
        return nil
    }

    var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The value at a path of keys (`content`, `m.relates_to`, `event_id`).
    func at(_ path: String...) -> JSONValue? {
        var current: JSONValue? = self
        for key in path { current = current?[key] }
        return current
    }

    /// An object of string keys, from pairs (later ones win).
    static func object(_ pairs: KeyValuePairs<String, JSONValue?>) -> JSONValue {
        var object: [String: JSONValue] = [:]
        for (key, value) in pairs { if let value { object[key] = value } }
        return .object(object)
    }
}
