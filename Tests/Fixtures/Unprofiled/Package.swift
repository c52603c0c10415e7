// swift-tools-version:5.9
import PackageDescription

// The example app *not linked* with Coldstart, for `make bench`: the same
// sources (symlinked from Examples/ServiceStartup) against an empty stand-in
// for the Coldstart API, so the comparison isolates what linking costs.
let package = Package(
    name: "Unprofiled",
    targets: [
        .target(name: "Coldstart"),
        .executableTarget(name: "ServiceStartup", dependencies: ["Coldstart"], exclude: ["service.conf"]),
    ]
)
