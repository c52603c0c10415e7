@testable import ColdstartAnalysis
import Foundation
import XCTest

/// A launch profile whose answer is known, made of real stacks captured in
/// this process (so its frames are real addresses in the test binary, Foundation,
/// XCTest and libc, named by `coldstart symbolize` from those files): five
/// functions are the leaf of 40, 25, 15, 10 and 6 main-thread samples (1 ms
/// each), and a worker thread adds 3. Built once per test run.
enum KnownProfile {
    /// Leaf functions by self samples, highest first.
    static let leaves: [(name: String, samples: Int)] = [
        ("knownProfileHashIndex", 40), ("knownProfileParseConfig", 25), ("knownProfileOpenStore", 15),
        ("knownProfileLoadRoutes", 10), ("knownProfileWarmCache", 6),
    ]
    static let workerSamples = 3
    static let phases: [(String, String, Double, Double)] = [
        ("kernel exec + loader", "loader", 0, 10),
        ("library initializers", "initializers", 10, 20),
        ("main → config loaded", "app", 20, 70),
        ("config loaded → ready", "app", 70, 130),
    ]

    static let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coldstart-known-\(getpid())")

    /// The symbolized timeline's path.
    static let path: Result<String, Error> = Result {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: KnownProfile.directory) }
        let live = LiveModules()
        let pid = Int(getpid())
        var rows: [[Any]] = []
        var ms = 21.0
        for (index, leaf) in leaves.enumerated() {
            for _ in 0..<leaf.samples {
                rows.append(live.sampleRow(ns: Int64(ms * 1e6), tid: pid, addresses: captures[index]()))
                ms += 1
            }
        }
        final class Box: @unchecked Sendable { var stack: [UInt64] = [] }
        let box = Box(), done = DispatchSemaphore(value: 0)
        Thread { box.stack = knownProfileWorkerLoop(); done.signal() }.start()
        done.wait()
        for index in 0..<workerSamples {
            rows.append(live.sampleRow(ns: Int64((30.5 + Double(index)) * 1e6), tid: pid + 1, addresses: box.stack))
        }

        var builder = SampledTimelineBuilder()
        builder.pid = pid
        builder.executable = live.modules[0].path
        builder.symbolized = false
        builder.endNs = 130_000_000
        // A perf clock whose periods partly ended in the kernel: 800 samples a
        // CPU second, each still one asked 1 kHz period (1 ms) of user CPU.
        builder.hz = 800
        builder.phases = phases
        builder.threads = [["tid": pid, "name": "main"], ["tid": pid + 1, "name": "worker"]]
        var document = builder.document
        var section = document["coldstart"] as! [String: Any]
        section["modules"] = live.timelineModules()
        section["samples"] = try trimmed(rows, modules: section["modules"], pid: pid)
        section["marks"] = [["name": "config loaded", "ns": 70_000_000, "tid": pid, "phaseBoundary": true, "extended": false]]
        section["spans"] = [["name": "open store", "beginNs": 40_000_000, "endNs": 65_000_000, "tid": pid, "endTid": pid, "unfinished": false]]
        var launch = section["launch"] as! [String: Any]
        launch["startRealtimeUs"] = 1_767_225_600_000_000
        section["launch"] = launch
        document["coldstart"] = section
        let raw = directory.appendingPathComponent("raw.json").path
        try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: raw))
        let path = directory.appendingPathComponent("known.json").path
        let result = try coldstart(["symbolize", raw, "-o", path])
        guard result.status == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "symbolize failed: \(result.stderr)"])
        }
        return path
    }

    /// Each stack starts at its `knownProfile…` frame: the frames above it
    /// (Foundation's backtrace machinery) go, and its return address becomes
    /// a leaf inside the function (`- 1`: a leaf is looked up as is).
    private static func trimmed(_ rows: [[Any]], modules: Any?, pid: Int) throws -> [[Any]] {
        var unnamed = SampledTimelineBuilder()
        unnamed.symbolized = false
        var document = unnamed.document
        var section = document["coldstart"] as! [String: Any]
        section["modules"] = modules
        section["samples"] = rows
        document["coldstart"] = section
        let timeline = try Timeline(data: JSONSerialization.data(withJSONObject: document))
        let symbols = timeline.frameNames(Symbolizer(modules: timeline.modules, debugDirectory: nil)).symbols
        return try rows.enumerated().map { index, row in
            let frames = timeline.samples[index].frames
            guard let start = frames.firstIndex(where: { symbols[$0.key]?.name.contains("knownProfile") == true }) else {
                throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "no knownProfile frame in sample \(index): \(frames.map { symbols[$0.key]?.name ?? "?" })"])
            }
            var pairs: [Any] = []
            for (position, frame) in frames.enumerated().dropFirst(start) {
                pairs += [frame.module, position == start ? frame.address - 1 : frame.address]
            }
            return [row[0], row[1], pairs]
        }
    }

    private static let captures: [() -> [UInt64]] = [
        knownProfileHashIndex, knownProfileParseConfig, knownProfileOpenStore, knownProfileLoadRoutes, knownProfileWarmCache,
    ]

    /// The symbolized timeline, or a test failure.
    static func timelinePath(file: StaticString = #filePath, line: UInt = #line) throws -> String {
        do {
            return try path.get()
        } catch {
            XCTFail("cannot build the known profile: \(error)", file: file, line: line)
            throw error
        }
    }
}

@inline(never) func knownProfileHashIndex() -> [UInt64] { knownProfileKeep(currentStack()) }
@inline(never) func knownProfileParseConfig() -> [UInt64] { knownProfileKeep(currentStack()) }
@inline(never) func knownProfileOpenStore() -> [UInt64] { knownProfileKeep(currentStack()) }
@inline(never) func knownProfileLoadRoutes() -> [UInt64] { knownProfileKeep(currentStack()) }
@inline(never) func knownProfileWarmCache() -> [UInt64] { knownProfileKeep(currentStack()) }
@inline(never) func knownProfileWorkerLoop() -> [UInt64] { knownProfileKeep(currentStack()) }

/// Keeps each capture a real call (not a tail call), so its caller's frame stays on the stack.
@inline(never) func knownProfileKeep(_ stack: [UInt64]) -> [UInt64] { stack + [] }

/// Programs the tests drive, found on PATH or installed once per test run
/// (as root, through scripts/ensure-deps.sh); a test skips, naming the
/// reason, when one cannot be had.
enum ExternalTool {
    static let chromium = find(["chromium", "chromium-browser"], package: "chromium")
    static let go = find(["go"], package: "golang-go")
    static let prometheus = find(["prometheus"], package: "prometheus")
    static let promtool = find(["promtool"], package: "prometheus")
    static let nodeExporter = find(["prometheus-node-exporter", "node_exporter"], package: "prometheus-node-exporter")

    private static func find(_ names: [String], package: String) -> Result<String, XCTSkip> {
        func lookup() -> String? {
            let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/bin:/usr/local/bin:/usr/lib/go/bin"
            for directory in path.split(separator: ":") {
                for name in names where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
                    return "\(directory)/\(name)"
                }
            }
            return nil
        }
        if let found = lookup() { return .success(found) }
        guard getuid() == 0 else { return .failure(XCTSkip("\(names[0]) is not installed and the tests are not root (apt-get install \(package))")) }
        let script = repositoryRoot.appendingPathComponent("scripts/ensure-deps.sh").path
        let result = try? runProcess("/bin/bash", [script, package], timeout: 900)
        if let found = lookup() { return .success(found) }
        return .failure(XCTSkip("\(names[0]) is not installed and installing \(package) failed: \(result?.stderr ?? "could not run \(script)")"))
    }

    static func path(_ tool: Result<String, XCTSkip>) throws -> String { try tool.get() }
}
