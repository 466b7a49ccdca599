import Foundation
import PerchChat

/// The checks of config.yaml's `matrix:` (for `backend: matrix`), and of what the other backend's
/// keys mean there.
extension ConfigValidator {
    mutating func validateMatrix() {
        let matrix = config.matrix
        guard config.backend == .matrix else {
            if locations.contains("matrix") {
                error(
                    "matrix", "`matrix` is read with `backend: matrix` only; this host runs the embedded backend",
                    severity: .warning)
            }
            return
        }
        if matrix.homeserver.isEmpty {
            error(
                locations.contains("matrix") ? "matrix" : "backend",
                "backend: matrix needs matrix.homeserver, the client-server API's base URL (http://127.0.0.1:8008)")
        } else if Self.homeserverProblem(matrix.homeserver) != nil {
            error("matrix.homeserver", Self.homeserverProblem(matrix.homeserver)!)
        }
        if matrix.rooms.isEmpty, !refused.covers("matrix.rooms") {
            error(
                locations.contains("matrix") ? "matrix" : "backend",
                "backend: matrix needs matrix.rooms: the group ids the bot files use, each with its room's id or alias")
        }
        var rooms: [String: String] = [:]
        for guid in matrix.rooms.keys.sorted(by: {
            locations.location(of: "matrix.rooms.\($0)") < locations.location(of: "matrix.rooms.\($1)")
        }) {
            let room = matrix.rooms[guid]!
            let path = "matrix.rooms.\(guid)"
            if !User.isValidUID(guid) {
                error(path, "'\(guid)' is not a valid group id (1–100 of A–Z, a–z, 0–9, _, -)")
            }
            if !MatrixConfiguration.isRoomReference(room) {
                error(path, "'\(room)' is not a room id (!id) or alias (#name:server)")
            } else if let first = rooms[room] {
                error(
                    path,
                    "room '\(room)' is already mapped as '\(first)' (\(locations.location(of: "matrix.rooms.\(first)")))"
                )
            } else {
                rooms[room] = guid
            }
        }
        for uid in matrix.accounts.keys.sorted() {
            let path = "matrix.accounts.\(uid)"
            if matrix.accounts[uid]!.isEmpty {
                error(path, "the access token is empty (is its environment variable set?)")
            }
        }
        range("matrix.followDigestSeconds", matrix.followDigestSeconds, 1...86_400)
        range("matrix.syncTimeoutSeconds", matrix.syncTimeoutSeconds, 1...300)
        if locations.contains("seed") {
            error(
                "seed",
                "`seed` creates people and groups on the embedded backend; on Matrix the rooms and their "
                    + "members are the homeserver's, and this is ignored", severity: .warning)
        }
    }

    /// What is wrong with a homeserver URL, if anything: it must be `http` or `https` with a host.
    static func homeserverProblem(_ text: String) -> String? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = url.host, !host.isEmpty
        else { return "'\(text)' is not an http or https URL like http://127.0.0.1:8008" }
        if url.query != nil || url.fragment != nil { return "the homeserver's URL takes no query or fragment" }
        return nil
    }
}
