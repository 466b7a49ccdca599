import Foundation
import PerchChat

/// JSON for the columns that hold structured values; one per connection, never shared.
final class JSONCoder {
    private let encoder: JSONEncoder
    private let decoder = JSONDecoder()

    init() {
        encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
    }

    func encodeString<T: Encodable>(_ value: T) -> String {
        (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }

    func encodeValue<T: Encodable>(_ value: T?) -> SQLValue {
        guard let value else { return .null }
        return .text(encodeString(value))
    }

    /// JSON values and string lists (message data, metadata, tags, mentions) through the
    /// hand-written writer: `JSONEncoder` cost a few percent of every send.
    func encodeValue(_ value: JSONValue?) -> SQLValue {
        guard let value else { return .null }
        var writer = JSONWriter(capacity: 64)
        writer.value(value)
        return .text(writer.output)
    }

    func encodeValue(_ value: [String]?) -> SQLValue {
        guard let value else { return .null }
        var writer = JSONWriter(capacity: 64)
        writer.strings(value)
        return .text(writer.output)
    }

    func decode<T: Decodable>(_ text: String?) -> T? {
        guard let text else { return nil }
        return try? decoder.decode(T.self, from: Data(text.utf8))
    }

    /// JSON values, string lists and attachments (every message row has some) through the
    /// hand-written reader: `JSONDecoder` cost more than the rest of reading a row.
    func decode(_ text: String?) -> JSONValue? {
        guard let text else { return nil }
        return try? JSONValue(parsing: text)
    }

    func decode(_ text: String?) -> [String]? {
        guard let text else { return nil }
        return try? JSONReader.read(text) { try $0.strings() }
    }

    func decode(_ text: String?) -> [Attachment]? {
        guard let text else { return nil }
        return try? JSONReader.read(text) { try $0.attachments() }
    }
}
