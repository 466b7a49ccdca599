import Foundation
import PerchChat
import PerchLock
import PerchService

/// The web chat: static files from the repository's `web/` folder, its settings, and the
/// development sign-in. The browser never sees the API key: it signs in as a seeded person (when
/// `server.devSignIn` allows) and gets that person's auth token.
public struct WebSettings: Sendable {
    /// The folder holding index.html and its assets; nil serves no web chat.
    public var directory: String?
    /// `server.devSignIn`.
    public var devSignIn: Bool
    /// The seeded people one may sign in as (not the bots).
    public var people: [String]
    /// The JSON the web chat reads at start and again now and then: the gate and hide flags, the
    /// copy, the reply type, the limits, the running bots. A reload replaces it
    /// (``replaceSettings(_:)``), so an open page hears it without a restart, as the bots do.
    public var settingsJSON: String { box.withLock { $0 } }
    private let box: Lock<String>

    public init(directory: String?, devSignIn: Bool, people: [String], settingsJSON: String) {
        self.directory = directory
        self.devSignIn = devSignIn
        self.people = people
        box = Lock(settingsJSON)
    }

    /// What a reload changed of the web chat's settings.
    public func replaceSettings(_ json: String) { box.withLock { $0 = json } }

    static let types = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "ico": "image/x-icon",
    ]

    /// The web chat's files are the page's only code: scripts, styles and requests from this origin
    /// alone (nothing inline, so a message's text that slipped into the page as markup could not
    /// run), downloads shown from `blob:` URLs, and the page never framed by another site
    /// (clickjacking) or naming itself in a `Referer`.
    static let pageHeaders = [
        (
            "Content-Security-Policy",
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
                + "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        ),
        ("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer"), ("X-Content-Type-Options", "nosniff"),
    ]
}

extension PerchAPI {
    static func webRoutes() -> [Route] {
        [
            route("GET", "", name: "web.index", authenticated: false) { api, _ in
                try api.webFile("index.html")
            },
            route("GET", "web/{file}", name: "web.file", authenticated: false) { api, request in
                try api.webFile(request.parameter("file"))
            },
            route("GET", "v3/web/settings", name: "web.settings", authenticated: false) { api, _ in
                guard let web = api.web, web.directory != nil else { throw HTTPRefusal.notServed }
                var people: [String] = []
                if web.devSignIn {
                    for uid in web.people {
                        if let user = try? await api.service.user(uid) { people.append(APIJSON.encode(user)) }
                    }
                }
                return .json(
                    200,
                    APIJSON.data(
                        #"{"devSignIn":\#(web.devSignIn),"people":[\#(people.joined(separator: ","))],"#
                            + #""ui":\#(web.settingsJSON)}"#))
            },
            route("POST", "v3/web/sign-in", name: "web.signIn", authenticated: false) { api, request in
                var body = try request.body()
                let uid = try body.string("uid", required: true)!
                try body.finish()
                guard let web = api.web, web.devSignIn else {
                    throw ChatError(
                        .permissionDenied, ["reason": "development sign-in is off (server.devSignIn in config.yaml)"])
                }
                guard web.people.contains(uid) else { throw ChatError(.uidNotFound, ["uid": .string(uid)]) }
                let user = try await api.service.user(uid)
                let credentials = try await api.issueToken(for: uid)
                return .json(200, APIJSON.data(credentials.dropLast() + #","user":\#(APIJSON.encode(user))}"#))
            },
        ]
    }

    /// One file of the web folder; names are single path components with a known extension.
    func webFile(_ name: String) throws(HTTPRefusal) -> HTTPResponse {
        guard let directory = web?.directory else { throw HTTPRefusal.notServed }
        let type = WebSettings.types[(name as NSString).pathExtension.lowercased()]
        guard let type, !name.hasPrefix("."), !name.contains("/"),
            let bytes = FileManager.default.contents(atPath: directory + "/" + name)
        else { throw HTTPRefusal.notServed }
        return HTTPResponse(
            status: 200,
            headers: [("Content-Type", type), ("Cache-Control", "no-cache")] + WebSettings.pageHeaders,
            body: Array(bytes))
    }
}
