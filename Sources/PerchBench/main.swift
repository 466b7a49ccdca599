// Perch's benchmarks. `make bench` builds this in release mode and runs every scenario;
// `PerchBench <scenario>` runs one. Each prints one line of JSON per figure.
import Foundation
import PerchChat
import PerchSQLite
import PerchService

let scenarios: [String: () async throws -> Void] = [
    "pages": benchmarkPages,
    "inbox": benchmarkInbox,
    "words": benchmarkWords,
    "routing": benchmarkRouting,
    "send": benchmarkSend,
    "store-limit": benchmarkStoreLimit,
    "bots": benchmarkBots,
    "wakes": benchmarkWakes,
    "retention": benchmarkRetention,
    "open": benchmarkOpen,
    "encode": benchmarkEncode,
    "webhooks": benchmarkWebhooks,
    "plugins": benchmarkPlugins,
]
let requested = CommandLine.arguments.dropFirst().first
guard requested == nil || scenarios[requested!] != nil else {
    FileHandle.standardError.write(Data("usage: PerchBench [\(scenarios.keys.sorted().joined(separator: "|"))]\n".utf8))
    exit(64)
}
for name in scenarios.keys.sorted() where requested == nil || requested == name {
    try await scenarios[name]!()
}
