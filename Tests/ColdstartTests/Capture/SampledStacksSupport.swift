@testable import ColdstartAnalysis
import Foundation
import XCTest

/// A timeline with sampled stacks, built by hand: each function gets its own
/// address in its module, and (unless `symbolized` is false) the names are
/// written into `coldstart.symbols` as `coldstart symbolize` would.
struct SampledTimelineBuilder {
    struct Frame {
        var module: Int
        var name: String
        var system: String?
        /// The source place DWARF would give (a return address: the call's line).
        var file: String?
        var line: Int?
    }

    var pid = 4242
    var executable = "/opt/app/App"
    /// `sampling.clock`: a perf task clock's sample is one `requestedHz`
    /// period of user CPU, a POSIX timer's one `hz` (effective) period.
    var clock = "perf-task-clock"
    var hz: Double = 1000
    var requestedHz: Double = 1000
    /// `sampling.boost`: a boosted start (none by default).
    var boost: [String: Any]?
    var endNs: Int64 = 100_000_000
    var endReason = "ready"
    var samplingStartNs: Int64 = 10_000_000
    /// When the main thread's clock started (`sampling.clockArmedNs`); absent when nil.
    var clockArmedNs: Int64?
    /// When the scan thread first ran (`sampling.scanBeganNs`); absent when nil.
    var scanBeganNs: Int64?
    /// Contiguous phases: (name, kind, startMs, endMs).
    var phases: [(String, String, Double, Double)] = [
        ("kernel exec + loader", "loader", 0, 10),
        ("library initializers", "initializers", 10, 20),
        ("main → config loaded", "app", 20, 50),
        ("config loaded → ready", "app", 50, 100),
    ]
    var threads: [[String: Any]] = [["tid": 4242, "name": "main"]]
    var symbolized = true
    private(set) var modules: [[String: Any]] = []
    private(set) var samples: [[Any]] = []
    private(set) var symbols: [String: [String: Any]] = [:]
    private var addresses: [String: UInt64] = [:]

    /// Adds a module (no file needs to exist when the timeline is symbolized).
    mutating func module(_ path: String) -> Int {
        modules.append(["path": path, "buildId": NSNull(), "base": 0x7f00_0000_0000 + modules.count * 0x100_0000,
                        "start": 0, "end": 0])
        return modules.count - 1
    }

    /// A sample at `ms` after process start; `stack` is root first (reads
    /// like a call chain), stored leaf first as the format wants.
    mutating func sample(at ms: Double, tid: Int? = nil, _ stack: [Frame]) {
        var pairs: [Any] = []
        for frame in stack.reversed() {
            let key = "\(frame.module)\u{1}\(frame.name)\u{1}\(frame.line ?? 0)"
            let address = addresses[key] ?? UInt64(0x1000 + addresses.count * 0x100)
            addresses[key] = address
            pairs += [frame.module, address]
            var symbol: [String: Any] = ["name": frame.name]
            if let system = frame.system { symbol["system"] = system }
            if let file = frame.file { symbol["file"] = file }
            if let line = frame.line { symbol["line"] = line }
            symbols["\(frame.module):\(address)"] = symbol
        }
        samples.append([Int64((ms * 1e6).rounded()), tid ?? pid, pairs])
    }

    var document: [String: Any] {
        let phaseObjects: [[String: Any]] = phases.map {
            ["name": $0.0, "kind": $0.1, "startNs": Int64($0.2 * 1e6), "endNs": Int64($0.3 * 1e6), "rusage": NSNull()]
        }
        var sampling: [String: Any] = [
            "clock": clock, "unwinder": "libunwind", "requestedHz": requestedHz, "effectiveHz": hz,
            "loweredHz": NSNull(), "startNs": samplingStartNs, "stopNs": endNs, "samples": samples.count, "dropped": 0,
        ]
        if let boost { sampling["boost"] = boost }
        if let clockArmedNs { sampling["clockArmedNs"] = clockArmedNs }
        if let scanBeganNs { sampling["scanBeganNs"] = scanBeganNs }
        var section: [String: Any] = [
            "version": 1,
            "launch": [
                "startNs": 1_000_000_000, "startSource": "spawn-env", "startPrecisionNs": 0,
                "earliestInitNs": Int64(phases[1].2 * 1e6), "mainNs": Int64(phases[2].2 * 1e6),
                "readyNs": endNs, "endNs": endNs, "completed": true, "endReason": endReason,
            ] as [String: Any],
            "process": ["pid": pid, "executable": executable, "kernelRelease": "6.1.0", "swiftVersion": "6.3"] as [String: Any],
            "rusage": [Any](), "phases": phaseObjects, "marks": [Any](), "spans": [Any](), "threads": threads,
            "sampling": sampling,
            "modules": modules, "samples": samples,
        ]
        if symbolized {
            section["symbols"] = symbols
            section["symbolized"] = true
        }
        return ["displayTimeUnit": "ms", "otherData": ["coldstartFormat": 1], "traceEvents": [Any](), "coldstart": section]
    }

    func data() throws -> Data { try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys]) }
    func timeline() throws -> Timeline { try Timeline(data: data()) }
}

/// The objects loaded in this process, as a timeline's `modules` describes
/// them, so stacks captured here become real samples.
struct LiveModules {
    struct Module {
        var path: String
        var base: UInt64
        var start: UInt64
        var end: UInt64
    }

    let modules: [Module]

    /// Reads /proc/self/maps: each file's mappings, its load bias from the
    /// mapping of file offset 0 and the ELF's first loadable segment.
    init() {
        // procfs files report size 0: read to the end rather than by size.
        let maps = String(decoding: FileHandle(forReadingAtPath: "/proc/self/maps")?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        var order: [String] = []
        var ranges: [String: (start: UInt64, end: UInt64, headerAt: UInt64?)] = [:]
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[5].hasPrefix("/") else { continue }
            let bounds = fields[0].split(separator: "-").compactMap { UInt64($0, radix: 16) }
            guard bounds.count == 2, let offset = UInt64(fields[2], radix: 16) else { continue }
            let path = fields[5...].joined(separator: " ")
            if ranges[path] == nil { order.append(path) }
            var range = ranges[path] ?? (UInt64.max, 0, nil)
            range.start = min(range.start, bounds[0])
            range.end = max(range.end, bounds[1])
            if offset == 0, range.headerAt == nil { range.headerAt = bounds[0] }
            ranges[path] = range
        }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        // The executable first, as a sampler lists it.
        order.sort { ($0 == executable ? 0 : 1) < ($1 == executable ? 0 : 1) }
        modules = order.compactMap { path in
            guard let range = ranges[path], let headerAt = range.headerAt,
                  let image = try? ELFImage(path: path, debugDirectory: nil),
                  let first = image.segments.map(\.virtualAddress).min()
            else { return nil }
            return Module(path: path, base: headerAt - (first & ~0xFFF), start: range.start, end: range.end)
        }
    }

    /// (module index, ELF virtual address) for a run-time address, or (-1, address).
    func frame(_ address: UInt64) -> (Int, UInt64) {
        guard let index = modules.firstIndex(where: { address >= $0.start && address < $0.end }) else { return (-1, address) }
        return (index, address - modules[index].base)
    }

    /// `modules` of a timeline; `paths` replaces a module's path (a copy of it).
    func timelineModules(paths: [Int: String] = [:]) -> [[String: Any]] {
        modules.enumerated().map { index, module in
            let buildID = (try? ELFImage(path: module.path, debugDirectory: nil))?.buildID
            return ["path": paths[index] ?? module.path, "buildId": buildID ?? NSNull() as Any,
                    "base": module.base, "start": module.start, "end": module.end]
        }
    }

    /// A sample row (`[ns, tid, [m, a, …]]`) from run-time return addresses, leaf first.
    func sampleRow(ns: Int64, tid: Int, addresses: [UInt64]) -> [Any] {
        [ns, tid, addresses.flatMap { address -> [Any] in
            let (module, offset) = frame(address)
            return [module, offset]
        }]
    }
}

/// This thread's return addresses, innermost first.
func currentStack() -> [UInt64] {
    Thread.callStackReturnAddresses.map { $0.uint64Value }
}

/// A lazily initialised global (it lives outside main.swift): its initializer
/// runs under the runtime's once, so the stack it captures holds the
/// `…WZ` frame under `swift::threading_impl::once_slow`.
let stackCapturedByLazyGlobal: [UInt64] = currentStack()

/// A C shared library built once per test run with the toolchain's clang; its
/// constructor records its own stack, so dlopen-ing it yields a real stack
/// under the loader's `_dl_init`/`call_init`.
enum ConstructorLibrary {
    static let source = """
    #include <execinfo.h>
    static void *stack[128];
    static int depth;
    __attribute__((constructor)) static void ctortest_init(void) { depth = backtrace(stack, 128); }
    int ctortest_stack(void ***out) { *out = stack; return depth; }
    """

    /// Where it is built; removed when the test process exits (the library
    /// stays mapped, and tests read the file while they run).
    static let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coldstart-ctortest-\(getpid())")

    /// The library's path, built on first use.
    static let path: Result<String, Error> = Result {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: ConstructorLibrary.directory) }
        let sourcePath = directory.appendingPathComponent("ctortest.c").path
        let libraryPath = directory.appendingPathComponent("libctortest.so").path
        try source.write(toFile: sourcePath, atomically: true, encoding: .utf8)
        let clang = try toolchainClang()
        let result = try runProcess(clang, ["-shared", "-fPIC", "-O0", "-g", "-o", libraryPath, sourcePath])
        guard result.status == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "clang failed: \(result.stderr)"])
        }
        return libraryPath
    }

    /// The stack its constructor saw when loaded by `dlopen`, innermost first.
    static func constructorStack() throws -> [UInt64] {
        let path = try path.get()
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: String(cString: dlerror())])
        }
        typealias Getter = @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutableRawPointer?>?>) -> Int32
        let getter = unsafeBitCast(dlsym(handle, "ctortest_stack"), to: Getter.self)
        var stack: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        let depth = Int(getter(&stack))
        return (0..<depth).map { UInt64(UInt(bitPattern: stack![$0])) }
    }
}

/// The toolchain these tests were built with: the `bin` directory beside the
/// Swift runtime this process loaded (…/usr/lib/swift/linux/libswiftCore.so
/// → …/usr/bin), wherever the toolchain is installed.
func toolchainBinDirectory() throws -> URL {
    // Read to its end: /proc files have no size to read up to.
    let maps = String(decoding: (try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/maps")).readToEnd()) ?? Data(), as: UTF8.self)
    guard let line = maps.split(separator: "\n").first(where: { $0.hasSuffix("/libswiftCore.so") }),
          let slash = line.firstIndex(of: "/")
    else { throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "no libswiftCore.so in /proc/self/maps"]) }
    // Through symlinks: a system copy of the runtime may link into the toolchain.
    let core = URL(fileURLWithPath: String(line[slash...])).resolvingSymlinksInPath()
    return core.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("bin")
}

/// A program of that toolchain (llvm-nm, clang); failing, not skipping, when
/// it is missing: the toolchain that built the tests has them.
func toolchainTool(_ name: String) throws -> String {
    let path = try toolchainBinDirectory().appendingPathComponent(name).path
    guard FileManager.default.isExecutableFile(atPath: path) else {
        throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "no \(name) in the toolchain that built these tests: \(path)"])
    }
    return path
}

/// The toolchain's clang: beside the Swift runtime these tests run on.
func toolchainClang() throws -> String { try toolchainTool("clang") }

/// The sampled stacks of `timeline`, from one analysis pass as `coldstart export` makes them.
func sampledStacks(_ timeline: Timeline, file: StaticString = #filePath, line: UInt = #line) throws -> SampledStacks {
    try XCTUnwrap(SampledStacks(timeline: timeline), "the timeline has samples", file: file, line: line)
}

/// The sampled-stacks sections of `timeline`'s report, from one analysis pass.
func profileReport(_ timeline: Timeline, options: ProfileOptions = ProfileOptions(), path: String = "<timeline>",
                   debugDirectory: String? = "/usr/lib/debug", file: StaticString = #filePath, line: UInt = #line) throws -> ProfileReport {
    let analysis = try LaunchAnalysis(timeline: timeline, options: options, path: path,
                                      symbolizer: Symbolizer(modules: timeline.modules, debugDirectory: debugDirectory))
    return try XCTUnwrap(analysis.report.profile, "the timeline has samples", file: file, line: line)
}
