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

/// The budget of a match: catastrophic backtracking is cut, ordinary patterns on the longest
/// message never are.
@Suite struct PatternBudgetTests {
    /// A run of `a`s and one `b`: `^(a+)+$` tries every way of splitting the run before it fails.
    static let adversarial = String(repeating: "a", count: 40) + "b"

    @Test(arguments: ["^(a+)+$", "^(a|aa)+$", "^(a|a?)+$", "^(\\w+\\s?)*$"])
    func catastrophicBacktrackingIsCutAndSaidSo(source: String) throws {
        let pattern = try Pattern(source)
        guard case .overBudget = pattern.search(Self.adversarial + "!") else {
            Issue.record("\(source) was not cut")
            return
        }
        #expect(pattern.firstMatch(in: Self.adversarial + "!") == nil)
    }

    @Test func aLargerBudgetLetsTheSameSearchFinish() throws {
        let pattern = try Pattern("^(a|aa)+$", matchLimit: 100_000_000)
        guard case .noMatch = pattern.search(String(repeating: "a", count: 24) + "b") else {
            Issue.record("the search did not finish")
            return
        }
    }

    @Test(arguments: [
        "^!ping (\\d+)$", "\\b(spam|scam|phish)\\b", "(?i)free\\s+money", ".*@bot.*", "^(?<cmd>\\w+)(?: (?<rest>.*))?$",
        "(\\w+)\\s+\\1",
    ])
    func ordinaryPatternsOnTheLongestMessageStayWithinTheBudget(source: String) throws {
        // The service's longest text by default: 16 KiB of words.
        let words = ["alpha", "beta", "gamma", "delta", "ping", "money", "spammy", "e-mail", "42"]
        var text = ""
        var index = 0
        while text.utf8.count < 16_000 {
            text += words[index % words.count] + (index % 7 == 0 ? "\n" : " ")
            index += 1
        }
        let pattern = try Pattern(source)
        if case .overBudget = pattern.search(text) { Issue.record("\(source) ran out of its budget") }
    }
}
