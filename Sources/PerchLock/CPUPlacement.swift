import CSched

#if canImport(Glibc)
    import Glibc
#endif

/// Where a latency-bound thread runs: off the CPUs that take the disk's interrupts.
///
/// When the disk holding the database completes a write (the checkpoints' flushes), the kernel
/// finishes it on the CPU its interrupt is routed to, in interrupt context: that CPU's running
/// thread stops meanwhile. A thread that answers a round trip in tens of microseconds feels it in
/// its slowest round trips. Servers built for latency keep their busy threads and the device
/// interrupts apart (Seastar's
/// `perftune.py` moves the interrupts; that needs root, so this moves the thread).
public enum CPUPlacement {
    /// The CPUs the calling thread may run on, in increasing order (empty when unknown).
    public static func allowedCPUs() -> [Int] {
        var cpus = [Int32](repeating: 0, count: 1024)
        let count = perch_thread_cpus(&cpus, Int32(cpus.count))
        return count > 0 ? cpus.prefix(Int(count)).map(Int.init) : []
    }

    /// Lets the calling thread run on `cpus` only; false when the kernel refused (a CPU out of
    /// range, or none of them allowed to this process).
    @discardableResult
    public static func pinCurrentThread(to cpus: [Int]) -> Bool {
        let values = cpus.map { Int32(clamping: $0) }
        return perch_pin_thread(values, Int32(values.count)) == 0
    }

    /// The calling thread's allowed CPUs without those that take the interrupts of the disk holding
    /// `path`; nil when there is nothing to choose: the disk or its interrupts are unknown (a virtual
    /// device such as an LVM volume, an overlay file system, no `/sys`), or they go to none or to
    /// all of those CPUs.
    public static func awayFromStorageInterrupts(of path: String) -> [Int]? {
        guard let busy = storageInterruptCPUs(of: path) else { return nil }
        return away(from: busy, allowed: allowedCPUs())
    }

    /// `allowed` without `busy`; nil when that removes nothing or leaves nothing.
    static func away(from busy: Set<Int>, allowed: [Int]) -> [Int]? {
        let free = allowed.filter { !busy.contains($0) }
        return free.isEmpty || free.count == allowed.count ? nil : free
    }

    /// The CPUs the interrupts of the disk holding `path` are routed to (their effective affinity),
    /// counting the interrupts that carry at least 1% of the device's (not its rare configuration
    /// interrupt); nil when the device or its interrupts cannot be found.
    static func storageInterruptCPUs(of path: String) -> Set<Int>? {
        var info = stat()
        guard stat(path, &info) == 0, let device = sysfsDevice(of: UInt64(info.st_dev)),
            let interrupts = read("/proc/interrupts")
        else { return nil }
        let irqs = deviceInterrupts(under: device)
        let counts = interruptCounts(interrupts).filter { irqs.contains($0.key) }
        let total = counts.values.reduce(0, +)
        guard total > 0 else { return nil }
        var cpus: Set<Int> = []
        for (irq, count) in counts where count * 100 >= total {
            guard let list = read("/proc/irq/\(irq)/effective_affinity_list") else { return nil }
            cpus.formUnion(cpuList(list))
        }
        return cpus
    }

    /// The device directory under `/sys/devices` of block device `dev` (a partition's is inside its
    /// disk's).
    static func sysfsDevice(of dev: UInt64) -> String? {
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & ~0xfff)
        let minor = (dev & 0xff) | ((dev >> 12) & ~0xff)
        guard major != 0, let resolved = realpath("/sys/dev/block/\(major):\(minor)", nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The interrupts of the first device at or above `directory` (and below `root`) that has any:
    /// its MSI interrupts (`msi_irqs`), or its one legacy interrupt (`irq`).
    static func deviceInterrupts(under directory: String, root: String = "/sys/devices/") -> Set<Int> {
        var directory = directory
        while directory.hasPrefix(root) {
            if let names = entries(of: directory + "/msi_irqs"), !names.isEmpty {
                return Set(names.compactMap { Int($0) })
            }
            if let text = read(directory + "/irq"), let irq = Int(firstWord(text)), irq > 0 {
                return [irq]
            }
            guard let slash = directory.lastIndex(of: "/") else { break }
            directory = String(directory[..<slash])
        }
        return []
    }

    /// Each numbered interrupt's count over all CPUs, from `/proc/interrupts`.
    static func interruptCounts(_ text: String) -> [Int: Int] {
        var counts: [Int: Int] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let label = fields.first, label.hasSuffix(":"), let irq = Int(label.dropLast()) else { continue }
            counts[irq] = fields.dropFirst().prefix { Int($0) != nil }.reduce(0) { $0 + Int($1)! }
        }
        return counts
    }

    /// The CPUs of a kernel CPU list such as `0-3,8,10-11`.
    static func cpuList(_ text: String) -> Set<Int> {
        var cpus: Set<Int> = []
        for part in firstWord(text).split(separator: ",") {
            let bounds = part.split(separator: "-").compactMap { Int($0) }
            if bounds.count == 1 {
                cpus.insert(bounds[0])
            } else if bounds.count == 2, bounds[0] <= bounds[1] {
                cpus.formUnion(bounds[0]...bounds[1])
            }
        }
        return cpus
    }

    /// A sysfs value without its newline.
    private static func firstWord(_ text: String) -> Substring {
        text.split(whereSeparator: \.isWhitespace).first ?? ""
    }

    private static func read(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func entries(of directory: String) -> [String]? {
        guard let handle = opendir(directory) else { return nil }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }
}
