import Foundation
import PerchHTTP
import PerchSQLite
import PerchService
import PerchTestSupport
import PerchYAML
import Testing

@Suite struct OpenAPITests {
    /// Every route the server registers is in docs/openapi.yaml, with its path parameters.
    @Test func theDocumentCoversEveryRoute() async throws {
        let text = try String(contentsOfFile: repositoryRoot + "/docs/openapi.yaml", encoding: .utf8)
        let loaded = YAMLLoader().load(text, file: "docs/openapi.yaml")
        #expect(loaded.findings.isEmpty, "\(loaded.findings)")
        let root = try #require(loaded.root)
        let paths = try #require(root["paths"])
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("perch-openapi-\(UUID().uuidString)")
            .path
        let store = try SQLiteChatStore(path: path)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let api = PerchAPI(service: ChatService(store: store), apiKey: "k")
        var documented = 0
        for route in api.routeList {
            let operation = paths[route.path]?[route.method.lowercased()]
            #expect(operation != nil, "\(route.method) \(route.path) is not in docs/openapi.yaml")
            guard let operation else { continue }
            documented += 1
            let names = route.path.split(separator: "/").filter { $0.hasPrefix("{") }.map {
                String($0.dropFirst().dropLast())
            }
            var declared: [String] = []
            if case .sequence(let parameters)? = operation["parameters"]?.content {
                declared = parameters.filter { $0["in"]?.scalar == "path" }.compactMap { $0["name"]?.scalar }
            }
            #expect(declared.sorted() == names.sorted(), "\(route.method) \(route.path): path parameters")
        }
        #expect(documented == api.routeList.count)
        await store.close()
    }
}
