// swift-tools-version: 6.0
import PackageDescription

// The data flows config → chat service → event log → bots → actions → chat service; the targets
// follow it. Each C library has its own small system-library target, imported by one module only.
let package = Package(
    name: "Perch",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "perch", targets: ["perch"]),
        .library(name: "PerchChat", targets: ["PerchChat"]),
        .library(name: "PerchConfig", targets: ["PerchConfig"]),
        .library(name: "PerchHost", targets: ["PerchHost"]),
        .library(name: "PerchTesting", targets: ["PerchTesting"]),
        // The command line as a library, for a `perch` of one's own with one's own Swift plugins
        // (`Perch.main(registry:)`; examples/swift-plugin).
        .library(name: "PerchCLI", targets: ["PerchCLI"]),
        .executable(name: "FuzzConfig", targets: ["FuzzConfig"]),
    ],
    targets: [
        // C libraries from Debian's packages (scripts/setup installs them).
        .systemLibrary(name: "CMalloc", path: "Sources/CMalloc"),
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CPCRE2", pkgConfig: "libpcre2-8", providers: [.apt(["libpcre2-dev"])]),
        .systemLibrary(name: "CHyperscan", pkgConfig: "libhs", providers: [.apt(["libhyperscan-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        // YAML with positions, on libyaml's event API.
        .target(name: "PerchYAML", dependencies: ["CYAML"]),
        // Regular expressions on PCRE2 (JIT), with the pattern's own compile errors.
        .target(name: "PerchRegex", dependencies: ["CPCRE2"]),
        // Many word lists in one pass (Hyperscan), for moderation.
        .target(name: "PerchMatch", dependencies: ["CHyperscan", "PerchLock"]),
        // The pure chat core: types, rules, errors. No I/O, no clock.
        .target(name: "PerchChat"),
        // The calling thread's CPUs (C: glibc's `sched_setaffinity` needs `_GNU_SOURCE`), and other
        // system calls Swift's Glibc module does not declare or Swift may not make (a signal handler,
        // epoll and the listening socket of the HTTP server's gate).
        .target(name: "CSched"),
        // A value behind a pthread mutex (not Synchronization.Mutex: see its comment), thread names,
        // the executor whose jobs a thread of the owner's runs, where such a thread runs, and the
        // data directory's private files (0600, flushed to the disk).
        .target(name: "PerchLock", dependencies: ["CSched"]),
        // Configuration: config.yaml and bots/*.yaml decoded with located findings.
        .target(name: "PerchConfig", dependencies: ["PerchYAML", "PerchRegex", "PerchChat"]),
        // The chat service: rules applied over a store behind a protocol.
        .target(name: "PerchService", dependencies: ["PerchChat", "PerchLock"]),
        // SQLite's default VFS with each commit's log frames written in one call (C: SQLite's VFS API).
        .target(name: "CSQLiteVFS", dependencies: ["CSQLite"]),
        // The SQLite store.
        .target(
            name: "PerchSQLite", dependencies: ["PerchService", "PerchChat", "PerchLock", "CSQLite", "CSQLiteVFS"]),
        // The bot host: YAML bots on the listener events, plugins, the four behaviours.
        .target(
            name: "PerchHost",
            dependencies: [
                "CMalloc", "CCrypto", "PerchConfig", "PerchService", "PerchSQLite", "PerchChat", "PerchMatch",
                "PerchRegex", "PerchYAML", "PerchLock",
            ]
        ),
        // The host's HTTP client, libcurl's lanes: for plugins reached over HTTP, the Matrix backend
        // and the notification webhooks. Apart, so that a program embedding
        // the host without them does not load libcurl.
        .target(name: "PerchHTTPClient", dependencies: ["CCurl", "PerchHost", "PerchLock"]),
        // Example plugins, loaded and run by the tests (examples/plugins holds the Python one).
        .target(name: "PerchExamplePlugins", dependencies: ["PerchHost", "PerchChat", "PerchLock"]),
        // The HTTP API: CometChat-shaped REST and Server-Sent Events on libmicrohttpd.
        .target(
            name: "PerchHTTP",
            dependencies: [
                "CMicroHTTPD", "CCrypto", "CSched", "PerchService", "PerchChat", "PerchHost", "PerchConfig",
                "PerchLock",
            ]
        ),
        // The Matrix backend: the homeserver's rooms mirrored into the store, the bots' actions carried out there.
        .target(
            name: "PerchMatrix",
            dependencies: ["PerchHTTPClient", "PerchHost", "PerchService", "PerchConfig", "PerchChat", "PerchLock"]),
        // The test harness for plugin authors: a host in-process on a temporary directory.
        .target(
            name: "PerchTesting",
            dependencies: ["PerchHost", "PerchHTTPClient", "PerchConfig", "PerchService", "PerchChat"]),
        // The commands, thin: each builds a frontend, runs it, turns failure into an exit code.
        .target(
            name: "PerchCLI",
            dependencies: [
                "CSched", "PerchConfig", "PerchService", "PerchSQLite", "PerchHost", "PerchHTTP", "PerchHTTPClient",
                "PerchLock", "PerchMatrix",
            ]),
        .executableTarget(name: "perch", dependencies: ["PerchCLI", "PerchHost"]),
        // libFuzzer entry point for the configuration loader (build with --sanitize=fuzzer).
        .executableTarget(name: "FuzzConfig", dependencies: ["PerchConfig"]),

        // The benchmarks (`make bench`).
        .executableTarget(
            name: "PerchBench",
            dependencies: [
                "PerchService", "PerchSQLite", "PerchChat", "PerchMatch", "PerchRegex", "PerchHost", "PerchConfig",
                "PerchLock", "PerchHTTP", "PerchHTTPClient",
            ]),
        // peers-v1 against errbot, opsdroid and maubot (`make bench`; bench/peers-v1).
        .executableTarget(
            name: "PerchPeersBench",
            dependencies: [
                "PerchHost", "PerchConfig", "PerchService", "PerchChat", "PerchLock", "PerchHTTP", "CCrypto",
            ]),
        // The child process of the store's crash test.
        .executableTarget(name: "PerchStoreProbe", dependencies: ["PerchService", "PerchSQLite", "PerchChat"]),

        // The tests: one target per library module, each reading its module's own behaviour, and the
        // fixtures they share (a host's config and bot files, an HTTP client, a chat service on a
        // temporary database, the external plugins the tests start).
        .target(
            name: "PerchTestSupport",
            dependencies: [
                "PerchHost", "PerchHTTP", "PerchTesting", "PerchService", "PerchSQLite", "PerchChat", "PerchLock",
            ],
            path: "Tests/PerchTestSupport", exclude: ["Fixtures"]),
        .testTarget(name: "PerchYAMLTests", dependencies: ["PerchYAML"]),
        .testTarget(name: "PerchRegexTests", dependencies: ["PerchRegex"]),
        .testTarget(name: "PerchMatchTests", dependencies: ["PerchMatch", "PerchTesting"]),
        .testTarget(name: "PerchChatTests", dependencies: ["PerchChat"]),
        .testTarget(name: "PerchMatrixTests", dependencies: ["PerchMatrix", "PerchService", "PerchChat"]),
        .testTarget(name: "PerchLockTests", dependencies: ["PerchLock", "PerchHost", "PerchCLI", "PerchTestSupport"]),
        .testTarget(name: "PerchConfigTests", dependencies: ["PerchConfig", "PerchCLI"]),
        .testTarget(
            name: "PerchServiceTests",
            dependencies: ["PerchService", "PerchSQLite", "PerchChat", "PerchTestSupport"]),
        .testTarget(
            name: "PerchSQLiteTests",
            dependencies: [
                "PerchSQLite", "PerchService", "PerchChat", "PerchLock", "PerchStoreProbe", "CSQLite", "CSQLiteVFS",
                "PerchTesting", "PerchTestSupport",
            ]),
        .testTarget(
            name: "PerchHostTests",
            dependencies: [
                "PerchHost", "PerchTesting", "PerchConfig", "PerchService", "PerchChat", "PerchSQLite",
                "PerchExamplePlugins", "PerchHTTP", "PerchHTTPClient", "PerchLock", "PerchTestSupport",
            ]),
        .testTarget(
            name: "PerchHTTPTests",
            dependencies: [
                "PerchHTTP", "PerchHost", "PerchTesting", "PerchService", "PerchSQLite", "PerchChat", "PerchLock",
                "PerchYAML", "PerchTestSupport",
            ]),
        .testTarget(
            name: "PerchHTTPClientTests",
            dependencies: [
                "PerchHTTPClient", "PerchHTTP", "PerchHost", "PerchLock", "PerchTestSupport", "PerchService",
                "PerchConfig", "PerchChat",
            ]),
        .testTarget(
            name: "PerchExamplePluginsTests",
            dependencies: ["PerchExamplePlugins", "PerchHost", "PerchChat", "PerchTesting", "PerchTestSupport"]),
        .testTarget(name: "PerchTestingTests", dependencies: ["PerchTesting", "PerchHost", "PerchChat", "PerchLock"]),
        .testTarget(
            name: "PerchCLITests",
            dependencies: [
                "PerchCLI", "perch", "PerchHTTP", "PerchTesting", "PerchService", "PerchSQLite", "PerchChat",
                "PerchLock", "PerchTestSupport",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
