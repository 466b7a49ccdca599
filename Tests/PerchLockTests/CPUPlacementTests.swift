import Foundation
import PerchHost
import PerchTestSupport
import Testing

@testable import PerchLock

/// Keeping a latency-bound thread off the CPUs that take the disk's interrupts: reading the kernel's
/// lists, choosing the CPUs, and pinning a thread (the host's executor's) to them.
@Suite struct CPUPlacementTests {
    @Test func kernelCPUListsAreRead() {
        #expect(CPUPlacement.cpuList("0-1\n") == [0, 1])
        #expect(CPUPlacement.cpuList("0,2-3,8") == [0, 2, 3, 8])
        #expect(CPUPlacement.cpuList("5") == [5])
        #expect(CPUPlacement.cpuList("\n").isEmpty)
        #expect(CPUPlacement.cpuList("3-1").isEmpty)
    }

    @Test func interruptCountsAreSummedOverTheCPUsAndNamedLinesSkipped() {
        let text = """
                       CPU0       CPU1
              35:          0          1 PCI-MSIX-0000:00:02.0   0-edge      virtio1-config
              36:         12     739267 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
              38:          0      12708 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
             NMI:          0          0   Non-maskable interrupts
             LOC:    2051520    2242210   Local timer interrupts
            """
        #expect(CPUPlacement.interruptCounts(text) == [35: 1, 36: 739_279, 38: 12_708])
    }

    @Test func theCPUsLeftAreThoseTheInterruptsDoNotGoTo() {
        #expect(CPUPlacement.away(from: [1], allowed: [0, 1]) == [0])
        #expect(CPUPlacement.away(from: [0, 3], allowed: [0, 1, 2, 3]) == [1, 2])
        // Nothing to avoid, or nothing left: the thread is not pinned.
        #expect(CPUPlacement.away(from: [], allowed: [0, 1]) == nil)
        #expect(CPUPlacement.away(from: [7], allowed: [0, 1]) == nil)
        #expect(CPUPlacement.away(from: [0, 1], allowed: [0, 1]) == nil)
        #expect(CPUPlacement.away(from: [0], allowed: [0]) == nil)
    }

    @Test func aDisksInterruptsAreThoseOfTheFirstDeviceAboveItThatHasAny() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("perch-sysfs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let devices = root.path + "/devices/"
        let pci = devices + "pci0000:00/0000:00:02.0"
        let disk = pci + "/virtio1/block/vda"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: pci + "/msi_irqs", withIntermediateDirectories: true)
        for irq in ["35", "36"] {
            _ = FileManager.default.createFile(atPath: pci + "/msi_irqs/" + irq, contents: Data())
        }
        // A legacy interrupt above the MSI device is not reached.
        _ = FileManager.default.createFile(atPath: devices + "pci0000:00/irq", contents: Data("9\n".utf8))
        #expect(CPUPlacement.deviceInterrupts(under: disk, root: devices) == [35, 36])

        let legacy = devices + "platform/ahci/host0/sda"
        try FileManager.default.createDirectory(atPath: legacy, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: devices + "platform/ahci/irq", contents: Data("19\n".utf8))
        #expect(CPUPlacement.deviceInterrupts(under: legacy, root: devices) == [19])

        // A virtual device has none.
        let virtual = devices + "virtual/block/zram0"
        try FileManager.default.createDirectory(atPath: virtual, withIntermediateDirectories: true)
        #expect(CPUPlacement.deviceInterrupts(under: virtual, root: devices).isEmpty)
    }

    @Test func aPinnedThreadRunsOnItsCPUsOnly() async throws {
        let allowed = CPUPlacement.allowedCPUs()
        try #require(!allowed.isEmpty)
        let target = try #require(allowed.last)
        let seen = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let refused = !CPUPlacement.pinCurrentThread(to: [1 << 20])
                let untouched = CPUPlacement.allowedCPUs()
                let pinned = CPUPlacement.pinCurrentThread(to: [target])
                continuation.resume(returning: (refused, untouched, pinned, CPUPlacement.allowedCPUs()))
            }
        }
        #expect(seen.0, "a CPU out of range is refused")
        #expect(seen.1 == allowed)
        #expect(seen.2)
        #expect(seen.3 == [target])
        // The caller's own thread is not touched.
        #expect(CPUPlacement.allowedCPUs() == allowed)
    }

    @Test func theHostsExecutorRunsOnTheCPUsItIsGiven() async throws {
        let target = try #require(CPUPlacement.allowedCPUs().first)
        let executor = HostExecutor(name: "perch-host-test", cpus: [target])
        defer { executor.stop() }
        let cpus = await Task(executorPreference: executor) { CPUPlacement.allowedCPUs() }.value
        #expect(cpus == [target])
    }

    @Test func theCPUsAwayFromThisMachinesDiskAreSomeOfTheAllowedOnes() throws {
        let allowed = CPUPlacement.allowedCPUs()
        // Whatever this machine's disk and interrupts are: nothing, or some but not all of them.
        if let chosen = CPUPlacement.awayFromStorageInterrupts(of: FileManager.default.temporaryDirectory.path) {
            #expect(!chosen.isEmpty)
            #expect(chosen.count < allowed.count)
            #expect(Set(chosen).isSubset(of: allowed))
        }
    }
}
