import CHyperscan
import Glibc
import PerchLock

/// Many word lists matched in one pass: every word of every list is compiled into one Hyperscan
/// database, so a message costs one scan whatever the number of lists and words.
///
/// Words match whole and ignoring case: an occurrence counts unless it splits a word of the text,
/// that is unless a word character (ASCII letter, digit or `_`) of its first or last character
/// continues outside it. So `spam` is not in `antispam`, and `c++` and `-x-` are found beside
/// spaces and punctuation (where `\bc\+\+\b` never matches a lone `c++`).
///
/// The words are compiled as they are, each match reporting its start, and the edges are checked
/// on the text's bytes at each match: a database of `\bword\b` patterns took about nine times as
/// long to compile and five times the memory (4,000 words: 9.2 s and 104 MB against 1.1 s and
/// 21 MB), which is what 200 bots took to start. A compiled database is immutable; each scan needs
/// its own scratch space, kept in a pool, which is why the class may be `@unchecked Sendable`.
public final class WordListMatcher: @unchecked Sendable {
    private let database: OpaquePointer?
    private let prototype: OpaquePointer?
    private let scratches = Lock<[Scratch]>([])
    /// The list of each compiled word, by the word's id. Each word has its own id: Hyperscan reports
    /// one start per id and end, the leftmost, so two words of one list ending together (`a!` and
    /// `!`) would hide the shorter one's match.
    private let listOfWord: [Int]
    public let listCount: Int

    /// A word list that could not be compiled.
    public struct CompileError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Whether the database came from the cache file rather than a compile.
    public let loadedFromCache: Bool

    /// Compiles `lists`; the matcher reports hits by list index.
    ///
    /// `cacheDirectory`: where the compiled database is kept between starts (`words.hsdb`). A start
    /// or reload with the same words (and the same Hyperscan) reads it instead of compiling, which
    /// is most of a start with large lists; a file that does not hold exactly these words, or that
    /// Hyperscan cannot read, is compiled over. Failing to write it is not an error.
    public init(lists: [[String]], cacheDirectory: String? = nil) throws(CompileError) {
        listCount = lists.count
        var patterns: [String] = []
        var owners: [Int] = []
        for (index, list) in lists.enumerated() {
            for word in list {
                let trimmed = word.trimmingSpacesAndNewlines
                guard !trimmed.isEmpty else { continue }
                patterns.append(Self.escape(trimmed))
                owners.append(index)
            }
        }
        listOfWord = owners
        guard !patterns.isEmpty else {
            database = nil
            prototype = nil
            loadedFromCache = false
            return
        }
        let flag = UInt32(HS_FLAG_CASELESS | HS_FLAG_UTF8 | HS_FLAG_SOM_LEFTMOST)
        let cache = cacheDirectory.map { DatabaseCache(directory: $0, key: Self.cacheKey(patterns, flag: flag)) }
        let compiled: OpaquePointer
        if let cached = cache?.load() {
            compiled = cached
            loadedFromCache = true
        } else {
            compiled = try Self.compile(patterns, flag: flag)
            cache?.store(compiled)
            loadedFromCache = false
        }
        var scratch: OpaquePointer?
        guard hs_alloc_scratch(compiled, &scratch) == HS_SUCCESS, let scratch else {
            hs_free_database(compiled)
            throw CompileError(description: "cannot allocate Hyperscan scratch space")
        }
        database = compiled
        prototype = scratch
    }

    private static func compile(_ patterns: [String], flag: UInt32) throws(CompileError) -> OpaquePointer {
        let flags = [UInt32](repeating: flag, count: patterns.count)
        var compiled: OpaquePointer?
        var failure: UnsafeMutablePointer<hs_compile_error_t>?
        let cStrings = patterns.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        let ids = (0..<UInt32(patterns.count)).map { $0 }
        let result = cStrings.map { UnsafePointer($0) }.withUnsafeBufferPointer { expressions in
            hs_compile_multi(
                expressions.baseAddress, flags, ids, UInt32(patterns.count), UInt32(HS_MODE_BLOCK), nil,
                &compiled, &failure)
        }
        guard result == HS_SUCCESS, let compiled else {
            let message = failure.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "error \(result)"
            if let failure { hs_free_compile_error(failure) }
            throw CompileError(description: "cannot compile the word lists: \(message)")
        }
        return compiled
    }

    /// What a cached database must have been compiled from: the Hyperscan version, the flags and
    /// mode, and every pattern in id order.
    static func cacheKey(_ patterns: [String], flag: UInt32) -> [UInt8] {
        var key = Array("\(String(cString: hs_version()))\n\(flag) \(HS_MODE_BLOCK)\n".utf8)
        for pattern in patterns {
            key += pattern.utf8
            key.append(0)
        }
        return key
    }

    deinit {
        scratches.withLock { pool in pool.forEach { hs_free_scratch($0.pointer) } }
        if let prototype { hs_free_scratch(prototype) }
        if let database { hs_free_database(database) }
    }

    /// The indexes of the lists with at least one word in `text`.
    public func matchingLists(in text: String) -> Set<Int> {
        guard let database, let prototype, !text.isEmpty else { return [] }
        var scratch = scratches.withLock { $0.popLast() }
        if scratch == nil {
            var clone: OpaquePointer?
            guard hs_clone_scratch(prototype, &clone) == HS_SUCCESS, let clone else { return [] }
            scratch = Scratch(pointer: clone)
        }
        let held = scratch!
        defer { scratches.withLock { $0.append(held) } }
        var copy = text
        return copy.withUTF8 { bytes in
            let hits = HitBox(text: bytes, lists: listCount, listOfWord: listOfWord)
            _ = hs_scan(
                database, bytes.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                UInt32(bytes.count), 0, held.pointer,
                { id, from, to, _, context in
                    let hits = Unmanaged<HitBox>.fromOpaque(context!).takeUnretainedValue()
                    guard hits.isWhole(from: Int(from), to: Int(to)) else { return 0 }
                    hits.ids.insert(hits.listOfWord[Int(id)])
                    // Every list is hit: the rest of the text cannot change the answer.
                    return hits.ids.count == hits.lists ? 1 : 0
                }, Unmanaged.passUnretained(hits).toOpaque())
            return hits.ids
        }
    }

    /// Escapes a word for use as a literal inside a Hyperscan (PCRE-syntax) pattern.
    static func escape(_ word: String) -> String {
        var output = ""
        for scalar in word.unicodeScalars {
            if "\\^$.|?*+()[]{}/-".unicodeScalars.contains(scalar) {
                output += "\\"
                output.unicodeScalars.append(scalar)
            } else if scalar.value < 0x20 {
                let hex = String(scalar.value, radix: 16)
                output += "\\x" + (hex.count == 1 ? "0" : "") + hex
            } else {
                output.unicodeScalars.append(scalar)
            }
        }
        return output
    }
}

/// The compiled database kept in a file between starts: a header, the key it was compiled from (its
/// length first), a checksum of the database, then Hyperscan's serialized database. Only a file
/// whose key is exactly this one and whose database matches its checksum is read (Hyperscan itself
/// reads a database with damaged bytes), so a changed word, flag or Hyperscan version, or a damaged
/// file, compiles again; the file is replaced whole (written beside it, then renamed), so a crash
/// leaves the old one or the new one.
struct DatabaseCache {
    let path: String
    let key: [UInt8]

    static let magic = Array("perch-words-hs 1\n".utf8)

    init(directory: String, key: [UInt8]) {
        path = directory + "/words.hsdb"
        self.key = key
    }

    /// The cached database, or nil when there is none for this key (or it cannot be read).
    func load() -> OpaquePointer? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count > 0 { bytes += chunk[..<count] }
            if count < chunk.count { break }
        }
        let header = Self.magic.count + 8
        guard bytes.count > header, bytes.starts(with: Self.magic) else { return nil }
        let length = Self.number(bytes[Self.magic.count..<header])
        let body = header + key.count + 8
        guard length == UInt64(key.count), bytes.count > body, bytes[header..<header + key.count].elementsEqual(key),
            Self.number(bytes[(body - 8)..<body]) == Self.checksum(bytes[body...])
        else { return nil }
        var database: OpaquePointer?
        let status = bytes[body...].withUnsafeBytes { serialized in
            hs_deserialize_database(
                serialized.baseAddress?.assumingMemoryBound(to: CChar.self), serialized.count, &database)
        }
        guard status == HS_SUCCESS, let database else { return nil }
        return database
    }

    /// Writes `database` for this key; a failure only means the next start compiles.
    func store(_ database: OpaquePointer) {
        var serialized: UnsafeMutablePointer<CChar>?
        var size = 0
        guard hs_serialize_database(database, &serialized, &size) == HS_SUCCESS, let serialized else { return }
        defer { free(serialized) }
        let body = UnsafeRawBufferPointer(start: serialized, count: size)
        let header = Self.magic + Self.bytes(of: UInt64(key.count))
        let check = Self.bytes(of: Self.checksum(body))
        let temporary = path + ".\(getpid()).tmp"
        guard let file = fopen(temporary, "wb") else { return }
        let written =
            fwrite(header, 1, header.count, file) == header.count && fwrite(key, 1, key.count, file) == key.count
            && fwrite(check, 1, check.count, file) == check.count && fwrite(serialized, 1, size, file) == size
        guard fclose(file) == 0, written, rename(temporary, path) == 0 else {
            unlink(temporary)
            return
        }
    }
}

extension DatabaseCache {
    /// FNV-1a, 64 bits: finds damaged bytes (the file is the host's own, like its database).
    static func checksum<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt64 {
        bytes.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
    }

    /// `value` as 8 bytes, least significant first.
    static func bytes(of value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    /// 8 bytes, least significant first, as a number.
    static func number(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// Scratch space for one scan at a time; it moves between threads only through the pool's lock.
private struct Scratch: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// Collects hits inside one scan's callback.
private final class HitBox {
    var ids: Set<Int> = []
    let text: UnsafeBufferPointer<UInt8>
    let lists: Int
    let listOfWord: [Int]

    init(text: UnsafeBufferPointer<UInt8>, lists: Int, listOfWord: [Int]) {
        self.text = text
        self.lists = lists
        self.listOfWord = listOfWord
    }

    /// Whether the match `from..<to` splits no word of the text: a word byte at its edge has no word
    /// byte beside it outside. Every byte of a non-ASCII character is a non-word byte.
    func isWhole(from: Int, to: Int) -> Bool {
        guard from < to, to <= text.count else { return false }
        let startSplits = Self.isWord(text[from]) && from > 0 && Self.isWord(text[from - 1])
        let endSplits = Self.isWord(text[to - 1]) && to < text.count && Self.isWord(text[to])
        return !startSplits && !endSplits
    }

    static func isWord(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }
}

extension String {
    var trimmingSpacesAndNewlines: String {
        String(
            unicodeScalars.drop { $0.properties.isWhitespace }.reversed().drop { $0.properties.isWhitespace }.reversed()
                .map(Character.init))
    }
}
