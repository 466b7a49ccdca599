import Testing

@testable import PerchCLI

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct FileDescriptorLimitTests {
    @Test func theSoftLimitIsRaisedToTheHardOne() {
        let raised = FileDescriptorLimit.raise()
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        #expect(limit.rlim_cur == limit.rlim_max)
        #expect(raised == Int(clamping: limit.rlim_cur))
    }

    @Test func aLimitTooLowForTheStreamsIsNamedWithWhatToChange() {
        #expect(FileDescriptorLimit.shortfall(connections: 1_064, limit: 65_536) == nil)
        let message = FileDescriptorLimit.shortfall(connections: 1_064, limit: 1_024)
        #expect(message?.contains("is 1024") == true)
        #expect(message?.contains("needs about 1320") == true)
        #expect(message?.contains("server.maxStreams") == true)
    }
}
