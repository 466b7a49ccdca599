/// `<@uid:UID>` mention tokens in message text.
public enum Mentions {
    /// The uids mentioned in `text`, in order of first appearance, without duplicates. Only
    /// well-formed uids count; the caller keeps those who can see the conversation.
    public static func extract(from text: String?) -> [String] {
        guard let text, text.utf8.count >= 8 else { return [] }
        var found: [String] = []
        var seen: Set<String> = []
        let bytes = Array(text.utf8)
        let prefix: [UInt8] = Array("<@uid:".utf8)
        var index = 0
        while index + prefix.count < bytes.count {
            if bytes[index] == prefix[0], bytes[index..<(index + prefix.count)].elementsEqual(prefix) {
                let start = index + prefix.count
                var end = start
                while end < bytes.count, end - start <= 100, bytes[end] != UInt8(ascii: ">") { end += 1 }
                if end < bytes.count, bytes[end] == UInt8(ascii: ">") {
                    let uid = String(decoding: bytes[start..<end], as: UTF8.self)
                    if User.isValidUID(uid), seen.insert(uid).inserted { found.append(uid) }
                    index = end + 1
                    continue
                }
            }
            index += 1
        }
        return found
    }

    /// The token that mentions `uid`.
    public static func token(for uid: String) -> String { "<@uid:\(uid)>" }
}
