// swift-tools-version:5.9
import Foundation
import PackageDescription

// Programs the sampler tests and `make bench` run (built once by `make
// fixtures`). They link Coldstart from the repository root, like an app would.
// A path dependency's identity is its directory's name, which depends on where
// the repository was cloned: derive it.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
let rootIdentity = root.lastPathComponent.lowercased()

let package = Package(
    name: "ColdstartFixtures",
    dependencies: [
        .package(path: "../.."),
        .package(path: "SlowInit"),
    ],
    targets: [
        // throw/catch of C++ exceptions, to check the host's unwinder is untouched.
        .target(name: "CxxThrow"),
        .executableTarget(
            name: "SamplerHost",
            dependencies: [.product(name: "Coldstart", package: rootIdentity), "CxxThrow"]
        ),
        .executableTarget(
            name: "KnownCosts",
            dependencies: [
                .product(name: "Coldstart", package: rootIdentity),
                // A dynamic library: its constructor runs among the library initializers.
                .product(name: "SlowInit", package: "SlowInit"),
            ]
        ),
        // Spawns a program with its stdout on a pseudo-terminal, for launch timings.
        .target(name: "BenchSupport"),
        .executableTarget(name: "SamplerBench", dependencies: ["BenchSupport"]),
        // The off-CPU watcher's: a main thread blocked in known ways, a host that
        // closes every descriptor, and parked threads for its cost benchmark.
        .executableTarget(name: "BlockedHost", dependencies: [.product(name: "Coldstart", package: rootIdentity)]),
        .executableTarget(name: "DescriptorHost", dependencies: [.product(name: "Coldstart", package: rootIdentity)]),
        .executableTarget(name: "ParkedThreads", dependencies: [.product(name: "Coldstart", package: rootIdentity)]),
        // Signals, threads, descriptors, exec and fork as real programs use them (issue 14).
        .executableTarget(name: "HostPatterns", dependencies: [.product(name: "Coldstart", package: rootIdentity)]),
    ]
)
