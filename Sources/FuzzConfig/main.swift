import PerchConfig

// libFuzzer entry point: the input is both a config.yaml and a bot file. Build and run with
// `make fuzz` (swift build --product FuzzConfig --sanitize=fuzzer --sanitize=address).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfiguration(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let loader = ConfigurationLoader(environment: ["HOME": "/root", "PERCH_API_KEY": "0123456789abcdef"])
    let loaded = loader.load(config: bytes, bots: [("fuzz.yaml", bytes)])
    for finding in loaded.findings {
        precondition(finding.location.line >= 1 && finding.location.column >= 1, "a finding without a position")
    }
    return 0
}
