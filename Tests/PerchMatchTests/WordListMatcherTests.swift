import Foundation
import PerchMatch
import PerchTesting
import Testing

/// Word lists (`contains_words`): whole words, ignoring case. An occurrence counts unless it splits a
/// word of the text (a word character, an ASCII letter, digit or `_`, at its edge continues outside).
@Suite struct WordListMatcherTests {
    @Test func wordsMatchWholeAndIgnoringCase() throws {
        let matcher = try WordListMatcher(lists: [["spam"], ["bad word", "-x-"], ["école", "c++"]])
        #expect(matcher.listCount == 3)
        #expect(matcher.matchingLists(in: "SPAM!") == [0])
        #expect(matcher.matchingLists(in: "spammer, antispam, spam_bot, spam2") == [])
        // The first occurrence is inside a word, the second stands alone.
        #expect(matcher.matchingLists(in: "antispam then spam") == [0])
        #expect(matcher.matchingLists(in: "a Bad Word here") == [1])
        #expect(matcher.matchingLists(in: "a bad wordy thing") == [])
        // A word that starts or ends with punctuation is found beside anything on that side (where
        // `\bc\+\+\b` would never find a lone "c++").
        #expect(matcher.matchingLists(in: "a -x- b") == [1])
        #expect(matcher.matchingLists(in: "a-x-b") == [1])
        #expect(matcher.matchingLists(in: "I write C++.") == [2])
        #expect(matcher.matchingLists(in: "c++") == [2])
        #expect(matcher.matchingLists(in: "xc++") == [])
        // Non-ASCII letters fold case; beside them is no ASCII word.
        #expect(matcher.matchingLists(in: "L'ÉCOLE est là") == [2])
        #expect(matcher.matchingLists(in: "éspam") == [0])
        #expect(matcher.matchingLists(in: "spamé and écolex") == [0])
        // Every list at once.
        #expect(matcher.matchingLists(in: "spam, a bad word and c++") == [0, 1, 2])
        #expect(matcher.matchingLists(in: "") == [])
        #expect(try WordListMatcher(lists: [[" ", ""]]).matchingLists(in: "anything") == [])
    }

    /// The compiled lists are kept in the data directory: a start with the same words reads them
    /// back and matches the same; other words, or a file that is damaged or from other words, are
    /// compiled again (and the file replaced), never read as they are.
    @Test func theCompiledListsAreCachedAndOnlyReadBackForTheSameWords() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("perch-hs-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lists = [["spam", "bad word"], ["c++", "école"]]
        let texts = ["SPAM!", "a bad word", "I write C++.", "L'ÉCOLE", "antispam", "nothing here"]
        let fresh = try WordListMatcher(lists: lists, cacheDirectory: directory)
        #expect(!fresh.loadedFromCache)
        let file = directory + "/words.hsdb"
        #expect(FileManager.default.fileExists(atPath: file))
        let cached = try WordListMatcher(lists: lists, cacheDirectory: directory)
        #expect(cached.loadedFromCache)
        #expect(texts.map(cached.matchingLists) == texts.map(fresh.matchingLists))
        #expect(cached.matchingLists(in: "spam and c++") == [0, 1])
        // One word more: compiled again, and the file now holds the new words.
        let changed = try WordListMatcher(
            lists: [["spam", "bad word"], ["c++", "école", "here"]], cacheDirectory: directory)
        #expect(!changed.loadedFromCache)
        #expect(changed.matchingLists(in: "nothing here") == [1])
        let again = try WordListMatcher(lists: lists, cacheDirectory: directory)
        #expect(!again.loadedFromCache)
        #expect(again.matchingLists(in: "nothing here") == [])
        // A damaged file (cut short, or its database overwritten) is compiled over, not read.
        let whole = try Data(contentsOf: URL(fileURLWithPath: file))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: file))
        let afterCut = try WordListMatcher(lists: lists, cacheDirectory: directory)
        #expect(!afterCut.loadedFromCache)
        #expect(texts.map(afterCut.matchingLists) == texts.map(fresh.matchingLists))
        var scrambled = try Data(contentsOf: URL(fileURLWithPath: file))
        for index in stride(from: scrambled.count - 64, to: scrambled.count, by: 1) { scrambled[index] ^= 0x5A }
        try scrambled.write(to: URL(fileURLWithPath: file))
        let afterScramble = try WordListMatcher(lists: lists, cacheDirectory: directory)
        #expect(!afterScramble.loadedFromCache)
        #expect(try WordListMatcher(lists: lists, cacheDirectory: directory).loadedFromCache)
        #expect(texts.map(afterScramble.matchingLists) == texts.map(fresh.matchingLists))
        // A directory that cannot be written is not an error: every start compiles.
        let missing = try WordListMatcher(lists: lists, cacheDirectory: directory + "/absent/deeper")
        #expect(!missing.loadedFromCache)
        #expect(missing.matchingLists(in: "SPAM!") == [0])
    }

    /// Random texts and words against the definition: a list is hit when one of its words occurs,
    /// ignoring ASCII case, and no word byte at the occurrence's edge has a word byte beside it.
    @Test func randomTextsAgreeWithTheDefinition() throws {
        var generator = SplitMix(seed: 8)
        let alphabet = Array("abAB_1 -.!é".unicodeScalars).map(String.init)
        func random(_ length: Int) -> String {
            (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }.joined()
        }
        for round in 0..<100 {
            let lists = (0..<3).map { _ in (0..<3).map { _ in random(1 + Int(generator.next() % 3)) } }
            let matcher = try WordListMatcher(lists: lists)
            for _ in 0..<20 {
                let text = random(Int(generator.next() % 16))
                let expected = Set(
                    lists.indices.filter { index in
                        lists[index].contains { word in Self.occursWhole(word, in: text) }
                    })
                #expect(matcher.matchingLists(in: text) == expected, "round \(round): \(lists) in \(text)")
            }
        }
    }

    static func occursWhole(_ word: String, in text: String) -> Bool {
        func lowered(_ bytes: some Sequence<UInt8>) -> [UInt8] {
            bytes.map { (65...90).contains($0) ? $0 + 32 : $0 }
        }
        func isWord(_ byte: UInt8?) -> Bool {
            guard let byte else { return false }
            return (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 95
        }
        let needle = lowered(word.trimmingCharacters(in: " ").utf8)
        let haystack = lowered(text.utf8)
        guard !needle.isEmpty, needle.count <= haystack.count else { return false }
        for start in 0...(haystack.count - needle.count) where Array(haystack[start..<start + needle.count]) == needle {
            let end = start + needle.count
            let before = start > 0 ? haystack[start - 1] : nil
            let after = end < haystack.count ? haystack[end] : nil
            if !(isWord(needle.first) && isWord(before)), !(isWord(needle.last) && isWord(after)) { return true }
        }
        return false
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}
