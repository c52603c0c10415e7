@testable import ColdstartAnalysis
import Foundation
import XCTest

final class DWARFSymbolizerTests: XCTestCase {
    /// A C program whose `outer` has `inner` inlined into it, built with DWARF.
    private static let source = """
        static inline __attribute__((always_inline)) int inner(int x) {
            return x * x * 3 + 1;
        }
        __attribute__((noinline)) int outer(int x) {
            int y = inner(x);
            return y ^ 5;
        }
        int main(int argc, char **argv) { (void)argv; return outer(argc); }

        """

    private func buildProgram(in directory: URL) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/cc") else { throw XCTSkip("no C compiler") }
        let sourcePath = directory.appendingPathComponent("inline.c").path
        try Self.source.write(toFile: sourcePath, atomically: true, encoding: .utf8)
        let binary = directory.appendingPathComponent("inline").path
        let result = try runProcess("/usr/bin/cc", ["-g", "-O2", "-Wl,--build-id", "-o", binary, sourcePath])
        XCTAssertEqual(result.status, 0, result.stderr)
        return binary
    }

    private func symbol(_ name: String, in binary: String) throws -> (address: UInt64, size: UInt64) {
        let output = try runProcess(try toolchainTool("llvm-nm"), ["--defined-only", "-S", binary]).stdout
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 4, parts[3] == name, let address = UInt64(parts[0], radix: 16), let size = UInt64(parts[1], radix: 16) {
                return (address, size)
            }
        }
        // The program was just built with it: its absence is a failure.
        throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "\(name) not in \(binary)'s symbol table"])
    }

    /// Every address of `outer` where `inner`'s code sits.
    private func inlinedStacks(_ module: DWARFModule, outer: (address: UInt64, size: UInt64)) -> [[SourceFrame]] {
        (outer.address..<outer.address + outer.size).map { module.frames(at: $0) }.filter { $0.count > 1 }
    }

    func testInlinedFramesComeInnermostFirstWithTheirLines() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let binary = try buildProgram(in: directory)
        let module = try DWARFModule(path: binary, debugDirectory: nil)
        XCTAssertTrue(module.hasDWARF)
        XCTAssertNil(module.debugFilePath, "the DWARF is in the file itself")
        let outer = try symbol("outer", in: binary)
        let stacks = inlinedStacks(module, outer: outer)
        XCTAssertFalse(stacks.isEmpty, "inner is inlined into outer")
        for stack in stacks {
            XCTAssertEqual(stack.map(\.name), ["inner", "outer"])
            XCTAssertEqual(stack.map(\.isInlined), [true, false])
            XCTAssertEqual(stack[0].file.map { URL(fileURLWithPath: $0).lastPathComponent }, "inline.c")
            XCTAssertEqual(stack[0].line, 2, "the line of inner's body")
            XCTAssertEqual(stack[1].line, 5, "the call site of inner inside outer")
        }
        XCTAssertEqual(module.frames(at: outer.address).last?.name, "outer")
        XCTAssertEqual(module.frames(at: outer.address).last?.isInlined, false)
    }

    func testFindsTheDebugFileByDebuglinkAndByBuildID() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let binary = try buildProgram(in: directory)
        let outer = try symbol("outer", in: binary)
        let debugFile = binary + ".debug"
        let objcopy = "/usr/bin/objcopy"
        guard FileManager.default.isExecutableFile(atPath: objcopy) else { throw XCTSkip("no objcopy") }
        XCTAssertEqual(try runProcess(objcopy, ["--only-keep-debug", binary, debugFile]).status, 0)
        XCTAssertEqual(try runProcess(objcopy, ["--strip-all", "--add-gnu-debuglink=\(debugFile)", binary]).status, 0)

        let linked = try DWARFModule(path: binary, debugDirectory: nil)
        XCTAssertEqual(linked.debugFilePath.map { URL(fileURLWithPath: $0).lastPathComponent }, "inline.debug")
        XCTAssertFalse(inlinedStacks(linked, outer: outer).isEmpty, "inlined frames from the debuglink file")
        XCTAssertEqual(linked.frames(at: outer.address).last?.name, "outer", "a local function named only by the debug file")
        let image = try ELFImage(path: binary, debugDirectory: directory.path)
        XCTAssertEqual(image.symbol(containing: outer.address + 1)?.name, "outer", "the symbol table reader merges the debuglink file's .symtab")
        XCTAssertNil(try ELFImage(path: binary, debugDirectory: nil).symbol(containing: outer.address + 1))

        // By build-id alone: no debuglink, the file under <dir>/.build-id/.
        XCTAssertEqual(try runProcess(objcopy, ["--remove-section=.gnu_debuglink", binary]).status, 0)
        let buildID = try XCTUnwrap(linked.buildID)
        let byID = directory.appendingPathComponent("debug/.build-id/\(buildID.prefix(2))")
        try FileManager.default.createDirectory(at: byID, withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: debugFile, toPath: byID.appendingPathComponent("\(buildID.dropFirst(2)).debug").path)
        XCTAssertNil(try DWARFModule(path: binary, debugDirectory: nil).debugFilePath)
        let found = try DWARFModule(path: binary, debugDirectory: directory.appendingPathComponent("debug").path)
        XCTAssertEqual(found.debugFilePath?.hasSuffix("\(buildID.dropFirst(2)).debug"), true)
        XCTAssertEqual(found.frames(at: outer.address).last?.name, "outer")
    }

    func testRefusesADebugFileOfAnotherBuild() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let binary = try buildProgram(in: directory)
        let outer = try symbol("outer", in: binary)
        let objcopy = "/usr/bin/objcopy"
        guard FileManager.default.isExecutableFile(atPath: objcopy) else { throw XCTSkip("no objcopy") }
        // Another build's debug file under this build's debuglink name.
        let other = directory.appendingPathComponent("other")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try Self.source.replacingOccurrences(of: "* 3 + 1", with: "* 7 + 2").write(
            toFile: other.appendingPathComponent("inline.c").path, atomically: true, encoding: .utf8)
        let otherBinary = other.appendingPathComponent("inline").path
        XCTAssertEqual(try runProcess("/usr/bin/cc", ["-g", "-O2", "-o", otherBinary, other.appendingPathComponent("inline.c").path]).status, 0)
        XCTAssertEqual(try runProcess(objcopy, ["--only-keep-debug", otherBinary, binary + ".debug"]).status, 0)
        XCTAssertEqual(try runProcess(objcopy, ["--strip-all", "--add-gnu-debuglink=\(binary).debug", binary]).status, 0)
        let module = try DWARFModule(path: binary, debugDirectory: nil)
        XCTAssertNil(module.debugFilePath)
        XCTAssertFalse(module.hasDWARF)
        XCTAssertTrue(module.frames(at: outer.address).isEmpty, "no name from another build's debug file")
    }

    func testDWARFNamesMatchTheSymbolTable() throws {
        // The test bundle is a debug build: DWARF for every Swift function.
        let bundle = SymbolizerTests.testBundle
        let output = try runProcess(try toolchainTool("llvm-nm"), ["--defined-only", "-S", bundle]).stdout
        var byAddress: [UInt64: [String]] = [:]
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 3)
            guard parts.count == 4, parts[2] == "t" || parts[2] == "T", let address = UInt64(parts[0], radix: 16),
                  let size = UInt64(parts[1], radix: 16), size > 0
            else { continue }
            byAddress[address, default: []].append(String(parts[3]))
        }
        let module = try DWARFModule(path: bundle, debugDirectory: nil)
        XCTAssertTrue(module.hasDWARF)
        var compared = 0
        var mismatches: [String] = []
        let swiftFunctions = byAddress.filter { $0.value.count == 1 && $0.value[0].hasPrefix("$s") }.sorted { $0.key < $1.key }
        for (address, names) in swiftFunctions.prefix(3000) {
            guard let outermost = module.frames(at: address).last else { continue }
            compared += 1
            if outermost.name != names[0] { mismatches.append("\(String(address, radix: 16)): \(outermost.name) ≠ \(names[0])") }
        }
        XCTAssertGreaterThan(compared, 1000, "most Swift functions have DWARF")
        XCTAssertEqual(mismatches, [], mismatches.prefix(5).joined(separator: "\n"))
    }

    func testInlinedFramesAndLinesInTheC_LibraryFromItsDebugFile() throws {
        let libc = SymbolizerTests.libc
        // Before libdwfl maps libc's file: that mapping would read as its load address.
        let live = LiveModules()
        let (index, offset) = live.frame(UInt64(UInt(bitPattern: try XCTUnwrap(dlsym(nil, "malloc")))))
        XCTAssertEqual(live.modules[index].path, libc)
        let module = try DWARFModule(path: libc)
        guard module.debugFilePath != nil else { throw XCTSkip("libc6-dbg is not installed") }
        let stacks = (offset..<offset + 400).map { module.frames(at: $0) }
        // glibc's DWARF linkage name is its internal alias, `__GI___libc_malloc`.
        XCTAssertTrue(
            stacks.allSatisfy { $0.last?.name.hasSuffix("__libc_malloc") == true && $0.last?.isInlined == false }, "\(stacks.first!)")
        let inlined = stacks.filter { $0.count > 1 }
        XCTAssertTrue(inlined.contains { $0.contains { $0.name == "tcache_get" && $0.isInlined } }, "malloc's fast path is inlined")
        XCTAssertTrue(inlined.allSatisfy { $0[0].file?.hasSuffix(".c") == true && ($0[0].line ?? 0) > 0 }, "\(inlined.first!)")
    }

    func testCorruptAndSpecialFilesFailCleanly() throws {
        let directory = try makeTemporaryDirectory(for: self)
        let binary = try buildProgram(in: directory)
        let outer = try symbol("outer", in: binary)
        let fifo = directory.appendingPathComponent("fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        XCTAssertThrowsError(try DWARFModule(path: fifo)) { XCTAssertTrue("\($0)".contains("not a regular file"), "\($0)") }
        XCTAssertThrowsError(try DWARFModule(path: directory.path)) { XCTAssertTrue("\($0)".contains("is a directory"), "\($0)") }
        XCTAssertThrowsError(try DWARFModule(path: directory.appendingPathComponent("missing").path))
        let text = directory.appendingPathComponent("text").path
        try Data("not an ELF file at all".utf8).write(to: URL(fileURLWithPath: text))
        XCTAssertThrowsError(try DWARFModule(path: text))

        // Truncated at many lengths and with bytes overwritten all over: an
        // error or fewer names, never a crash.
        let original = try Data(contentsOf: URL(fileURLWithPath: binary))
        var generator = SplitMix64(seed: 12)  // the same corruptions every run
        for round in 0..<60 {
            var bytes = [UInt8](original)
            if round % 2 == 0 {
                bytes.removeLast(Int(generator.next() % UInt64(bytes.count)))
            } else {
                for _ in 0..<64 { bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next()) }
            }
            let path = directory.appendingPathComponent("corrupt\(round)").path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            guard let module = try? DWARFModule(path: path, debugDirectory: nil) else { continue }
            for address in stride(from: outer.address, to: outer.address + outer.size, by: 3) {
                _ = module.frames(at: address)
            }
        }
    }

    func testTheSymbolizerKeepsSymbolTableNamesAndAddsInlinedFramesAndLines() throws {
        let libc = SymbolizerTests.libc
        let live = LiveModules()
        let (index, offset) = live.frame(UInt64(UInt(bitPattern: try XCTUnwrap(dlsym(nil, "malloc")))))
        guard try DWARFModule(path: libc).debugFilePath != nil else { throw XCTSkip("libc6-dbg is not installed") }
        let module = Timeline.Module(path: live.modules[index].path, buildId: nil, base: 0, start: 0, end: 0)
        let symbolizer = Symbolizer(modules: [module])
        let symbols = (offset..<offset + 400).map { symbolizer.symbol(for: Timeline.Frame(module: 0, address: $0), isReturnAddress: false).0 }
        XCTAssertTrue(symbols.allSatisfy { $0.name == "malloc" }, "the symbol table's plainest alias, not DWARF's __GI___libc_malloc")
        XCTAssertTrue(symbols.contains { $0.inlined?.contains { $0.name == "tcache_get" } == true })
        XCTAssertTrue(symbols.contains { $0.file?.hasSuffix("malloc.c") == true && ($0.line ?? 0) > 0 })
    }
}

extension DWARFSymbolizerTests {
    /// libdw's module-wide look-up gives up on a Swift binary (a Clang
    /// module's skeleton unit has no address), and its functions' DWARF 5
    /// addresses are beyond it: KnownCosts' frames had no line, so a
    /// finding could not say where the app made its call.
    func testASwiftProgramsFramesHaveTheirFileAndLine() throws {
        let binary = try FixturePrograms.path("KnownCosts")
        let burn = try symbol("$s10KnownCosts7burnCPU12millisecondsys6UInt64V_tF", in: binary)
        let module = try DWARFModule(path: binary)
        let places = (burn.address..<burn.address + burn.size).compactMap { module.frames(at: $0).first }
        XCTAssertTrue(places.contains { $0.file?.hasSuffix("KnownCosts/Burn.swift") == true && ($0.line ?? 0) > 0 }, "\(places.prefix(3))")
        XCTAssertTrue(places.allSatisfy { $0.name == "$s10KnownCosts7burnCPU12millisecondsys6UInt64V_tF" }, "\(places.prefix(3))")
    }
}
