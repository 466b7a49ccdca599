/// One problem found in a source file, printed the way compilers print theirs.
///
/// `path` is the key path inside the document (`rules[2].do[1].pin`), empty when the problem is
/// in the YAML syntax itself.
public struct Finding: Sendable, Hashable, CustomStringConvertible {
    public enum Severity: String, Sendable, Hashable, Codable {
        case error
        case warning
    }

    public var location: SourceLocation
    public var severity: Severity
    public var path: String
    public var message: String

    public init(location: SourceLocation, severity: Severity = .error, path: String = "", message: String) {
        self.location = location
        self.severity = severity
        self.path = path
        self.message = message
    }

    /// `file:line:column: error: path: message`.
    public var description: String {
        let subject = path.isEmpty ? "" : "\(path): "
        return "\(location): \(severity.rawValue): \(subject)\(message)"
    }
}
