// peers-v1 for Perch: writes the result JSON of `bench/peers-v1` to `--out`, so
// `launch.py` runs it and `aggregate.py` puts it in the peers' table.
//
//   PerchPeersBench [--n 10000] [--out FILE] [--variant NAME] [--phases burst,closed]
//                   [--loopback PATH_TO_PERCH [--transport http|websocket]]
//                   [--config bench/peers-v1/perch/config.yaml]
import Foundation
import PerchHost

let startedAt = monotonicNanoseconds()
Allocator.tuneForHost()  // as `perch` does at start
let spawnedAt = ProcessInfo.processInfo.environment["BENCH_SPAWN_NS"].flatMap(UInt64.init) ?? startedAt
var options = Options()
var configPath = "bench/peers-v1/perch/config.yaml"
var loopback: String?
var transport = LoopbackTransport.http
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst() {
    guard let value = arguments.popFirst() else {
        FileHandle.standardError.write(Data("PerchPeersBench: \(flag) needs a value\n".utf8))
        exit(64)
    }
    switch flag {
    case "--n": options.count = Int(value) ?? options.count
    case "--out": options.out = value
    case "--variant": options.variant = value
    case "--grace": options.grace = Double(value) ?? options.grace
    case "--idle": options.idle = Double(value) ?? options.idle
    case "--timeout": options.timeout = Double(value) ?? options.timeout
    case "--phases": options.phases = value.split(separator: ",").map(String.init)
    case "--config": configPath = value
    case "--loopback": loopback = value
    case "--transport":
        guard let chosen = LoopbackTransport(rawValue: value) else {
            FileHandle.standardError.write(Data("PerchPeersBench: --transport is http or websocket\n".utf8))
            exit(64)
        }
        transport = chosen
    default:
        FileHandle.standardError.write(Data("PerchPeersBench: unknown option \(flag)\n".utf8))
        exit(64)
    }
}
do {
    let result: [String: Any]
    if let loopback {
        result = try await runLoopback(options, perch: loopback, configPath: configPath, transport: transport)
    } else {
        result = try await runInProcess(options, configPath: configPath, spawnedAt: spawnedAt)
    }
    let variant =
        options.variant != "default"
        ? options.variant : (loopback == nil ? "default" : transport == .http ? "http-loopback" : "websocket-loopback")
    let final = finish(result, options: options, variant: variant)
    if options.out == "-" {
        try writeResult(final, to: "/dev/stdout")
    } else {
        try writeResult(final, to: options.out)
    }
    if final["valid"] as? Bool != true { FileHandle.standardError.write(Data("BENCH INVALID: see the result\n".utf8)) }
    exit(0)
} catch {
    FileHandle.standardError.write(Data("PerchPeersBench: \(error)\n".utf8))
    exit(1)
}
