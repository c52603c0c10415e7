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
        // epoll, which Swift's Glibc module does not export.
        .target(name: "HostWaits"),
        // COLDSTART_BRIDGE_HOLD_MS: the bridge's test knob, which no other host
        // has (it replaces the capture layer's weak hook at link time).
        .target(name: "BridgeHold"),
        .executableTarget(
            name: "SamplerHost",
            dependencies: [.product(name: "Coldstart", package: rootIdentity), "CxxThrow", "HostWaits", "BridgeHold"]
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
        // Runs a command under a seccomp filter refusing perf_event_open, as a
        // container's default profile does (issue 27: profiling where perf is refused).
        .executableTarget(name: "NoPerf"),
        // The off-CPU watcher's: a main thread blocked in known ways, a host that
        // closes every descriptor, and parked threads for its cost benchmark.
        // sched_setaffinity, which Swift's Glibc module does not export.
        .target(name: "CPUPin"),
        .executableTarget(name: "BlockedHost", dependencies: [.product(name: "Coldstart", package: rootIdentity), "CPUPin"]),
        .executableTarget(name: "DescriptorHost", dependencies: [.product(name: "Coldstart", package: rootIdentity)]),
        .executableTarget(name: "ParkedThreads", dependencies: [.product(name: "Coldstart", package: rootIdentity)]),
        // An async main with an actor, child tasks, a sleep, a CPU burn and a
        // blocking read on the main actor: the critical path's tests.
        .executableTarget(name: "AsyncService", dependencies: [.product(name: "Coldstart", package: rootIdentity)]),
        // Signals, threads, descriptors, exec and fork as real programs use them (issue 14).
        // A thread with little stack left (issue 23, item 2).
        .target(name: "StackEdge"),
        .executableTarget(name: "HostPatterns", dependencies: [.product(name: "Coldstart", package: rootIdentity), "StackEdge"]),
        // A plain Foundation CLI that does not link Coldstart (issue 10: unmodified
        // binaries), and the same work linked with it (issue 9: a short CLI's cost).
        .target(name: "InventoryWork"),
        .executableTarget(name: "FoundationTool", dependencies: ["InventoryWork"]),
        .executableTarget(
            name: "CodableTool",
            dependencies: [.product(name: "Coldstart", package: rootIdentity), "InventoryWork"]
        ),
        // `coldstart inspect`'s: 400 conforming Swift types and a C++ static
        // constructor, with no Foundation and no Coldstart.
        .target(name: "StaticConstructors"),
        // Threads named in every way the kernel knows (issue 26, item 3), without Coldstart.
        .target(name: "NamedWork"),
        .executableTarget(name: "NamedThreads", dependencies: ["NamedWork"]),
        .executableTarget(name: "ManyConformances", dependencies: ["StaticConstructors"]),
    ]
)
