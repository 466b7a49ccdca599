import Foundation

/// The repository's root directory (the shipped config.yaml, bots/, docs/, contrib/, examples/).
public let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

/// The external plugins the tests start (misbehaving, wedged, signal-handling ones).
public let pluginFixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
    "Fixtures"
).path

/// The permission bits of the file at `path`; nil when it is not there.
public func fileMode(_ path: String) -> mode_t? {
    var status = stat()
    return stat(path, &status) == 0 ? status.st_mode & 0o777 : nil
}

/// The calling thread's name as the system shows it.
public func currentThreadName() -> String {
    let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    return name.trimmingCharacters(in: .whitespacesAndNewlines)
}
