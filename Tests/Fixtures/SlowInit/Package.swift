// swift-tools-version:5.9
import PackageDescription

// A C shared library whose constructor burns ~30 ms of CPU: a slow library
// initializer for the KnownCosts fixture. Its own package so that it can be a
// dynamic product the fixture links (and the loader initialises) before main.
let package = Package(
    name: "SlowInit",
    products: [.library(name: "SlowInit", type: .dynamic, targets: ["SlowInit"])],
    targets: [.target(name: "SlowInit")]
)
