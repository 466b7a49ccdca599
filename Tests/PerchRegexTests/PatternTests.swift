import PerchRegex
import Testing

/// ``Pattern``: PCRE2 with UTF-8 and Unicode properties, named captures, and its own compile errors.
@Suite struct PatternTests {
    @Test func namedCapturesComeOutByName() throws {
        let pattern = try Pattern("^!ping (?<count>\\d+)(?: (?<rest>.*))?$")
        let match = try #require(pattern.firstMatch(in: "!ping 42 and more"))
        #expect(match.text == "!ping 42 and more")
        #expect(match.named == ["count": "42", "rest": "and more"])
        #expect(pattern.captureNames.values.sorted() == ["count", "rest"])
    }

    @Test func anUnsetGroupIsAbsentNotEmpty() throws {
        let match = try #require(try Pattern("^(?<a>x)?(?<b>y)$").firstMatch(in: "y"))
        #expect(match.named == ["b": "y"])
        #expect(match.groups[1] == nil)
    }

    @Test func rangesAreUTF8ByteOffsetsAndCapturesKeepWholeCharacters() throws {
        let match = try #require(try Pattern("(?<word>\\w+)$").firstMatch(in: "héllo wörld"))
        #expect(match.named["word"] == "wörld")
        #expect(match.groups[0] == 7..<13)
    }

    @Test func caseInsensitiveMatchingFoldsUnicodeCase() throws {
        #expect(try Pattern("ÉCOLE", caseInsensitive: true).matches("une école"))
        #expect(try !Pattern("ÉCOLE").matches("une école"))
    }

    @Test func noMatchIsNil() throws {
        #expect(try Pattern("^\\d+$").firstMatch(in: "12a") == nil)
    }

    @Test func aBrokenPatternSaysWhatAndWhere() {
        #expect {
            _ = try Pattern("ab(c")
        } throws: { error in
            guard let error = error as? Pattern.CompileError else { return false }
            return error.message.contains("missing closing parenthesis") && error.offset == 4
        }
    }
}
