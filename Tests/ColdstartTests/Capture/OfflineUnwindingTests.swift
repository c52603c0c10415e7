@testable import ColdstartAnalysis
import Foundation
import XCTest

/// `COLDSTART_UNWINDER=offline` (docs/performance.md, "Offline unwinding"):
/// the host keeps each kernel sample's registers and stack copy and loads
/// no unwinder; the reader unwinds the copies with DWARF CFI from the
/// modules' files. The KnownCosts checks of a library built without frame
/// pointers run with it too (KnownCostsTests, "…WhenUnwoundOffline").
final class OfflineUnwindingTests: XCTestCase {
    private var host: String!
    private var directory: URL!

    override func setUpWithError() throws {
        host = try FixturePrograms.path("SamplerHost")
        directory = try makeTemporaryDirectory(for: self)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    /// SamplerHost with `unwinder` (nil: the default); the timeline's path.
    private func record(_ arguments: [String], unwinder: String?, extra: [String: String?] = [:],
                        file: StaticString = #filePath, line: UInt = #line) throws -> (ProcessResult, String) {
        let path = directory.appendingPathComponent("\(UUID().uuidString).json").path
        var environment: [String: String?] = ["COLDSTART": path, "COLDSTART_HZ": "1000", "COLDSTART_UNWINDER": unwinder]
        for (key, value) in extra { environment[key] = value }
        let result = try runProcess(host, arguments, environment: environment, timeout: 60)
        XCTAssertEqual(result.status, 0, "SamplerHost \(arguments) failed: \(result.stderr)", file: file, line: line)
        return (result, path)
    }

    /// The kernel's stack records, wherever this machine lets this process
    /// open perf events (probed apart from Coldstart): then a timeline
    /// without them fails, it does not skip.
    private func perfStacksOrSkip(_ timeline: Timeline, file: StaticString = #filePath, line: UInt = #line) throws {
        try MachineProbes.requirePerf()
        let sampling = try XCTUnwrap(timeline.sampling, file: file, line: line)
        XCTAssertEqual(sampling.clock, "perf-task-clock", file: file, line: line)
        XCTAssertGreaterThan(sampling.kernelStacks?.samples ?? 0, 0, "the kernel recorded the stacks", file: file, line: line)
    }

    /// Each sample after main as its symbolized function stack, root first.
    private func stacks(_ timeline: Timeline) throws -> [String] {
        let stacks = try XCTUnwrap(try LaunchAnalysis(timeline: timeline).stacks, "sampled stacks")
        return stacks.samples.filter { $0.ns > timeline.launch.mainNs && $0.tid == stacks.mainThread }
            .map { $0.functions.map { stacks.functions[$0].name }.joined(separator: " ← ") }
    }

    /// Every copy unwound, as deep as the online unwinder gets, and the same
    /// stacks: the burn at depth five, launched once with each unwinder,
    /// gives ≥ 90% of each launch's samples a stack the other launch has too.
    func testOfflineFramesAreTheOnlineUnwindersFrames() throws {
        let (_, onlinePath) = try record(["burn", "200", "5"], unwinder: nil)
        let (_, offlinePath) = try record(["burn", "200", "5"], unwinder: "offline")
        let online = try Timeline(contentsOf: onlinePath), offline = try Timeline(contentsOf: offlinePath)
        try perfStacksOrSkip(offline)
        let sampling = try XCTUnwrap(offline.sampling)
        XCTAssertEqual(sampling.unwinder, "offline")
        let kernel = try XCTUnwrap(sampling.kernelStacks)
        let unwinding = try XCTUnwrap(offline.offlineUnwinding, "the file carries stack copies")
        XCTAssertNil(unwinding.unavailable)
        XCTAssertEqual(kernel.raw, unwinding.copies, "every copy kept is written: no thinning at COLDSTART_HZ")
        XCTAssertEqual(kernel.rawDropped, 0)
        XCTAssertEqual(unwinding.copies, sampling.samples, "a copy per kernel sample")
        XCTAssertEqual(kernel.dwarf, sampling.samples, "every stack unwound from its copy")
        XCTAssertEqual(unwinding.missingFiles, 0)
        XCTAssertNil(unwinding.note)

        let onlineStacks = try stacks(online), offlineStacks = try stacks(offline)
        XCTAssertGreaterThan(offlineStacks.count, 150, "200 ms of CPU at 1 kHz")
        func shared(_ these: [String], in those: [String]) -> Double {
            let other = Set(those)
            return Double(these.filter { other.contains($0) }.count) / Double(max(these.count, 1))
        }
        let common = shared(offlineStacks, in: onlineStacks), reverse = shared(onlineStacks, in: offlineStacks)
        XCTAssertGreaterThanOrEqual(common, 0.9, "offline stacks the online launch has: \(Set(offlineStacks).subtracting(onlineStacks).prefix(3))")
        XCTAssertGreaterThanOrEqual(reverse, 0.9, "online stacks the offline launch has: \(Set(onlineStacks).subtracting(offlineStacks).prefix(3))")
        let depths = offline.samples.filter { $0.ns > offline.launch.mainNs }.map(\.frames.count).sorted()
        XCTAssertGreaterThanOrEqual(depths[depths.count / 2], 9, "burnAtDepth's five frames, then main")
    }

    /// No unwinder in the host: libunwind is never mapped (the watcher, which
    /// unwinds blocked threads' live stacks, is off here: it loads its own),
    /// and the timeline says no unwinder was made ready.
    func testTheHostNeverMapsLibunwind() throws {
        let (result, path) = try record(["maps"], unwinder: "offline", extra: ["COLDSTART_WATCH": "0"])
        XCTAssertEqual(result.stdout, "libunwind mapped: no\n")
        XCTAssertEqual(result.stderr, "")
        // The control: the same launch with the default unwinder maps it.
        let (online, _) = try record(["maps"], unwinder: nil, extra: ["COLDSTART_WATCH": "0"])
        XCTAssertEqual(online.stdout, "libunwind mapped: yes\n")
        let timeline = try Timeline(contentsOf: path)
        let sampling = try XCTUnwrap((timeline.parsedDocument["coldstart"] as? [String: Any])?["sampling"] as? [String: Any])
        XCTAssertEqual(sampling["unwinder"] as? String, "offline")
        XCTAssertNil(sampling["unwinderReadyNs"], "no unwinder was loaded")
    }

    /// A module whose file is gone, or is another build than the one that
    /// ran, leaves its samples their frame-pointer chains: the file still
    /// reads, the report says how many, and the other samples are unwound.
    func testAMissingOrChangedModuleKeepsTheChain() throws {
        let (_, path) = try record(["burn", "100", "5"], unwinder: "offline")
        let timeline = try Timeline(contentsOf: path)
        try perfStacksOrSkip(timeline)
        let executable = try XCTUnwrap(timeline.modules.first { $0.path == timeline.process.executable })
        var text = try String(contentsOfFile: path, encoding: .utf8)
        let gone = directory.appendingPathComponent("gone").path + executable.path
        XCTAssertTrue(text.contains("\"path\":\"\(executable.path)\""))
        text = text.replacingOccurrences(of: "\"path\":\"\(executable.path)\"", with: "\"path\":\"\(gone)\"")
        let missingPath = directory.appendingPathComponent("missing.json").path
        try text.write(toFile: missingPath, atomically: true, encoding: .utf8)

        // The chains as the host wrote them.
        let root = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let rows = try XCTUnwrap((root["coldstart"] as? [String: Any])?["samples"] as? [[Any]])
        let chains = rows.map { row -> [Timeline.Frame] in
            let flat = (row[2] as? [NSNumber]) ?? []
            return stride(from: 0, to: flat.count - 1, by: 2).map { Timeline.Frame(module: flat[$0].intValue, address: flat[$0 + 1].uint64Value) }
        }
        let missing = try Timeline(contentsOf: missingPath)
        let unwinding = try XCTUnwrap(missing.offlineUnwinding)
        let index = try XCTUnwrap(missing.modules.firstIndex { $0.path == gone })
        let inExecutable = missing.samples.indices.filter { chains[$0].first?.module == index }
        XCTAssertGreaterThan(inExecutable.count, 50, "the burn's samples are in the executable")
        XCTAssertGreaterThanOrEqual(unwinding.missingFiles, inExecutable.count)
        for i in inExecutable { XCTAssertEqual(missing.samples[i].frames, chains[i], "sample \(i) keeps its chain") }
        XCTAssertNotNil(unwinding.note)
        let report = try coldstart(["report", missingPath])
        XCTAssertEqual(report.status, 0, report.stderr)
        XCTAssertTrue(report.stdout.contains("stack copies kept their frame-pointer chains"), report.stdout)

        // Another build: the file is there, its build-id is not the one recorded.
        let buildId = try XCTUnwrap(executable.buildId)
        let changed = String(buildId.reversed())
        let changedPath = directory.appendingPathComponent("changed.json").path
        try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(of: "\"buildId\":\"\(buildId)\"", with: "\"buildId\":\"\(changed)\"")
            .write(toFile: changedPath, atomically: true, encoding: .utf8)
        let rebuilt = try Timeline(contentsOf: changedPath)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(rebuilt.offlineUnwinding).missingFiles, inExecutable.count)
        for i in inExecutable { XCTAssertEqual(rebuilt.samples[i].frames, chains[i], "sample \(i) keeps its chain") }
    }
}
