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

    /// An upload is attached only by someone who may read it: a message never opens a file to its
    /// readers that its uploader did not show them. The url may be relative or absolute.
    @Test func anUploadCannotBeOpenedToOthersByAttachingIt() async throws {
        try await withHTTPChat { http in
            let uploaded = try await http.call(
                "POST", "/v3/media?name=secret.txt", as: .user("carol"), body: Data("secret".utf8),
                headers: ["Content-Type": "text/plain"])
            let url = try #require(uploaded.data["url"] as? String)
            #expect(try await http.sendImage(uploaded.data, to: "other", as: "carol").status == 200)
            #expect(try await http.call("GET", url, as: .user("bob")).status == 403)
            // bob (not in `other`) attaches it in `room`, relatively and absolutely: refused, and the
            // file stays closed to him.
            for link in [url, http.base + url, "HTTPS://elsewhere.example" + url] {
                let refused = try await Self.attach(link, as: "bob", http)
                #expect(refused.status == 403 && refused.errorCode == "ERR_MESSAGE_NO_ACCESS", "\(link)")
            }
            #expect(try await http.call("GET", url, as: .user("bob")).status == 403)
            // alice, who reads `other`, may share it in `room`; then bob reads it, and the message
            // carries the upload's one url.
            let shared = try await Self.attach(http.base + url, as: "alice", http)
            #expect(shared.status == 200)
            #expect((shared.data["attachments"] as? [[String: Any]])?.first?["url"] as? String == url)
            #expect(try await http.call("GET", url, as: .user("bob")).status == 200)
        }
    }

    /// Outside the uploads, an attachment is an http or https address: nothing a browser would run
    /// or render inline, no credentials in the address.
    @Test func anAttachmentElsewhereIsAnHTTPAddress() async throws {
        try await withHTTPChat { http in
            for link in [
                "javascript:alert(1)", "data:text/html,<b>x</b>", "file:///etc/passwd", "ftp://files.example/a",
                "/web/app.js", "https://chat.example@evil.example/a", "https://files.example/a b", "vbscript:x",
                "//evil.example/a", "https:///nohost",
            ] {
                let refused = try await Self.attach(link, as: "carol", http)
                #expect(refused.status == 400 && refused.errorField == "attachments[0].url", "\(link)")
            }
            #expect(try await Self.attach("https://files.example/a.txt?x=1", as: "carol", http).status == 200)
        }
    }

    /// Sends a file message to `room` as `uid` with one attachment at `link`.
    static func attach(_ link: String, as uid: String, _ http: HTTPChat) async throws -> HTTPChat.Answer {
        let attachment: [String: Any] = [
            "name": "s", "size": 6, "mimeType": "text/plain", "extension": "txt", "url": link,
        ]
        let body: [String: Any] = [
            "receiver": "room", "receiverType": "group", "type": "file", "data": ["attachments": [attachment]],
        ]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        return try await http.call("POST", "/v3/messages", as: .user(uid), json: json)
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
            // An upload that does not exist is told as one the sender may not read: ids cannot be probed.
            #expect(forged.status == 403 && forged.errorCode == "ERR_MESSAGE_NO_ACCESS")
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
