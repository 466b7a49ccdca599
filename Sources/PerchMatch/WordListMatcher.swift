import CHyperscan
import Glibc
import PerchLock

/// Many word lists matched in one pass: every word of every list is compiled into one Hyperscan
/// database, so a message costs one scan whatever the number of lists and words (5,000 words
/// measured at a few microseconds a message; see BENCHMARKS.md).
///
/// Words match whole and ignoring case (`\bword\b`; the word boundaries are ASCII ones, as Hyperscan
/// has no `\b` under Unicode properties). A compiled database is immutable; each scan needs its own
/// scratch space, kept in a pool, which is why the class may be `@unchecked Sendable`.
public final class WordListMatcher: @unchecked Sendable {
    private let database: OpaquePointer?
    private let prototype: OpaquePointer?
    private let scratches = Lock<[Scratch]>([])
    public let listCount: Int

    /// A word list that could not be compiled.
    public struct CompileError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Compiles `lists`; the matcher reports hits by list index.
    public init(lists: [[String]]) throws(CompileError) {
        listCount = lists.count
        var patterns: [String] = []
        var ids: [UInt32] = []
        for (index, list) in lists.enumerated() {
            for word in list {
                let trimmed = word.trimmingSpacesAndNewlines
                guard !trimmed.isEmpty else { continue }
                patterns.append("\\b" + Self.escape(trimmed) + "\\b")
                ids.append(UInt32(index))
            }
        }
        guard !patterns.isEmpty else {
            database = nil
            prototype = nil
            return
        }
        let flags = [UInt32](
            repeating: UInt32(HS_FLAG_CASELESS | HS_FLAG_SINGLEMATCH | HS_FLAG_UTF8),
            count: patterns.count)
        var compiled: OpaquePointer?
        var failure: UnsafeMutablePointer<hs_compile_error_t>?
        let cStrings = patterns.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
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
        var scratch: OpaquePointer?
        guard hs_alloc_scratch(compiled, &scratch) == HS_SUCCESS, let scratch else {
            hs_free_database(compiled)
            throw CompileError(description: "cannot allocate Hyperscan scratch space")
        }
        database = compiled
        prototype = scratch
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
        let hits = HitBox()
        var copy = text
        copy.withUTF8 { bytes in
            _ = hs_scan(
                database, bytes.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                UInt32(bytes.count), 0, held.pointer,
                { id, _, _, _, context in
                    Unmanaged<HitBox>.fromOpaque(context!).takeUnretainedValue().ids.insert(Int(id))
                    return 0
                }, Unmanaged.passUnretained(hits).toOpaque())
        }
        return hits.ids
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

/// Scratch space for one scan at a time; it moves between threads only through the pool's lock.
private struct Scratch: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// Collects hits inside one scan's callback.
private final class HitBox {
    var ids: Set<Int> = []
}

extension String {
    var trimmingSpacesAndNewlines: String {
        String(
            unicodeScalars.drop { $0.properties.isWhitespace }.reversed().drop { $0.properties.isWhitespace }.reversed()
                .map(Character.init))
    }
}
