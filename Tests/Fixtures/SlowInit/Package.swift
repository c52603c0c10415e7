// swift-tools-version:5.9
import PackageDescription

// A C shared library whose constructor burns ~30 ms of CPU: a slow library
// initializer for the KnownCosts fixture. Its own package so that it can be a
// dynamic product the fixture links (and the loader initialises) before main.
// Built as Debian builds its C libraries: optimised, without frame pointers,
// so that its callers are found only through its DWARF call-frame
// information (a frame-pointer walk ends in it). A local package's own flags,
// never the root package's.
let package = Package(
    name: "SlowInit",
    products: [.library(name: "SlowInit", type: .dynamic, targets: ["SlowInit"])],
    targets: [.target(name: "SlowInit", cSettings: [.unsafeFlags(["-O2", "-fomit-frame-pointer", "-Xclang", "-mframe-pointer=none"])])]
)
