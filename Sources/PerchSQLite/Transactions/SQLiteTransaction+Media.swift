import Foundation
import PerchService

/// Uploaded files and the messages that carry them.
extension SQLiteTransaction {
    func media(_ id: String) throws -> MediaFile? {
        try db.query(
            "SELECT id, uploader, name, mime_type, extension, size, created_at FROM media WHERE id = ?", [.text(id)]
        ) { row in
            MediaFile(
                id: row.text(0), uploader: row.text(1), name: row.text(2), mimeType: row.text(3),
                extension: row.text(4), size: row.int(5), createdAt: row.int(6))
        }.first
    }

    func mediaMessages(_ id: String) throws -> [Int64] {
        try db.query("SELECT message_id FROM media_refs WHERE media_id = ?", [.text(id)]) { $0.int(0) }
    }

    func insertMedia(_ file: MediaFile) throws {
        try db.run(
            "INSERT INTO media (id, uploader, name, mime_type, extension, size, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                .text(file.id), .text(file.uploader), .text(file.name), .text(file.mimeType), .text(file.extension),
                .int(file.size), .int(file.createdAt),
            ])
    }

    func addMediaReference(_ id: String, messageId: Int64) throws {
        try db.run(
            "INSERT OR IGNORE INTO media_refs (media_id, message_id) VALUES (?, ?)", [.text(id), .int(messageId)])
    }
}
