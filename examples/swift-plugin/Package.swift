// swift-tools-version: 6.0
// A Swift plugin of one's own, in a package of its own: the plugin, a `perch` built with it, and
// its test. It depends on Perch by path (the repository two folders up); a package elsewhere
// depends on Perch's repository by URL the same way.
import Foundation
import PackageDescription

// SwiftPM names a package reached by path after its folder: whatever the clone is called.
let perchPath = "../.."
let perch = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(perchPath)
    .standardizedFileURL.lastPathComponent.lowercased()

let package = Package(
    name: "Greeter",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: perchPath)],
    targets: [
        // The plugin.
        .target(name: "Greeter", dependencies: [.product(name: "PerchHost", package: perch)]),
        // `perch`, with the plugin registered beside Perch's own.
        .executableTarget(
            name: "greeter-perch",
            dependencies: [
                "Greeter", .product(name: "PerchCLI", package: perch), .product(name: "PerchHost", package: perch),
            ]),
        .testTarget(
            name: "GreeterTests",
            dependencies: [
                "Greeter", .product(name: "PerchTesting", package: perch), .product(name: "PerchHost", package: perch),
            ]),
    ]
)
