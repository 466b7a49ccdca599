import Foundation
import PerchChat
import PerchLock
import PerchService

/// Where and what the API stores for `POST /v3/media`.
public struct MediaSettings: Sendable {
    /// `<data directory>/media`.
    public var directory: String
    public var maximumBytes: Int
    public var allowedTypes: Set<String>

    public init(directory: String, maximumBytes: Int, allowedTypes: [String]) {
        self.directory = directory
        self.maximumBytes = maximumBytes
        self.allowedTypes = Set(allowedTypes.map { $0.lowercased() })
    }
}

extension PerchAPI {
    static func mediaRoutes() -> [Route] {
        [
            route("POST", "v3/media", name: "media.upload") { api, request in try await api.upload(request) },
            route("GET", "v3/media/{id}", name: "media.get") { api, request in try await api.download(request) },
        ]
    }

    /// `POST /v3/media?name=FILE` with the file as the body and its `Content-Type`: stores it under
    /// a random id and returns the attachment to send (`name`, `size`, `mimeType`, `extension`, `url`).
    /// The file name is for display only; nothing of it reaches the filesystem.
    func upload(_ request: Request) async throws -> HTTPResponse {
        guard let media else { throw ChatError.badRequest("path", "uploads are not configured") }
        guard !request.caller.isApp else { throw ChatError.badRequest("onBehalfOf", "an upload belongs to a user") }
        let mime =
            (request.http.header("content-type") ?? "").split(separator: ";").first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            } ?? ""
        guard media.allowedTypes.contains(mime) else { throw HTTPRefusal.unsupportedType(mime) }
        guard !request.http.body.isEmpty else { throw ChatError.badRequest("body", "the file is empty") }
        guard request.http.body.count <= media.maximumBytes else {
            throw HTTPRefusal.tooLarge("larger than the upload limit", limit: media.maximumBytes)
        }
        let name = Self.displayName(request.query("name") ?? "file")
        let id = Secrets.newToken()
        let path = media.directory + "/" + id
        // On the disk before the row that makes it downloadable is committed: a power cut after
        // the answer leaves no message pointing at a file that never reached the disk. A failure
        // is logged with an id (a full disk answers 503, as the store's does).
        try PrivateFile.write(request.http.body, to: path)
        let file = MediaFile(
            id: id, uploader: request.caller.uid, name: name, mimeType: mime, extension: Self.fileExtension(name),
            size: Int64(request.http.body.count), createdAt: service.clock.now())
        do {
            _ = try await service.registerMedia(file)
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
        return .json(200, APIJSON.data(APIJSON.encode(file.attachment)))
    }

    /// `GET /v3/media/{id}`: the file, for its uploader and for anyone who can see a message carrying it.
    func download(_ request: Request) async throws -> HTTPResponse {
        guard let media else { throw ChatError.badRequest("path", "uploads are not configured") }
        let id = request.parameter("id")
        guard id.count == 64, id.allSatisfy(\.isHexDigit) else { throw ChatError.badRequest("id", "not a media id") }
        let file = try await service.media(id, as: request.caller.uid)
        guard let data = FileManager.default.contents(atPath: media.directory + "/" + id) else {
            throw ChatError(.messageNoAccess, ["media": .string(id)])
        }
        let quoted = file.name.replacingOccurrences(of: "\"", with: "'")
        return HTTPResponse(
            status: 200,
            headers: [
                ("Content-Type", file.mimeType), ("Content-Disposition", "inline; filename=\"\(quoted)\""),
                ("X-Content-Type-Options", "nosniff"),
            ], body: Array(data))
    }

    /// A file name fit for display: the last path component, no control characters, at most 200.
    static func displayName(_ raw: String) -> String {
        let last = raw.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? "file"
        let clean = String(last.unicodeScalars.filter { $0.value >= 0x20 && $0 != "\u{7F}" }.map(Character.init))
        let trimmed = clean.trimmingCharacters(in: .whitespaces)
        return trimmed.isEmpty || trimmed == "." || trimmed == ".." ? "file" : String(trimmed.prefix(200))
    }

    /// The extension of a display name: letters and digits only, at most 10.
    static func fileExtension(_ name: String) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        let raw = name[name.index(after: dot)...].lowercased()
        guard raw.count <= 10, raw.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return "" }
        return raw
    }
}

/// The upload name rules, for tests.
public enum PerchAPIShim {
    public static func displayName(_ raw: String) -> String { PerchAPI.displayName(raw) }
    public static func fileExtension(_ name: String) -> String { PerchAPI.fileExtension(name) }
}

/// A media file that could not be written: a full disk is a full store to the caller (503, come
/// back later), anything else an internal error.
extension PrivateFile.Failure: StoreFailure {
    public var isStorageFull: Bool { code == ENOSPC || code == EDQUOT }
}
