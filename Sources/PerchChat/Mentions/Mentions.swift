/// `<@uid:UID>` mention tokens in message text.
public enum Mentions {
    /// The uids mentioned in `text`, in order of first appearance, without duplicates. Only
    /// well-formed uids count; the caller keeps those who can see the conversation.
    public static func extract(from text: String?) -> [String] {
        guard let text, text.utf8.count >= 8 else { return [] }
        // A native string's bytes are read in place (copied into an array once, they were an
        // allocation and a copy of every message's text).
        if let found = text.utf8.withContiguousStorageIfAvailable(extract(in:)) { return found }
        return Array(text.utf8).withUnsafeBufferPointer(extract(in:))
    }

    private static let prefix = Array("<@uid:".utf8)

    private static func extract(in bytes: UnsafeBufferPointer<UInt8>) -> [String] {
        var found: [String] = []
        var seen: Set<String> = []
        let prefix = Self.prefix
        var index = 0
        while index + prefix.count < bytes.count {
            if bytes[index] == prefix[0], bytes[index..<(index + prefix.count)].elementsEqual(prefix) {
                let start = index + prefix.count
                var end = start
                while end < bytes.count, end - start <= 100, bytes[end] != UInt8(ascii: ">") { end += 1 }
                if end < bytes.count, bytes[end] == UInt8(ascii: ">") {
                    let uid = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
                    if User.isValidUID(uid), seen.insert(uid).inserted { found.append(uid) }
                    index = end + 1
                    continue
                }
            }
            index += 1
        }
        return found
    }

    /// `text` with each mention token written as plain `@UID`: how a bot repeats someone's
    /// message without mentioning its people again (the thread watcher quoting a thread's root
    /// on every reply would notify everyone the root mentioned, at every reply).
    public static func quoted(_ text: String) -> String {
        guard text.utf8.count >= 8, text.contains("<@uid:") else { return text }
        var output = ""
        var rest = Substring(text)
        while let start = rest.firstRange(of: "<@uid:") {
            output += rest[..<start.lowerBound]
            let tail = rest[start.upperBound...]
            if let close = tail.prefix(101).firstIndex(of: ">"), User.isValidUID(String(tail[..<close])) {
                output += "@" + tail[..<close]
                rest = tail[tail.index(after: close)...]
            } else {
                output += rest[start]
                rest = tail
            }
        }
        return output + rest
    }

    /// The token that mentions `uid`.
    public static func token(for uid: String) -> String { "<@uid:\(uid)>" }
}
