import CSched
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
        let fd = try createNew(path)
        try finish(fd, path: path, in: directory, after: writeAll(fd, bytes[...], path: path))
    }

    /// Creates `path` empty with mode 0600 unless something is there (`EEXIST`, left as it is). For
    /// files another library fills, such as SQLite, which takes an empty file as a new database.
    public static func createEmpty(_ path: String) throws(Failure) {
        close(try createNew(path))
    }

    /// `path` made new with mode 0600, open for writing.
    private static func createNew(_ path: String) throws(Failure) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(path: path, operation: "create", code: errno) }
        return fd
    }

    /// Copies the file at `source` to `path` (which must not exist) as ``write(_:to:)`` writes,
    /// a megabyte at a time. On failure nothing is left at `path`.
    public static func copy(_ source: String, to path: String) throws(Failure) {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw Failure(path: source, operation: "open", code: errno) }
        defer { close(input) }
        let directory = parent(of: path)
        try makeDirectory(directory)
        let output = try createNew(path)
        var failure: Failure?
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        copying: while failure == nil {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno != EINTR { failure = Failure(path: source, operation: "read", code: errno) }
                continue
            }
            if count == 0 { break copying }
            failure = writeAll(output, buffer[..<count], path: path)
        }
        try finish(output, path: path, in: directory, after: failure)
    }

    /// Flushes and closes a new file `fd` at `path` (unless writing it failed), then flushes its
    /// entry in `directory`; on any failure the file is taken away and the first failure thrown.
    private static func finish(_ fd: Int32, path: String, in directory: String, after written: Failure?)
        throws(Failure)
    {
        var failure = written
        if failure == nil, fsync(fd) != 0 { failure = Failure(path: path, operation: "fsync", code: errno) }
        if close(fd) != 0, failure == nil { failure = Failure(path: path, operation: "close", code: errno) }
        if failure == nil { failure = sync(directory: directory) }
        if let failure {
            unlink(path)
            throw failure
        }
    }

    /// Writes every byte of `bytes` to `fd`, retrying short writes and interruptions.
    private static func writeAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>, path: String) -> Failure? {
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno != EINTR { return Failure(path: path, operation: "write", code: errno) }
                continue
            }
            written += count
        }
        return nil
    }

    /// Makes `path` and any missing parents, each new one with mode 0700 and flushed into its
    /// parent; an existing directory is left as it is. Anything else at `path` or a parent (a file,
    /// a socket) is refused as `ENOTDIR`, named by its own path.
    public static func makeDirectory(_ path: String) throws(Failure) {
        if try isDirectory(path) { return }
        let up = parent(of: path)
        if up != path { try makeDirectory(up) }
        guard mkdir(path, 0o700) == 0 else {
            // Another process may have made it since the look above; anything else stands in the way.
            if errno == EEXIST, try isDirectory(path) { return }
            throw Failure(path: path, operation: "mkdir", code: errno == EEXIST ? ENOTDIR : errno)
        }
        if let failure = sync(directory: up) { throw failure }
    }

    /// Whether a directory is at `path` (false when nothing is; `ENOTDIR` when something else is).
    private static func isDirectory(_ path: String) throws(Failure) -> Bool {
        var status = stat()
        guard stat(path, &status) == 0 else { return false }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw Failure(path: path, operation: "mkdir", code: ENOTDIR)
        }
        return true
    }

    /// Renames `source` to `path` unless something is at `path` (never replaced, not even an empty
    /// directory), and flushes the directory holding `path`.
    public static func rename(_ source: String, to path: String) throws(Failure) {
        guard perch_rename_no_replace(source, path) == 0 else {
            throw Failure(path: path, operation: "rename", code: errno)
        }
        if let failure = sync(directory: parent(of: path)) { throw failure }
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
