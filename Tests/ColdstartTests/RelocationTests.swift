import ColdstartAnalysis
import Foundation
import XCTest

/// Relocation counts read from each loaded object's ELF file
/// (docs/before-main.md, "Loader statistics") against what glibc itself
/// counts with `LD_DEBUG=statistics`.
final class RelocationTests: XCTestCase {
    /// glibc's start-up statistics of one run of `program` (LD_DEBUG_OUTPUT
    /// writes them to FILE.pid), by the label before the colon.
    private func glibcStatistics(_ program: String, in dir: String) throws -> [String: Int] {
        let result = try runProcess(program, environment: ["LD_DEBUG": "statistics", "LD_DEBUG_OUTPUT": dir + "/ld"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let file = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: dir).first { $0.hasPrefix("ld.") })
        let text = try String(contentsOfFile: dir + "/" + file, encoding: .utf8)
        var values: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 2).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 3, let value = Int(parts[2].split(separator: " ").first ?? "") else { continue }
            values[parts[1]] = values[parts[1]] ?? value  // the start-up block comes before the one at exit
        }
        return values
    }

    func testCountsFromTheFilesAgreeWithGlibcStatistics() throws {
        let tool = try FixturePrograms.path("FoundationTool")
        let dir = try makeTemporaryDirectory(for: self).path
        let result = try runProcess(try Products.path("coldstart"), ["run", "-n", "1", "--warmup", "0", "--out", dir, "--", tool],
                                    environment: ["SWIFT_BACKTRACE": "enable=no"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let timeline = try Timeline(contentsOf: dir + "/run-1.json")
        let statistics = try XCTUnwrap(LoaderStatistics(timeline))
        XCTAssertEqual(statistics.source, "LD_AUDIT la_objopen")
        XCTAssertEqual(statistics.unreadable, [])
        let names = statistics.objects.map(\.name)
        for library in ["libswiftCore.so", "libFoundation.so", "libc.so.6", "FoundationTool"] {
            XCTAssertTrue(names.contains(library), "\(library) not among \(names)")
        }

        let statsDir = dir + "/ld-debug"
        try FileManager.default.createDirectory(atPath: statsDir, withIntermediateDirectories: true)
        let glibc = try glibcStatistics(tool, in: statsDir)
        // glibc also counts its own look-ups that are no relocation: the
        // vDSO's functions (5) and malloc's (4) here.
        let lookups = try XCTUnwrap(glibc["number of relocations"])
        XCTAssertTrue((lookups - 16...lookups).contains(statistics.lookups), "\(statistics.lookups) look-ups against glibc's \(lookups)")
        XCTAssertEqual(statistics.cachedLookups, glibc["number of relocations from cache"])
        XCTAssertEqual(statistics.relative, glibc["number of relative relocations"], "DT_RELR is not in glibc's figure")
        // The Swift libraries carry most of the symbolic work, not libc.
        let swift = statistics.objects.filter { $0.name.hasPrefix("libswift") || $0.name.hasPrefix("libFoundation") }
        XCTAssertGreaterThan(swift.reduce(0) { $0 + $1.symbolic }, statistics.symbolic / 2)
    }

    func testTheLoaderFindingNamesTheRelocationsAndAdvisesOnTheAppsOwnLibrary() throws {
        func loaderFinding(_ heaviest: FindingInputs.Loader.Library) throws -> Finding {
            var inputs = FindingInputs(launchMs: 20)
            inputs.loader = .init(ms: 9, libraryCount: 21, relocations: 21123, lookups: 8477, heaviest: heaviest,
                                  swiftRuntimeIsShared: true, usesFoundation: true)
            return try XCTUnwrap(Finding.ranked(inputs).first { $0.kind == .loader })
        }
        let toolchain = try loaderFinding(.init(name: "lib_FoundationICU.so", symbolic: 3377, lookups: 2110, ms: 1.93, isOwn: false))
        XCTAssertEqual(toolchain.location, "21 libraries, 21123 symbolic relocations (8477 look-ups); slowest lib_FoundationICU.so 1.9 ms")
        XCTAssertTrue(toolchain.advice.contains("-static-stdlib"), toolchain.advice)

        let own = try loaderFinding(.init(name: "libModels.so", symbolic: 40000, lookups: 9000, ms: nil, isOwn: true))
        XCTAssertTrue(own.location.hasSuffix("; most libModels.so 40000"), own.location)
        XCTAssertTrue(own.advice.hasPrefix("libModels.so is yours"), own.advice)
        XCTAssertTrue(own.advice.contains("-Bsymbolic"), own.advice)
    }
}
