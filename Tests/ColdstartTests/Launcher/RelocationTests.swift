@testable import ColdstartAnalysis
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
        let result = try coldstart(["run", "-n", "1", "--warmup", "0", "--out", dir, "--", tool])
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
        // Symbolized, the file carries them (and its faults' names): a report reads no binary.
        let symbolize = try coldstart(["symbolize", dir + "/run-1.json", "-o", dir + "/symbolized.json"])
        XCTAssertEqual(symbolize.status, 0, symbolize.stderr)
        let symbolized = try Timeline(contentsOf: dir + "/symbolized.json")
        XCTAssertNotNil((symbolized.document["coldstart"] as? [String: Any])?["loaderStatistics"])
        XCTAssertEqual(LoaderStatistics(symbolized)?.objects, statistics.objects)
        let faultCode = try XCTUnwrap(BeforeMain(symbolized)?.phaseFaults.first?.code.map(\.name))
        XCTAssertTrue(faultCode.contains("_dl_relocate_object"), "\(faultCode)")
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
        XCTAssertEqual(toolchain.location, "21 shared libraries, 21123 symbolic relocations (8477 look-ups); slowest lib_FoundationICU.so 1.9 ms")
        XCTAssertTrue(toolchain.advice.contains("-static-stdlib"), toolchain.advice)

        let own = try loaderFinding(.init(name: "libModels.so", symbolic: 40000, lookups: 9000, ms: nil, isOwn: true))
        XCTAssertTrue(own.location.hasSuffix("; most in libModels.so (40000)"), own.location)
        XCTAssertTrue(own.advice.hasPrefix("libModels.so is yours"), own.advice)
        XCTAssertTrue(own.advice.contains("-Bsymbolic"), own.advice)
    }

    /// The example under `coldstart run` (its loader sampled at the app's
    /// 1 kHz: 4 samples) named libswiftCore.so, 77 look-ups, "slowest" on 2
    /// samples. A library's time is named only on enough samples; else the
    /// one with most symbolic relocations.
    func testTheSlowestLibraryRestsOnEnoughSamples() throws {
        let objects = [
            ObjectRelocations(name: "libFoundationEssentials.so", relative: 6645, symbolic: 5746, plt: 892, lookups: 1210, cachedLookups: 4536, bindNow: false),
            ObjectRelocations(name: "lib_FoundationICU.so", relative: 11136, symbolic: 3377, plt: 3248, lookups: 2110, cachedLookups: 1267, bindNow: false),
            ObjectRelocations(name: "libswiftCore.so", relative: 14699, symbolic: 77, plt: 175, lookups: 77, cachedLookups: 0, bindNow: false),
        ]
        let thin = [BeforeMain.Entry(name: "libswiftCore.so", ms: 2.07, count: 2), BeforeMain.Entry(name: "libFoundation.so", ms: 1.03, count: 1)]
        let fallback = try XCTUnwrap(FindingInputs.Loader.heaviest(objects, relocation: thin))
        XCTAssertEqual(fallback.name, "libFoundationEssentials.so")
        XCTAssertNil(fallback.ms, "no time on 2 samples")

        let dense = [BeforeMain.Entry(name: "lib_FoundationICU.so", ms: 2.02, count: 20), BeforeMain.Entry(name: "libswiftCore.so", ms: 0.73, count: 10),
                     BeforeMain.Entry(name: "libFoundationEssentials.so", ms: 1.10, count: 9)]
        let slowest = try XCTUnwrap(FindingInputs.Loader.heaviest(objects, relocation: dense))
        XCTAssertEqual(slowest.name, "lib_FoundationICU.so")
        XCTAssertEqual(slowest.ms, 2.02)
        XCTAssertNil(FindingInputs.Loader.heaviest([], relocation: dense))
    }

    /// A minimal x86-64 shared object: `.dynsym` with global, local, hidden
    /// and protected symbols; RELA entries (whose DT_RELASZ also covers the
    /// PLT's, as some linkers write it), two PLT slots and a DT_RELR table.
    private func sharedObject(bindNow: Bool, in dir: String) throws -> String {
        var bytes = [UInt8](repeating: 0, count: 176)
        func put(_ value: UInt64, _ size: Int, at offset: Int) {
            for i in 0..<size { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
        }
        func append(_ words: [UInt64]) -> Int {
            let at = bytes.count
            for word in words { bytes += withUnsafeBytes(of: word.littleEndian, Array.init) }
            return at
        }
        // Symbols 1–5: global, local, hidden, protected, global (st_info, st_other).
        let symbolInfo: [(UInt64, UInt64)] = [(0, 0), (0x10, 0), (0x00, 0), (0x10, 2), (0x10, 3), (0x10, 0)]
        let dynsym = append(symbolInfo.flatMap { info, other in [info << 32 | other << 40, 0, 0] })
        func rela(_ symbol: UInt64, _ type: UInt64) -> [UInt64] { [0x2000, symbol << 32 | type, 0] }
        let entries = [rela(0, 8), rela(0, 8),                // RELATIVE × 2
                       rela(1, 6), rela(1, 6), rela(1, 1),    // GLOB_DAT, the same again, R_X86_64_64: one look-up
                       rela(2, 6), rela(3, 6),                // local, hidden: none
                       rela(4, 6), rela(4, 18)]               // protected: looked up; TPOFF64 is another type class
        let relaAt = append(entries.flatMap { $0 })
        let jmprelAt = append(rela(5, 7) + rela(1, 7))        // JUMP_SLOT × 2
        let relrAt = append([0x3000, 0b1011])                 // one address, then a bitmap: two more
        var tags: [(UInt64, UInt64)] = [(7, UInt64(relaAt)), (8, UInt64(jmprelAt + 48 - relaAt)), (9, 24),
                                        (23, UInt64(jmprelAt)), (2, 48), (20, 7), (36, UInt64(relrAt)), (35, 16)]
        if bindNow { tags.append((30, 8)) }
        let dynamicAt = append((tags + [(0, 0)]).flatMap { [$0.0, $0.1] })
        let sectionsAt = append([UInt64](repeating: 0, count: 8))  // the null section, then .dynsym
        _ = append([11 << 32, 0, 0, UInt64(dynsym), UInt64(symbolInfo.count * 24), 0, 0, 24])
        bytes[0..<8] = [0x7F, 0x45, 0x4C, 0x46, 2, 1, 1, 0]
        put(3, 2, at: 16); put(62, 2, at: 18); put(1, 4, at: 20)
        put(64, 8, at: 32); put(UInt64(sectionsAt), 8, at: 40)
        put(64, 2, at: 52); put(56, 2, at: 54); put(2, 2, at: 56); put(64, 2, at: 58); put(2, 2, at: 60)
        // PT_LOAD of the whole file at address 0, then PT_DYNAMIC.
        put(1, 4, at: 64); put(UInt64(bytes.count), 8, at: 64 + 32); put(UInt64(bytes.count), 8, at: 64 + 40)
        put(2, 4, at: 120); put(UInt64(dynamicAt), 8, at: 120 + 8); put(UInt64(dynamicAt), 8, at: 120 + 16)
        put(UInt64((tags.count + 1) * 16), 8, at: 120 + 32)
        let path = dir + (bindNow ? "/libnow.so" : "/liblazy.so")
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        return path
    }

    func testCountingFollowsGlibcsRules() throws {
        let dir = try makeTemporaryDirectory(for: self).path
        let lazy = try ObjectRelocations(path: try sharedObject(bindNow: false, in: dir), executable: "/bin/true")
        XCTAssertEqual(lazy, ObjectRelocations(name: "liblazy.so", relative: 2, packedRelative: 3, symbolic: 7, plt: 2,
                                               lookups: 3, cachedLookups: 2, bindNow: false, isOwn: true, initializers: 0))
        // Bound now, the PLT slots are looked up at start-up as well.
        let now = try ObjectRelocations(path: try sharedObject(bindNow: true, in: dir), executable: "/bin/true")
        XCTAssertEqual([now.lookups, now.cachedLookups, now.plt, now.symbolic], [5, 2, 2, 7])
        XCTAssertTrue(now.bindNow)
    }
}
