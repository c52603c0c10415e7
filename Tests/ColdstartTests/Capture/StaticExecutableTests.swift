import ColdstartAnalysis
import Foundation
import XCTest

/// A host linked with `swiftc -static-executable` (issue 13, item 8): no
/// loader to dlopen libunwind with, so it is sampled with frame pointers,
/// without a word on stderr, and Coldstart's objects add no "Using 'dlopen'
/// in statically linked applications" warning to its link.
final class StaticExecutableTests: XCTestCase {
    func testAStaticExecutableIsSampledWithFramePointersQuietly() throws {
        let swiftc = try DocumentationTests.tool("swiftc")
        let staticLib = URL(fileURLWithPath: swiftc).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("lib/swift_static/linux/static-executable-args.lnk")
        guard FileManager.default.fileExists(atPath: staticLib.path) else {
            throw XCTSkip("this toolchain has no static Swift standard library (\(staticLib.path))")
        }
        let source = repositoryRoot.appendingPathComponent("Tests/Fixtures/StaticHost/main.swift")
        let products = Products.directory
        // The host library's objects as SwiftPM built them for these tests.
        let objects = ["CColdstart", "ColdstartEarly"].flatMap {
            Products.objects(of: $0, sources: repositoryRoot.appendingPathComponent("CSupport/\($0)"))
        } + ["ColdstartBuildInfo", "Coldstart"].flatMap { Products.objects(of: $0) }
        XCTAssertGreaterThan(objects.count, 20, "the host library's objects in \(products.path): run `swift build` first")
        let scratch = try makeTemporaryDirectory(for: self)
        let host = scratch.appendingPathComponent("static-host").path
        let link = try runProcess(swiftc, ["-static-executable", "-I", products.appendingPathComponent("Modules").path,
                                           "-Xcc", "-fmodule-map-file=\(products.appendingPathComponent("CColdstart.build/module.modulemap").path)",
                                           source.path, "-o", host] + objects)
        XCTAssertEqual(link.status, 0, link.stderr)
        let ours = link.stderr.split(separator: "\n").filter { $0.contains("Using 'dlopen'") && $0.contains("CColdstart.build/") }
        XCTAssertEqual(ours, [], "the capture layer references no dlopen")

        let timeline = scratch.appendingPathComponent("launch.json").path
        let result = try runProcess(host, environment: ["COLDSTART": timeline])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "static done\n")
        XCTAssertEqual(result.stderr, "", "frame pointers are what a static link means, not a failure to report")
        let sampling = try XCTUnwrap(Timeline(contentsOf: timeline).sampling)
        XCTAssertEqual(sampling.unwinder, "frame-pointer")
        XCTAssertGreaterThan(sampling.samples, 50, "its 200 ms of CPU at 1 kHz")
    }
}
