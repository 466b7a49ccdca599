import PerchYAML
import Testing

@Suite struct YAMLLoaderTests {
    func load(_ text: String, environment: [String: String] = [:]) -> YAMLLoader.Result {
        YAMLLoader(environment: environment).load(text, file: "t.yaml")
    }

    @Test func everyNodeCarriesItsLineAndColumn() throws {
        let root = try #require(load("a: 1\nlist:\n  - x\n  - { k: v }\n").root)
        #expect(root.location == SourceLocation(file: "t.yaml", line: 1, column: 1))
        #expect(root["a"]?.location.column == 4)
        let list = try #require(root["list"])
        guard case .sequence(let items) = list.content else { Issue.record("not a list"); return }
        #expect(items[0].location == SourceLocation(file: "t.yaml", line: 3, column: 5))
        #expect(items[1]["k"]?.location == SourceLocation(file: "t.yaml", line: 4, column: 10))
    }

    @Test func aliasesCopyTheirAnchor() throws {
        let root = try #require(load("base: &b {x: 1}\nother: *b\n").root)
        #expect(root["other"]?["x"]?.scalar == "1")
    }

    @Test func mergeKeysApplyWithExplicitKeysWinning() throws {
        let text = "a: &a {x: 1, y: 2}\nb: &b {y: 3, z: 4}\nc:\n  <<: [*a, *b]\n  x: 9\n"
        let root = try #require(load(text).root)
        let c = try #require(root["c"])
        #expect(c["x"]?.scalar == "9")
        #expect(c["y"]?.scalar == "2")
        #expect(c["z"]?.scalar == "4")
        #expect(c["<<"] == nil)
    }

    @Test func substitutesVariablesWithDefaultsAndEscapes() throws {
        let text = "a: ${HOST}:${PORT:-8080}\nb: \"$${HOST}\"\nc: ${EMPTY:-fallback}\nd: ${EMPTY}\n"
        let result = load(text, environment: ["HOST": "example", "EMPTY": ""])
        #expect(result.findings.isEmpty)
        let root = try #require(result.root)
        #expect(root["a"]?.scalar == "example:8080")
        #expect(root["b"]?.scalar == "${HOST}")
        #expect(root["c"]?.scalar == "fallback")
        #expect(root["d"]?.scalar == "")
    }

    @Test func keysAreNotSubstituted() throws {
        let root = try #require(load("${A}: 1\n", environment: ["A": "x"]).root)
        #expect(root["${A}"]?.scalar == "1")
    }

    @Test func reportsEveryUnsetVariable() {
        let result = load("a: ${ONE}\nb: ${TWO}\n")
        #expect(
            result.findings.map(\.description) == [
                "t.yaml:1:4: error: environment variable 'ONE' is not set (write ${ONE:-default} to give a default)",
                "t.yaml:2:4: error: environment variable 'TWO' is not set (write ${TWO:-default} to give a default)",
            ])
    }

    @Test func refusesDeepNesting() {
        let text = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        let result = load(text)
        #expect(result.root == nil)
        #expect(result.findings.first?.message == "nesting is deeper than 128 levels")
    }

    @Test func refusesAliasBombs() {
        var text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1..<8 {
            let previous = "*a\(level - 1)"
            text += "a\(level): &a\(level) [\(Array(repeating: previous, count: 10).joined(separator: ", "))]\n"
        }
        let result = load(text)
        #expect(result.root == nil)
        #expect(result.findings.first?.message == "aliases expand to more than 100000 nodes")
    }

    @Test func anEmptyFileIsNull() throws {
        let root = try #require(load("").root)
        #expect(root.isNull)
    }

    @Test func coreSchemaResolution() {
        #expect(YAMLScalar.bool("yes") == nil)
        #expect(YAMLScalar.bool("True") == true)
        #expect(YAMLScalar.integer("0x1F") == 31)
        #expect(YAMLScalar.integer("-12") == -12)
        #expect(YAMLScalar.integer("1.5") == nil)
        #expect(YAMLScalar.double("1.5") == 1.5)
        #expect(YAMLScalar.double("abc") == nil)
    }

    @Test func nulBytesAndInvalidUTF8DoNotCrash() {
        let result = YAMLLoader().load([0x61, 0x3A, 0x20, 0x00, 0xFF, 0xFE], file: "t.yaml")
        #expect(result.root == nil)
        #expect(!result.findings.isEmpty)
    }
}
