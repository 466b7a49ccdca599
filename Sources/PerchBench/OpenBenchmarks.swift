import Foundation
import PerchChat
import PerchSQLite
import PerchService

/// Opening a large database whose pages are not in the kernel's page cache (a host starting after
/// a reboot): the check at open after a crash, with and without reading the file ahead first, and
/// the open after a clean close, which skips the check. The cache is emptied for the file with
/// `posix_fadvise(DONTNEED)`, which needs no privilege. Then the copy `perch backup` makes of it.
func benchmarkOpen() async throws {
    let count = environmentInt("PERCH_BENCH_OPEN_MESSAGES", default: 300_000)
    let chat = try BenchChat()
    let service = chat.service
    _ = try await service.createUser(uid: "a", name: "A")
    _ = try await service.createUser(uid: "b", name: "B")
    _ = try await service.createGroup(guid: "g", name: "G", owner: "a")
    _ = try await service.addMembers(to: "g", [("b", .participant)], by: "a")
    try await fill(service, count: count, draft: { MessageDraft(to: .group("g"), text: "message \($0)") }, as: "a")
    await chat.store.close()
    let path = chat.store.path
    let bytes = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0

    /// `afterCrash`: without the record of a clean close (the last store did not close), so the
    /// open checks every page.
    func open(readAhead: Bool, cold: Bool, afterCrash: Bool = true) async throws -> Double {
        if afterCrash { unlink(path + "-closed") }
        if cold { evictFromPageCache(path) }
        let started = DispatchTime.now().uptimeNanoseconds
        let store = try SQLiteChatStore(path: path, readAhead: readAhead)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        await store.close()
        return seconds
    }
    // Alternating, twice each: the disk's speed varies from one minute to the next here.
    var without: [Double] = []
    var with: [Double] = []
    for _ in 0..<2 {
        without.append(try await open(readAhead: false, cold: true))
        with.append(try await open(readAhead: true, cold: true))
    }
    let warm = try await open(readAhead: true, cold: false)
    // The last open closed cleanly: the next skips the check.
    let clean = try await open(readAhead: true, cold: true, afterCrash: false)
    // `perch backup`'s database copy (VACUUM INTO, its check, its fsync), pages in the cache.
    let backupStarted = DispatchTime.now().uptimeNanoseconds
    let copied = try SQLiteChatStore.copy(path: path, to: chat.directory + "/backup.sqlite")
    let backup = Double(DispatchTime.now().uptimeNanoseconds - backupStarted) / 1e9
    report(
        "open",
        [
            "messages": count, "database_mib": (Double(bytes) / 1_048_576).rounded(),
            "cold_open_s": with.min()!.rounded3, "cold_open_without_read_ahead_s": without.min()!.rounded3,
            "warm_open_s": warm.rounded3, "ratio_without_over_with": (without.min()! / with.min()!).rounded3,
            "cold_open_after_clean_close_s": clean.rounded3, "backup_s": backup.rounded3,
            "backup_mib": (Double(copied.bytes) / 1_048_576).rounded(),
        ])
    try? FileManager.default.removeItem(atPath: chat.directory)
}

/// Drops the file's pages (and its log's) from the kernel's page cache, once they are on disk.
func evictFromPageCache(_ path: String) {
    for file in [path, path + "-wal"] {
        let descriptor = Glibc.open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { continue }
        fdatasync(descriptor)
        _ = posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED)
        Glibc.close(descriptor)
    }
}
