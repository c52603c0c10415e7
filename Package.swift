// swift-tools-version:5.9
import PackageDescription

// Data flows one way: CColdstart (capture, C) → Coldstart (record, linked by the
// host) → timeline file → ColdstartAnalysis → the `coldstart` CLI and exporters.
// The host links only Coldstart, CColdstart, ColdstartEarly and ColdstartBuildInfo.
let package = Package(
    name: "Coldstart",
    products: [
        .library(name: "Coldstart", targets: ["Coldstart"]),
        .executable(name: "coldstart", targets: ["coldstart"]),
        // LD_AUDIT module `coldstart run` sets for the program it launches (docs/before-main.md).
        .library(name: "ColdstartAudit", type: .dynamic, targets: ["ColdstartAudit"]),
    ],
    targets: [
        .target(
            name: "CColdstart",
            path: "CSupport/CColdstart",
            // One folder per subsystem (docs/ARCHITECTURE.md); their private
            // headers are found from every folder.
            cSettings: [
                .define("_GNU_SOURCE"),
                .headerSearchPath("."), .headerSearchPath("base"), .headerSearchPath("sampler"),
                .headerSearchPath("watcher"), .headerSearchPath("writer"),
            ],
            linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("pthread")]
        ),
        // Linked as objects, so its .preinit_array entry and constructor run even
        // when the app references nothing in it.
        .target(
            name: "ColdstartEarly",
            dependencies: ["CColdstart"],
            path: "CSupport/ColdstartEarly",
            cSettings: [.define("_GNU_SOURCE")]
        ),
        .target(name: "ColdstartBuildInfo"),
        .target(name: "Coldstart", dependencies: ["CColdstart", "ColdstartEarly", "ColdstartBuildInfo"]),
        // elfutils' libdw: names, inlined frames and source lines from DWARF.
        .systemLibrary(name: "CDw", path: "CSupport/CDw", providers: [.apt(["libdw-dev"])]),
        // The CLI's DWARF unwinder (libunwind loaded at run time): a timeline's
        // stack copies (COLDSTART_UNWINDER=offline) and the tracer's. CLI only.
        .target(name: "CUnwind", path: "CSupport/CUnwind", cSettings: [.define("_GNU_SOURCE")], linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "ColdstartAnalysis", dependencies: ["CDw", "CUnwind"]),
        // The terminal's text (report, profile, findings, blocked time, fleet
        // tables): rendered from ColdstartAnalysis's values, which never format.
        .target(name: "ColdstartText", dependencies: ["ColdstartAnalysis"]),
        // Files for other tools (HTML page, pprof, folded stacks, speedscope),
        // made from ColdstartAnalysis's reports; never linked by the host.
        .systemLibrary(name: "CZlib", path: "CSupport/CZlib", providers: [.apt(["zlib1g-dev"])]),
        .target(name: "ColdstartExport", dependencies: ["ColdstartAnalysis", "ColdstartText", "CZlib"]),
        // The launcher's perf events (fork, attach, exec; ring buffers): CLI only.
        .target(name: "CLauncher", dependencies: ["CUnwind"], path: "CSupport/CLauncher", cSettings: [.define("_GNU_SOURCE")]),
        .target(name: "ColdstartAudit", path: "CSupport/ColdstartAudit", cSettings: [.define("_GNU_SOURCE")]),
        // `coldstart push`'s HTTP, libcurl loaded at run time: CLI only.
        .target(name: "CHTTP", path: "CSupport/CHTTP", cSettings: [.define("_GNU_SOURCE")], linkerSettings: [.linkedLibrary("dl")]),
        .executableTarget(name: "coldstart", dependencies: ["ColdstartAnalysis", "ColdstartText", "ColdstartExport", "CLauncher", "CHTTP", "ColdstartBuildInfo"]),
        .executableTarget(
            name: "ServiceStartup",
            dependencies: ["Coldstart"],
            path: "Examples/ServiceStartup",
            exclude: ["service.conf"]
        ),
        // What only the tests may run (the module table's check, the fuzz
        // worker's entry), in the test bundle alone: no host links it.
        .target(
            name: "CTestOnly",
            dependencies: ["CColdstart"],
            path: "Tests/CTestOnly",
            cSettings: [
                .define("_GNU_SOURCE"),
                .headerSearchPath("../../CSupport/CColdstart"), .headerSearchPath("../../CSupport/CColdstart/base"),
                .headerSearchPath("../../CSupport/CColdstart/sampler"), .headerSearchPath("../../CSupport/CColdstart/watcher"),
                .headerSearchPath("../../CSupport/CColdstart/writer"),
            ]
        ),
        .testTarget(
            name: "ColdstartTests",
            dependencies: ["ColdstartAnalysis", "ColdstartText", "ColdstartExport", "CColdstart", "CLauncher", "CTestOnly"],
            resources: [.copy("Fixtures")]
        ),
    ]
)
