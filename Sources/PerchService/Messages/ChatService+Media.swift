import PerchChat

extension ChatService {
    /// Records an uploaded file (its bytes are already in the data directory).
    /// - Throws: `ERR_UID_NOT_FOUND`.
    public func registerMedia(_ file: MediaFile) async throws(ChatError) -> MediaFile {
        try await writing { tx in
            _ = try Self.requireUser(tx, file.uploader)
            try tx.insertMedia(file)
            return file
        }
    }

    /// A file `viewer` may download: one they uploaded, or one carried by a message they can see.
    /// - Throws: `ERR_MESSAGE_NO_ACCESS`, alike for a file that does not exist and one the viewer may
    ///   not see, so ids cannot be probed.
    public func media(_ id: String, as viewer: String) async throws(ChatError) -> MediaFile {
        try await reading { tx in try Self.readableMedia(tx, id, as: viewer) }
    }

    /// The upload `id` when `viewer` may read it: they uploaded it, they are the app, or a live
    /// message carrying it is one they can read. A message grants that only because its sender
    /// could read the upload when they attached it (``insert(_:_:from:at:category:defaults:session:)``
    /// checks it), so attaching never opens an upload to more people than its uploader's messages do.
    /// - Throws: `ERR_MESSAGE_NO_ACCESS {media}`, alike for an upload that does not exist.
    static func readableMedia(_ tx: any ChatReadTransaction, _ id: String, as viewer: String) throws -> MediaFile {
        guard let file = try tx.media(id) else { throw ChatError(.messageNoAccess, ["media": .string(id)]) }
        if file.uploader == viewer || viewer == User.system { return file }
        for messageId in try tx.mediaMessages(id) {
            guard let message = try tx.message(messageId), !message.isDeleted else { continue }
            if try Self.participation(tx, uid: viewer, towards: message).canRead { return file }
        }
        throw ChatError(.messageNoAccess, ["media": .string(id)])
    }
}
