import PerchYAML

/// A coding key built by the configuration decoder: a mapping key or a list index.
struct PathKey: CodingKey, Hashable {
    var stringValue: String
    var intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}

/// Renders a coding path the way the findings name it: `rules[2].do[1].pin`.
public func renderKeyPath(_ path: [any CodingKey]) -> String {
    var text = ""
    for key in path {
        if let index = key.intValue {
            text += "[\(index)]"
        } else {
            if !text.isEmpty { text += "." }
            text += key.stringValue
        }
    }
    return text
}

/// The key paths whose values decoding refused: they hold defaults, not what the file says, so the
/// validators say nothing more about them, or about anything under them (`user.uid` when `user`
/// was not a mapping).
struct RefusedPaths: Sendable {
    private let paths: Set<String>

    /// The paths of `decoding`'s errors. An error without a path (the YAML loader's, outside every
    /// decoded value) refuses nothing: it would otherwise cover the whole file and silence every
    /// other check.
    init(_ decoding: [Finding]) {
        paths = Set(decoding.lazy.filter { $0.severity == .error && !$0.path.isEmpty }.map(\.path))
    }

    /// Whether `path` is one of them or lies under one.
    func covers(_ path: String) -> Bool {
        guard !paths.isEmpty else { return false }
        if paths.contains(path) { return true }
        var end = path.endIndex
        while let cut = path[..<end].lastIndex(where: { $0 == "." || $0 == "[" }) {
            if paths.contains(String(path[..<cut])) { return true }
            end = cut
        }
        return false
    }
}

/// The Damerau-free Levenshtein distance, for "did you mean" suggestions.
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a.unicodeScalars)
    let b = Array(b.unicodeScalars)
    guard !a.isEmpty else { return b.count }
    guard !b.isEmpty else { return a.count }
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        current[0] = i
        for j in 1...b.count {
            let cost = a[i - 1] == b[j - 1] ? 0 : 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
        }
        swap(&previous, &current)
    }
    return previous[b.count]
}

/// The closest candidate within edit distance 2 (3 for words of 12 letters and more), ignoring
/// case and `_`/`-`, or nil.
func suggestion(for word: String, among candidates: some Sequence<String>) -> String? {
    func fold(_ text: String) -> String {
        String(text.lowercased().unicodeScalars.filter { $0 != "_" && $0 != "-" })
    }
    let folded = fold(word)
    var best: (String, Int)?
    for candidate in candidates {
        let distance = min(editDistance(word, candidate), editDistance(folded, fold(candidate)))
        if distance <= max(2, word.count / 4),
            best == nil || distance < best!.1 || (distance == best!.1 && candidate < best!.0)
        {
            best = (candidate, distance)
        }
    }
    return best?.0
}
