import Glibc

/// Files and directories of the data directory: readable by their owner only (it holds every
/// conversation), and on the disk when the call returns.
public enum PrivateFile {
    /// A failed file call: the path, the call and the system's reason.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let path: String
        public let operation: String
        public let code: Int32

        public init(path: String, operation: String, code: Int32) {
            self.path = path
            self.operation = operation
            self.code = code
        }

        public var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
    }

    /// Creates `path` (which must not exist) with mode 0600 holding `bytes`, and flushes the file
    /// and its directory entry to the disk. The directory is made (0700) when missing. On failure
    /// nothing is left at `path`.
    public static func write(_ bytes: [UInt8], to path: String) throws(Failure) {
        let directory = parent(of: path)
        try makeDirectory(directory)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(path: path, operation: "create", code: errno) }
        var failure: Failure?
        var written = 0
        while failure == nil, written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0, errno != EINTR { failure = Failure(path: path, operation: "write", code: errno) }
            if count > 0 { written += count }
        }
        if failure == nil, fsync(fd) != 0 { failure = Failure(path: path, operation: "fsync", code: errno) }
        if close(fd) != 0, failure == nil { failure = Failure(path: path, operation: "close", code: errno) }
        if failure == nil { failure = sync(directory: directory) }
        if let failure {
            unlink(path)
            throw failure
        }
    }

    /// Makes `path` and any missing parents, each new one with mode 0700 and flushed into its
    /// parent; an existing directory is left as it is.
    public static func makeDirectory(_ path: String) throws(Failure) {
        var isDirectory = stat()
        if stat(path, &isDirectory) == 0, isDirectory.st_mode & S_IFMT == S_IFDIR { return }
        let up = parent(of: path)
        if up != path { try makeDirectory(up) }
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
            throw Failure(path: path, operation: "mkdir", code: errno)
        }
        if let failure = sync(directory: up) { throw failure }
    }

    /// Flushes a directory's entries (a file created or renamed in it) to the disk.
    public static func sync(directory: String) -> Failure? {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return Failure(path: directory, operation: "open", code: errno) }
        defer { close(fd) }
        return fsync(fd) == 0 ? nil : Failure(path: directory, operation: "fsync", code: errno)
    }

    /// The directory holding `path` ("." for a bare name, "/" for a top-level one).
    static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.last == "/" { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }
}
