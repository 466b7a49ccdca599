import Foundation
import PerchHTTP
import PerchLock
import PerchTestSupport
import Testing

@Suite struct MediaTests {
    @Test func uploadSendAndDownloadOnlyWhereTheMessageIsVisible() async throws {
        try await withHTTPChat { http in
            let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 100))
            let uploaded = try await http.call(
                "POST", "/v3/media?name=..%2F..%2Fetc%2Fholiday.PNG", as: .user("carol"), body: png,
                headers: ["Content-Type": "image/png"])
            #expect(uploaded.status == 200)
            #expect(uploaded.data["name"] as? String == "holiday.PNG")
            #expect(uploaded.data["extension"] as? String == "png")
            #expect(uploaded.data["size"] as? Int == png.count)
            let url = try #require(uploaded.data["url"] as? String)
            #expect(url.hasPrefix("/v3/media/") && !url.contains(".."))
            // Nothing of the user's name reached the filesystem.
            let stored = try FileManager.default.contentsOfDirectory(atPath: http.chat.directory + "/media")
            #expect(stored == [String(url.dropFirst("/v3/media/".count))])
            // Readable by the host's user only, like the database.
            #expect(fileMode(http.chat.directory + "/media") == 0o700)
            #expect(fileMode(http.chat.directory + "/media/" + stored[0]) == 0o600)

            // Sent to `other`, where bob is not a member.
            let sent = try await http.sendImage(uploaded.data, to: "other", as: "carol")
            #expect(sent.status == 200)
            let forAlice = try await http.call("GET", url, as: .user("alice"))
            #expect(forAlice.status == 200 && forAlice.body == png)
            #expect(try await http.call("GET", url, as: .user("carol")).body == png)
            let forBob = try await http.call("GET", url, as: .user("bob"))
            #expect(forBob.status == 403 && forBob.errorCode == "ERR_MESSAGE_NO_ACCESS")
            #expect(
                try await http.call("GET", "/v3/media/" + String(repeating: "a", count: 64), as: .user("bob")).status
                    == 403)
        }
    }

    @Test func aFileThatCannotBeWrittenIsUnavailableWhenTheDiskIsFullElseAnInternalError() async throws {
        try await withHTTPChat { http in
            let service = http.chat.service
            let full = service.wireSafeError(PrivateFile.Failure(path: "/x", operation: "write", code: ENOSPC))
            #expect(full.code == .serviceUnavailable)
            #expect(full.params["reason"] == "storage_full" && full.params["retryAfter"] == .int(30))
            let quota = service.wireSafeError(PrivateFile.Failure(path: "/x", operation: "write", code: EDQUOT))
            #expect(quota.code == .serviceUnavailable)
            let denied = service.wireSafeError(PrivateFile.Failure(path: "/x", operation: "create", code: EACCES))
            #expect(denied.code == .internalError && denied.params["id"] != nil)
        }
    }

    @Test func uploadsAreCheckedAndUnknownMediaCannotBeAttached() async throws {
        try await withHTTPChat { http in
            let wrongType = try await http.call(
                "POST", "/v3/media?name=x.exe", as: .user("carol"), body: Data([1, 2, 3]),
                headers: ["Content-Type": "application/x-msdownload"])
            #expect(wrongType.status == 415 && wrongType.errorField == "Content-Type")
            let tooLarge = try await http.call(
                "POST", "/v3/media?name=big.txt", as: .user("carol"), body: Data(count: 40 * 1024),
                headers: ["Content-Type": "text/plain"])
            #expect(tooLarge.status == 413, "\(String(decoding: tooLarge.body, as: UTF8.self))")
            let empty = try await http.call(
                "POST", "/v3/media", as: .user("carol"), body: Data(), headers: ["Content-Type": "text/plain"])
            #expect(empty.status == 400 && empty.errorField == "body")
            let forged = try await http.call(
                "POST", "/v3/messages", as: .user("carol"),
                json: """
                    {"receiver": "room", "receiverType": "group", "type": "file", "data": {"attachments": [
                    {"name": "a", "size": 1, "mimeType": "text/plain", "extension": "txt", "url": "/v3/media/\(String(repeating: "b", count: 64))"}]}}
                    """)
            #expect(forged.status == 400 && forged.errorCode == "ERR_INVALID_MESSAGE_DATA")
            #expect(try await http.call("GET", "/v3/media/../../config.yaml", as: .user("carol")).status != 200)
        }
    }

    @Test func displayNamesAndExtensionsAreSanitised() {
        #expect(PerchAPIShim.displayName("../../etc/passwd") == "passwd")
        #expect(PerchAPIShim.displayName("a\u{0}b\nc.txt") == "abc.txt")
        #expect(PerchAPIShim.displayName("..") == "file")
        #expect(PerchAPIShim.fileExtension("photo.JPEG") == "jpeg")
        #expect(PerchAPIShim.fileExtension("archive.tar.gz;rm") == "")
        #expect(PerchAPIShim.fileExtension(".hidden") == "")
    }
}
