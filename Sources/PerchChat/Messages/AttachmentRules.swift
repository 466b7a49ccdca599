/// What a message's attachment may point at (docs/chat-model.md, "Messages"): an upload of this
/// chat service, which its sender must be allowed to read, or an `http:` or `https:` address on the
/// web. Nothing else: a `javascript:` or `data:` url would run or show in the reader's browser.
public enum AttachmentRules {
    /// The path every upload is served under; an attachment's upload url is this and the upload's id.
    public static let uploadPrefix = "/v3/media/"

    /// The longest attachment url taken.
    public static let maximumURLBytes = 2_048

    /// What an accepted attachment url points at.
    public enum Target: Sendable, Equatable {
        /// An upload of this service, by id.
        case upload(id: String)
        /// An address on the web.
        case web
    }

    /// Where `url` points, or why it is refused. An upload's path on an absolute address
    /// (`https://chat.example.org/v3/media/ID`) is that upload too: it is read with the same rights.
    /// - Throws: `ERR_BAD_REQUEST {field}` for any other url: another scheme, a relative path that is
    ///   not an upload, credentials in the address, spaces or control characters, an upload id that
    ///   is not one.
    public static func target(of url: String, field: String) throws(ChatError) -> Target {
        let refusal = ChatError.badRequest(
            field, "an attachment's url is an upload of this server (/v3/media/ID) or an http or https address")
        guard url.utf8.count <= maximumURLBytes else {
            throw .badRequest(field, "longer than \(maximumURLBytes) bytes")
        }
        guard url.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else { throw refusal }
        if url.hasPrefix(uploadPrefix) { return try upload(path: url, field: field) }
        let lowered = url.lowercased()
        let rest: Substring
        if lowered.hasPrefix("https://") {
            rest = url.dropFirst("https://".count)
        } else if lowered.hasPrefix("http://") {
            rest = url.dropFirst("http://".count)
        } else {
            throw refusal
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        // No empty host, and no `user@` before it: `https://chat.example.org@elsewhere.net/` is
        // elsewhere.net, whatever it reads as.
        guard !authority.isEmpty, !authority.contains("@"), authority.first != ":" else { throw refusal }
        let path = rest[authority.endIndex...].prefix { $0 != "?" && $0 != "#" }
        if path.hasPrefix(uploadPrefix) { return try upload(path: String(path), field: field) }
        return .web
    }

    /// The upload a `/v3/media/ID` path names.
    static func upload(path: String, field: String) throws(ChatError) -> Target {
        let id = path.dropFirst(uploadPrefix.count)
        guard id.utf8.count == 64, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else {
            throw .badRequest(field, "not an upload's url: /v3/media/ and a 64-character id")
        }
        return .upload(id: String(id))
    }

    /// The attachments with every upload's url in its one form, `/v3/media/ID`, and the uploads
    /// they name, in order.
    /// - Throws: as ``target(of:field:)``, naming the attachment (`attachments[1].url`).
    public static func normalized(_ attachments: [Attachment]) throws(ChatError) -> (
        attachments: [Attachment], uploads: [String]
    ) {
        var result = attachments
        var uploads: [String] = []
        for index in attachments.indices {
            if case .upload(let id) = try target(of: attachments[index].url, field: "attachments[\(index)].url") {
                result[index].url = uploadPrefix + id
                uploads.append(id)
            }
        }
        return (result, uploads)
    }
}
