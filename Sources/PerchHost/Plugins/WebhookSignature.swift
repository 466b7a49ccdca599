import CCrypto

/// GitHub's webhook signature, `sha256=` and the body's HMAC-SHA256 under a shared secret in
/// lower-case hex: what Perch's `POST /v3/hooks/{name}` checks in `X-Hub-Signature-256`, and what a
/// plugin reached over HTTP signs its posts with.
public enum WebhookSignature {
    /// The header it travels in.
    public static let header = "X-Hub-Signature-256"

    /// `sha256=HEX` for `body` under `secret`.
    public static func value(secret: String, body: [UInt8]) -> String {
        "sha256=" + hex(hmacSHA256(key: secret, body))
    }

    public static func hmacSHA256(key: String, _ data: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        var key = key
        key.withUTF8 { key in
            data.withUnsafeBufferPointer { data in
                _ = HMAC(
                    EVP_sha256(), key.baseAddress, Int32(key.count), data.baseAddress, data.count, &output, &length)
            }
        }
        return Array(output.prefix(Int(length)))
    }

    /// Lower-case hex of `bytes`, from a table (`String(format:)` per byte is a formatter call a byte,
    /// on every signed request).
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
