@testable import ColdstartAnalysis
import Foundation
import XCTest

final class SymbolizerTests: XCTestCase {
    static let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
    static let swiftCore = LiveModules().modules.first { $0.path.hasSuffix("/libswiftCore.so") }!.path
    static let testBundle = LiveModules().modules[0].path

    // MARK: ELF reader

    func testBuildIDMatchesReadelf() throws {
        guard let readelf = ["/usr/bin/readelf", "/opt/swift/usr/bin/llvm-readelf"].first(where: {
            FileManager.default.isExecutableFile(atPath: $0)
        }) else { throw XCTSkip("no readelf to compare with") }
        for path in [Self.libc, Self.swiftCore, Self.testBundle] {
            let output = try runProcess(readelf, ["-n", path]).stdout
            let expected = try XCTUnwrap(output.split(separator: "\n").first { $0.contains("Build ID:") }?
                .split(separator: " ").last.map(String.init), path)
            XCTAssertEqual(try ELFImage(path: path).buildID, expected, path)
        }
    }

    func testNamesLibcFunctionsFoundWithDlsym() throws {
        let image = try ELFImage(path: Self.libc)
        let live = LiveModules()
        for name in ["qsort", "malloc", "__libc_start_main", "dlopen", "pthread_create"] {
            let address = try XCTUnwrap(dlsym(nil, name), name)
            let (module, offset) = live.frame(UInt64(UInt(bitPattern: address)))
            XCTAssertEqual(module >= 0 ? live.modules[module].path : nil, Self.libc, "\(name) lives in libc")
            XCTAssertEqual(image.symbol(containing: offset)?.name, name)
            XCTAssertEqual(image.symbol(containing: offset + 3)?.name, name, "an address inside \(name)")
        }
    }

    func testSymbolTableAgreesWithNm() throws {
        let nm = try XCTUnwrap(["/opt/swift/usr/bin/llvm-nm", "/usr/bin/nm"].first { FileManager.default.isExecutableFile(atPath: $0) })
        let output = try runProcess(nm, ["--defined-only", "-S", Self.testBundle]).stdout
        // address size type name; functions with a size, one name per address.
        var byAddress: [UInt64: [(String, UInt64)]] = [:]
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 3)
            guard parts.count == 4, parts[2] == "t" || parts[2] == "T",
                  let address = UInt64(parts[0], radix: 16), let size = UInt64(parts[1], radix: 16), size > 0
            else { continue }
            byAddress[address, default: []].append((String(parts[3]), size))
        }
        let unique = byAddress.filter { $0.value.count == 1 }
        XCTAssertGreaterThan(unique.count, 500, "the test bundle has plenty of functions")
        let image = try ELFImage(path: Self.testBundle)
        var mismatches: [String] = []
        for (address, entries) in unique {
            let (name, size) = entries[0]
            for probe in [address, address + size / 2, address + size - 1] where image.symbol(containing: probe)?.name != name {
                mismatches.append("\(String(probe, radix: 16)): \(image.symbol(containing: probe)?.name ?? "nil") ≠ \(name)")
            }
        }
        XCTAssertEqual(mismatches.count, 0, mismatches.prefix(5).joined(separator: "\n"))
    }

    func testUsesTheSeparateDebugFileOfAStrippedLibrary() throws {
        let plain = try ELFImage(path: Self.libc, debugDirectory: nil)
        XCTAssertFalse(plain.hasSymbolTable, "Debian's libc is stripped")
        try MachineProbes.requireSeparateDebugFile(of: Self.libc)
        let image = try ELFImage(path: Self.libc)
        let debugFile = try XCTUnwrap(image.debugFilePath, "libc6-dbg is installed: the symbolizer finds libc's debug file")
        XCTAssertTrue(debugFile.hasSuffix("\(image.buildID!.dropFirst(2)).debug"))
        // A local function, present only in the debug file's .symtab.
        let local = try XCTUnwrap(image.allSymbols.first { $0.name == "__libc_start_call_main" })
        XCTAssertEqual(image.symbol(containing: local.value + 1)?.name, "__libc_start_call_main")
        XCTAssertNotEqual(plain.symbol(containing: local.value + 1)?.name, "__libc_start_call_main")
        XCTAssertGreaterThan(image.allSymbols.count, plain.allSymbols.count + 1000, "the debug file adds the local functions")
    }

    func testUnsizedLabelsNameCodeButNotData() throws {
        // The loader's entry points are unsized assembler labels, named only
        // from its debug file; `_end` marks the end of data.
        let loader = try XCTUnwrap(LiveModules().modules.first { $0.path.contains("/ld-linux") }).path
        try MachineProbes.requireSeparateDebugFile(of: loader)
        let image = try ELFImage(path: loader)
        XCTAssertNotNil(image.debugFilePath, "libc6-dbg is installed: the symbolizer finds the loader's debug file")
        let start = try XCTUnwrap(image.allSymbols.first { $0.name == "_start" })
        XCTAssertEqual(start.size, 0)
        XCTAssertEqual(image.symbol(containing: start.value + 7)?.name, "_start")
        let end = try XCTUnwrap(image.allSymbols.first { $0.name == "_end" })
        XCTAssertNil(image.symbol(containing: end.value + 8), "not in an executable segment")
    }

    /// crti's `_init` is unsized and the PLT follows its `.init` section:
    /// AsyncService's calls through PLT stubs were a "slow function _init".
    func testPLTStubsAreNotTheUnsizedSymbolBeforeThem() throws {
        let image = try ELFImage(path: Self.testBundle, debugDirectory: nil)
        let initSymbol = try XCTUnwrap(image.allSymbols.first { $0.name == "_init" })
        XCTAssertEqual(initSymbol.size, 0)
        let section = try XCTUnwrap(image.codeSections.first { $0.contains(initSymbol.value) }, ".init")
        let plt = try XCTUnwrap(image.codeSections.filter { $0.virtualAddress >= section.virtualAddress + section.memorySize }
            .min { $0.virtualAddress < $1.virtualAddress }, "the PLT after .init")
        let next = try XCTUnwrap(image.allSymbols.first { $0.value > initSymbol.value })
        XCTAssertLessThan(plt.virtualAddress + 16, next.value, "PLT stubs between _init and the next symbol")
        XCTAssertEqual(image.symbol(containing: initSymbol.value + 1)?.name, "_init")
        XCTAssertNil(image.symbol(containing: plt.virtualAddress + 16), "a PLT stub is no part of _init")
    }

    func testGarbageAndTruncatedFilesThrow() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let real = try Data(contentsOf: URL(fileURLWithPath: Self.libc))
        var cases: [String: Data] = [
            "empty": Data(),
            "garbage": Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) }),
            "header-only": real.prefix(64),
            "cut-before-section-headers": real.prefix(real.count / 2),
            "elf32": { var data = real.prefix(4096); data[4] = 1; return Data(data) }(),
            "big-endian": { var data = real.prefix(4096); data[5] = 2; return Data(data) }(),
        ]
        cases["text"] = Data("#!/bin/sh\necho not an ELF file\n".utf8)
        for (name, data) in cases {
            let path = directory.appendingPathComponent(name).path
            try data.write(to: URL(fileURLWithPath: path))
            XCTAssertThrowsError(try ELFImage(path: path), name) { error in
                XCTAssertTrue("\(error)".hasPrefix(path + ": "), "names the file: \(error)")
            }
        }
        XCTAssertThrowsError(try ELFImage(path: directory.appendingPathComponent("missing.so").path))
        XCTAssertThrowsError(try ELFImage(path: directory.path), "a directory")
    }

    func testCorruptedHeadersNeverCrash() throws {
        // Flip bytes in the ELF, program and section headers of a real
        // library: every outcome is a throw or a usable image, never a crash.
        let directory = try makeTemporaryDirectory(for: self)
        let original = try Data(contentsOf: URL(fileURLWithPath: try ConstructorLibrary.path.get()))
        let sectionHeaders = Int(original.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 40, as: UInt64.self) })
        var generator = SplitMix64(seed: 0xC01D_57A7)  // the same corruptions every run
        let path = directory.appendingPathComponent("fuzzed.so").path
        var opened = 0
        for _ in 0..<300 {
            var data = original
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                let region = Bool.random(using: &generator) ? 0..<min(1024, data.count) : sectionHeaders..<data.count
                data[Int.random(in: region, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            try data.write(to: URL(fileURLWithPath: path))
            if let image = try? ELFImage(path: path, debugDirectory: nil) {
                opened += 1
                for probe in stride(from: UInt64(0), to: 0x4000, by: 0x40) { _ = image.symbol(containing: probe) }
            }
        }
        XCTAssertGreaterThan(opened, 0, "some corruptions leave a readable file")
    }

    // MARK: Demangling

    func testDemanglesSwiftNames() {
        XCTAssertEqual(Demangler.demangle("$s4main5table_WZ"), "one-time initialization function for table")
        XCTAssertEqual(Demangler.demangle("$s14ServiceStartup5StoreC4open11recordCountACSi_tFZ"),
                       "static ServiceStartup.Store.open(recordCount: Swift.Int) -> ServiceStartup.Store")
        XCTAssertEqual(Demangler.displayName("$s14ServiceStartup5StoreC4open11recordCountACSi_tFZ"),
                       "static ServiceStartup.Store.open(recordCount: Int) -> ServiceStartup.Store")
        XCTAssertNil(Demangler.demangle("qsort"))
        XCTAssertEqual(Demangler.displayName("qsort"), "qsort")
    }

    func testShortensSwiftNamesButKeepsLabels() {
        XCTAssertEqual(
            Demangler.displayName("$s10Foundation11MeasurementVA2A9DimensionCRbzrlE1poiyACyxGAG_AGtFZ"),
            "static Foundation.Measurement.+ infix(Foundation.Measurement<A>, Foundation.Measurement<A>) -> Foundation.Measurement<A>")
        XCTAssertEqual(
            Demangler.displayName("$s10Foundation10JSONParserV14DocumentReaderV19parseEscapeSequence33_C1A9DBA5C2A7147101C6D220A1C76577LLSSyKF"),
            "Foundation.JSONParser.DocumentReader.parseEscapeSequence() throws -> String")
        XCTAssertEqual(Demangler.shortSwiftName("f(x: __owned Swift.Array<MyModule.Swift.Thing>, y: __shared Swift.Int)"),
                       "f(x: Array<MyModule.Swift.Thing>, y: Int)")
    }

    func testDemanglesCxxNames() throws {
        // Whether libstdc++ is mapped is read from /proc/self/maps, not from the demangler.
        let maps = FileHandle(forReadingAtPath: "/proc/self/maps").map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) } ?? ""
        guard maps.contains("/libstdc++.so") else {
            throw XCTSkip("libstdc++ is not loaded")
        }
        XCTAssertTrue(Demangler.hasCxxDemangler, "libstdc++ is loaded: its __cxa_demangle is found")
        XCTAssertEqual(Demangler.demangle("_ZN5swift14threading_impl9once_slowERNS0_6once_tEPFvPvES3_"),
                       "swift::threading_impl::once_slow(swift::threading_impl::once_t&, void (*)(void*), void*)")
        XCTAssertEqual(Demangler.displayName("_ZNSt6vectorIiSaIiEE9push_backERKi"), "std::vector<int, std::allocator<int> >::push_back(int const&)")
        XCTAssertNil(Demangler.demangle("_Znot a name"))
    }

    // MARK: Symbolizer

    func testNamesTheFramesOfThisTestsOwnStack() throws {
        let live = LiveModules()
        let stack = currentStack()
        let timeline = try liveTimeline(live, rows: [live.sampleRow(ns: 20_000_000, tid: Int(getpid()), addresses: stack)])
        let result = Symbolizer(modules: timeline.modules).symbolize(timeline.samples)
        let names = timeline.samples[0].frames.map { result.symbols[$0.key]!.name }
        XCTAssertTrue(names.contains { $0.contains("SymbolizerTests.testNamesTheFramesOfThisTestsOwnStack()") }, "\(names)")
        XCTAssertTrue(names.contains("__libc_start_main"), "\(names)")
        XCTAssertTrue(names.contains { $0.contains("XCTestCase") }, "XCTest's Swift frames: \(names)")
        let testFrame = timeline.samples[0].frames.first { result.symbols[$0.key]!.name.contains("testNamesTheFramesOfThisTestsOwnStack") }!
        XCTAssertTrue(result.symbols[testFrame.key]!.system!.hasPrefix("$s14ColdstartTests"), "the mangled name is kept")
        XCTAssertEqual(result.mismatchedFrames, 0)
        XCTAssertTrue(result.warnings.isEmpty, "\(result.warnings)")
    }

    func testReturnAddressesAreLookedUpOneByteEarlier() throws {
        // Two adjacent functions: an address equal to the second's start, as a
        // return address, was pushed by a call at the end of the first.
        let image = try ELFImage(path: Self.libc)
        let symbols = image.allSymbols
        let pair = try XCTUnwrap(zip(symbols, symbols.dropFirst()).first { $0.size > 0 && $0.value + $0.size == $1.value && $1.size > 0 })
        let modules = [Timeline.Module(path: Self.libc, buildId: image.buildID, base: 0, start: 0, end: 0)]
        let symbolizer = Symbolizer(modules: modules)
        let frame = Timeline.Frame(module: 0, address: pair.1.value)
        XCTAssertEqual(symbolizer.symbol(for: frame, isReturnAddress: true).0.name, Demangler.displayName(pair.0.name))
        XCTAssertEqual(symbolizer.symbol(for: frame, isReturnAddress: false).0.name, Demangler.displayName(pair.1.name))
    }

    /// A bad unwind's "return address" in a module's data (relocations, the
    /// ELF header) named no function in the report, yet read as a caller
    /// (`math+0xbf70`, `__ehdr_start`): a frame outside code says so.
    func testFramesOutsideCodeAreNamedAsNotCode() throws {
        let image = try ELFImage(path: Self.libc)
        // Relocated data: the writable segment (GOT, .data.rel.ro).
        let data = try XCTUnwrap(image.segments.last { !$0.isExecutable })
        let offset = data.virtualAddress + data.memorySize / 2
        XCTAssertFalse(image.isCode(offset), "libc's data is not code")
        XCTAssertNil(image.symbol(containing: offset))
        let header = try XCTUnwrap(image.segments.first).virtualAddress + 0x10
        XCTAssertFalse(image.isCode(header), "the ELF header is not code")
        let qsort = try XCTUnwrap(image.allSymbols.first { $0.name == "qsort" })
        XCTAssertTrue(image.isCode(qsort.value + 1))
        let modules = [Timeline.Module(path: Self.libc, buildId: image.buildID, base: 0, start: 0, end: 0)]
        let symbolizer = Symbolizer(modules: modules)
        for address in [offset, header] {
            let (symbol, found) = symbolizer.symbol(for: Timeline.Frame(module: 0, address: address + 1), isReturnAddress: true)
            XCTAssertEqual(symbol.name, "libc.so.6+0x\(String(address + 1, radix: 16)) (not code)")
            XCTAssertFalse(found)
        }
        XCTAssertEqual(symbolizer.symbol(for: Timeline.Frame(module: 0, address: qsort.value + 1), isReturnAddress: true).0.name, "qsort")
    }

    func testBuildIDMismatchAndMissingFilesLeaveCountedPlaceholders() throws {
        let image = try ELFImage(path: Self.libc)
        let qsort = try XCTUnwrap(image.allSymbols.first { $0.name == "qsort" })
        let modules = [
            Timeline.Module(path: Self.libc, buildId: "00112233", base: 0, start: 0, end: 0),
            Timeline.Module(path: "/nonexistent/libgone.so.1", buildId: nil, base: 0, start: 0, end: 0),
            Timeline.Module(path: Self.libc, buildId: image.buildID!.uppercased(), base: 0, start: 0, end: 0),
        ]
        let samples = [Timeline.Sample(ns: 1, tid: 1, frames: [
            .init(module: 0, address: qsort.value), .init(module: 1, address: 0x1a2b),
            .init(module: -1, address: 0x7f00_dead_beef), .init(module: 2, address: qsort.value + 1),
        ])]
        let result = Symbolizer(modules: modules).symbolize(samples)
        XCTAssertEqual(result.symbols["0:\(qsort.value)"]?.name, "libc.so.6+0x\(String(qsort.value, radix: 16)) (build-id mismatch)")
        XCTAssertEqual(result.symbols["1:\(0x1a2b)"]?.name, "libgone.so.1+0x1a2b")
        XCTAssertEqual(result.symbols["-1:\(0x7f00_dead_beef)"]?.name, "0x7f00deadbeef")
        XCTAssertEqual(result.symbols["2:\(qsort.value + 1)"]?.name, "qsort", "build-ids compare without case")
        XCTAssertEqual(result.mismatchedFrames, 1)
        XCTAssertEqual(result.unnamedFrames, 3)
        XCTAssertEqual(result.warnings.count, 2, "\(result.warnings)")
        XCTAssertTrue(result.warnings.contains { $0.hasPrefix(Self.libc + ": build-id mismatch") })
        XCTAssertTrue(result.warnings.contains { $0.hasPrefix("/nonexistent/libgone.so.1: no such file") })
    }

    func testLibraryConstructorStackIsAttributedToTheLibrary() throws {
        let stack = try ConstructorLibrary.constructorStack()
        let live = LiveModules()
        let timeline = try liveTimeline(live, rows: [live.sampleRow(ns: 15_000_000, tid: Int(getpid()), addresses: stack)])
        // _dl_init is a local symbol of the loader, in its debug file alone.
        try MachineProbes.requireSeparateDebugFile(of: try XCTUnwrap(live.modules.first { $0.path.contains("/ld-linux") }).path)
        let report = try profileReport(timeline, options: ProfileOptions(treeDepth: 500))
        let names = report.callTreeNames
        XCTAssertTrue(names.contains("_dl_init"), "the loader's _dl_init, named from its symbol table: \(names)")
        XCTAssertEqual(report.initializers.samples, 1)
        let library = try XCTUnwrap(report.initializers.libraries.first, "\(names)")
        XCTAssertEqual(library.module, "libctortest.so")
        XCTAssertEqual(library.constructors.map(\.name), ["ctortest_init"])
        XCTAssertFalse(library.isExecutable)
    }

    func testRealLazyGlobalInitializerIsFound() throws {
        let live = LiveModules()
        let timeline = try liveTimeline(live, rows: [
            live.sampleRow(ns: 30_000_000, tid: Int(getpid()), addresses: stackCapturedByLazyGlobal),
        ])
        let report = try profileReport(timeline, options: ProfileOptions(treeDepth: 500))
        XCTAssertEqual(report.lazyGlobals.map(\.name), ["ColdstartTests.stackCapturedByLazyGlobal"], "\(report.callTreeNames)")
        XCTAssertEqual(report.lazyGlobals.first?.samples, 1)
        XCTAssertEqual(report.lazyGlobals.first?.phases, ["main → config loaded"])
    }

    /// A timeline of this process's modules holding `rows`.
    private func liveTimeline(_ live: LiveModules, rows: [[Any]]) throws -> Timeline {
        var builder = SampledTimelineBuilder()
        builder.symbolized = false
        builder.pid = Int(getpid())
        builder.executable = Self.testBundle
        var document = builder.document
        var section = document["coldstart"] as! [String: Any]
        section["modules"] = live.timelineModules()
        section["samples"] = rows
        document["coldstart"] = section
        return try Timeline(data: JSONSerialization.data(withJSONObject: document))
    }
}

extension ProfileReport {
    /// Every name in the call tree, depth first.
    var callTreeNames: [String] {
        func walk(_ nodes: [CallNode]) -> [String] { nodes.flatMap { [$0.name] + walk($0.children) } }
        return walk(callTree)
    }
}

/// A small seeded generator, so a failing fuzz case can be reproduced.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
