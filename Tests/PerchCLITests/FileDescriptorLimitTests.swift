import PerchTestSupport
import Testing

@testable import PerchCLI

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct FileDescriptorLimitTests {
    @Test func theSoftLimitIsRaisedToTheHardOne() {
        var before = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &before) == 0)
        // Not lowered first to watch it rise: the other tests run in this process meanwhile. Where
        // the soft limit starts below the hard one (a default Debian shell: 1,024), this raises it.
        let raised = FileDescriptorLimit.raise()
        var after = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &after) == 0)
        #expect(raised == Int(clamping: after.rlim_cur))
        #expect(after.rlim_cur == min(before.rlim_max, 1 << 20) || after.rlim_cur == before.rlim_max)
        #expect(after.rlim_cur >= before.rlim_cur)
    }

    @Test func aLimitTooLowForTheStreamsIsNamedWithWhatToChange() {
        #expect(FileDescriptorLimit.shortfall(connections: 1_064, limit: 65_536) == nil)
        let message = FileDescriptorLimit.shortfall(connections: 1_064, limit: 1_024)
        #expect(message?.contains("is 1024") == true)
        #expect(message?.contains("needs about 1320") == true)
        #expect(message?.contains("server.maxStreams") == true)
    }
}
