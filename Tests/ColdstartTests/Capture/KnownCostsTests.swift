@testable import ColdstartAnalysis
import Foundation
import XCTest

/// The sampler and the report end to end, on a launch whose costs the program
/// measured itself (Tests/Fixtures KnownCosts): three functions burning ~150,
/// ~100 and ~50 ms of CPU, a shared library's constructor burning ~30 ms and
/// a lazy global's initializer burning ~20 ms. The report must name each one,
/// in its phase, within ±25% of the program's own figure.
final class KnownCostsTests: XCTestCase {
    static let tolerance = 0.25
    static let functions = [
        ("burnOneHundredFiftyMilliseconds", "main → first burnt"),
        ("burnOneHundredMilliseconds", "first burnt → functions burnt"),
        ("burnFiftyMilliseconds", "first burnt → functions burnt"),
    ]

    /// Swift's demangled name of a KnownCosts function.
    static func demangled(_ function: String) -> String { "KnownCosts.\(function)() -> UInt64" }

    private func assertMeasured(_ reported: Double, _ measured: Double, _ what: String,
                                file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(reported, measured, accuracy: measured * Self.tolerance,
                       "\(what): reported \(reported) ms, the program measured \(measured) ms", file: file, line: line)
    }

    private func phase(_ name: String, of report: ProfileReport, file: StaticString = #filePath, line: UInt = #line) throws -> ProfileReport.PhaseProfile {
        try XCTUnwrap(report.phases.first { $0.name == name }, "phase '\(name)' in \(report.phases.map(\.name))", file: file, line: line)
    }

    // MARK: Functions, initializer, lazy global

    func testEachFunctionIsNamedWithItsMeasuredTimeInItsPhase() throws {
        try assertFunctionsNamed(try KnownCostsRun.perf())
    }

    /// The same with the stack copies unwound by the reader, not the host.
    func testEachFunctionIsNamedWithItsMeasuredTimeWhenUnwoundOffline() throws {
        try assertFunctionsNamed(try KnownCostsRun.offline())
    }

    private func assertFunctionsNamed(_ run: KnownCostsRun.Run) throws {
        try run.requireUnstarvedTimers()
        let report = run.report
        XCTAssertEqual(report.sampling.clock, run.timeline.sampling?.clock)
        for (function, phaseName) in Self.functions {
            let name = Self.demangled(function)
            let measured = try run.measured(function)
            let overall = try XCTUnwrap(report.overall.byTotal.first { $0.name == name }, "\(name) among \(report.overall.byTotal.map(\.name))")
            XCTAssertEqual(overall.module, "KnownCosts")
            assertMeasured(overall.totalMs, measured, "\(name) total")
            // Its own code only calls the burning loop: no self time of its own.
            XCTAssertLessThanOrEqual(overall.selfSamples, 1, name)

            let inPhase = try XCTUnwrap(try phase(phaseName, of: report).functions.byTotal.first { $0.name == name }, "\(name) in '\(phaseName)'")
            XCTAssertEqual(inPhase.totalSamples, overall.totalSamples, "every sample of \(name) falls in '\(phaseName)'")
            for other in report.phases where other.name != phaseName {
                XCTAssertFalse(other.functions.byTotal.contains { $0.name == name }, "\(name) has no sample in '\(other.name)'")
            }
        }
        // The self time is in the loop every burn shares: the three functions and the global's initializer.
        let burn = try XCTUnwrap(report.overall.bySelf.first, "a function by self time")
        XCTAssertEqual(burn.name, "KnownCosts.burnCPU(milliseconds: UInt64) -> ()")
        let allBurns = try Self.functions.map { try run.measured($0.0) }.reduce(0, +) + run.measured("slowGlobalTable")
        assertMeasured(burn.selfMs, allBurns, "burnCPU self")
    }

    func testTheSlowConstructorIsItsLibrarysInitializer() throws {
        try assertSlowConstructor(try KnownCostsRun.perf())
    }

    /// libSlowInit.so is built without frame pointers: only DWARF CFI over
    /// the stack copy finds its constructor's callers (`_dl_init`). Here the
    /// CLI unwinds the copies the timeline carries.
    func testTheSlowConstructorIsItsLibrarysInitializerWhenUnwoundOffline() throws {
        let run = try KnownCostsRun.offline()
        let unwinding = try XCTUnwrap(run.timeline.offlineUnwinding, "the file carries stack copies")
        XCTAssertEqual(run.timeline.sampling?.unwinder, "offline")
        XCTAssertNil(unwinding.unavailable)
        XCTAssertEqual(unwinding.missingFiles, 0)
        XCTAssertGreaterThanOrEqual(unwinding.copies, run.timeline.samples.count * 95 / 100, "a copy for every kernel sample")
        XCTAssertGreaterThan(unwinding.unwound, unwinding.copies * 9 / 10, "unwound with DWARF")
        try assertSlowConstructor(run)
    }

    private func assertSlowConstructor(_ run: KnownCostsRun.Run) throws {
        try run.requireUnstarvedTimers()
        let measured = try run.measured("constructor")
        let library = try XCTUnwrap(run.report.initializers.libraries.first, "a slow initializer")
        XCTAssertEqual(library.module, "libSlowInit.so")
        XCTAssertFalse(library.isExecutable)
        // SwiftPM links the Swift runtime's image registration
        // (swift_image_constructor) into every library it builds, so a sample
        // may land there too; the slow C constructor holds the time.
        let slow = try XCTUnwrap(library.constructors.first)
        XCTAssertEqual(slow.name, "slow_init_constructor")
        XCTAssertEqual(Set(library.constructors.dropFirst().map(\.name)).subtracting(["swift_image_constructor()"]), [],
                       "no other constructor of libSlowInit.so")
        assertMeasured(library.ms, measured, "libSlowInit.so's initializer")
        XCTAssertLessThan(run.report.initializers.libraries.dropFirst().map(\.ms).max() ?? 0, measured / 4, "no other initializer comes close")

        let initializerPhase = try XCTUnwrap(run.report.phases.first { $0.kind == "initializers" })
        XCTAssertEqual(initializerPhase.name, "library initializers")
        let constructor = try XCTUnwrap(initializerPhase.functions.byTotal.first { $0.name == "slow_init_constructor" })
        XCTAssertEqual(constructor.totalSamples, slow.samples, "all of it in the library-initializers phase")
        XCTAssertEqual(constructor.module, "libSlowInit.so")
    }

    /// One call path, one root: a 150 ms function read under `_start` and
    /// again, 19-20 ms of it, under a second root at `__libc_start_call_main`
    /// (the kernel's frame-pointer chains of the first 50 ms did not reach
    /// `_start`, the stacks libunwind walked later did). Every sample after
    /// main joins under the program's `_start`; the only other large root is
    /// the loader's entry, which runs the libraries' initializers before it
    /// jumps to `_start` (perf roots them there too), and holds no more than
    /// those initializers' samples; any other root is at most 5%, as
    /// scripts/check-arm64.py asks on arm64.
    func testTheCallTreeHasOneRootForOneCallPath() throws {
        try assertOneRoot(try KnownCostsRun.perf())
    }

    func testTheCallTreeHasOneRootForOneCallPathWhenUnwoundOffline() throws {
        try assertOneRoot(try KnownCostsRun.offline())
    }

    private func assertOneRoot(_ run: KnownCostsRun.Run) throws {
        let report = run.report
        let roots = report.callTree
        let first = try XCTUnwrap(roots.first, "a call tree")
        XCTAssertEqual(first.name, "_start", "\(roots.map(\.name))")
        XCTAssertEqual(first.module, "KnownCosts")
        func samples(of name: String, in node: ProfileReport.CallNode) -> Int {
            node.name == name ? node.samples : node.children.reduce(0) { $0 + samples(of: name, in: $1) }
        }
        for name in Self.functions.map({ Self.demangled($0.0) }) + ["KnownCosts_main"] {
            let total = try XCTUnwrap(report.overall.byTotal.first { $0.name == name }, name).totalSamples
            XCTAssertEqual(samples(of: name, in: first), total, "every sample of \(name) under _start")
        }
        let initializers = report.initializers.samples
        for root in roots.dropFirst() {
            let share = Double(root.samples) / Double(report.selection.samples)
            if root.module.hasPrefix("ld-linux"), root.children.contains(where: { $0.name == "_dl_init" }) {
                XCTAssertLessThanOrEqual(root.samples, initializers + report.initializers.unattributedSamples,
                                         "the loader's entry holds the initializers: \(root.name) \(root.samples) samples")
            } else {
                XCTAssertLessThanOrEqual(share, 0.05, "a second root \(root.name) (\(root.module)): \(root.samples) of \(report.selection.samples)")
            }
        }
    }

    func testTheLazyGlobalIsNamedInThePhaseThatFirstTouchedIt() throws {
        let run = try KnownCostsRun.perf()
        try run.requireUnstarvedTimers()
        XCTAssertEqual(run.report.lazyGlobals.map(\.name), ["KnownCosts.slowGlobalTable"])
        let global = try XCTUnwrap(run.report.lazyGlobals.first)
        assertMeasured(global.ms, try run.measured("slowGlobalTable"), "slowGlobalTable's initializer")
        XCTAssertEqual(global.phases, ["functions burnt → ready"])
        let phase = try phase("functions burnt → ready", of: run.report)
        XCTAssertGreaterThanOrEqual(global.firstSeenMs, phase.startMs)
        XCTAssertLessThan(global.firstSeenMs, try XCTUnwrap(phase.endMs))
    }

    func testEveryFigureIsItsSampleCountTimesThePeriod() throws {
        for run in [try KnownCostsRun.perf(), try KnownCostsRun.posix()] {
            let sampling = try XCTUnwrap(run.timeline.sampling)
            XCTAssertEqual(run.report.sampling.samples, run.timeline.samples.count)
            // The perf clock samples user mode only and drops a period that ends in the kernel: a sample is
            // one asked period of user CPU. A POSIX timer counts user and system CPU: one period of its rate.
            let hz = sampling.clock == "perf-task-clock" ? sampling.loweredHz ?? sampling.requestedHz : sampling.effectiveHz
            XCTAssertEqual(run.report.sampling.msPerSample, 1000 / hz, accuracy: 1e-12, sampling.clock)
            // The effective rate is the samples per second of the CPU time of the threads it samples.
            let cpuNs = try XCTUnwrap(sampling.cpuNs, "the sampler records the CPU time it sampled")
            let ownNs = try XCTUnwrap(sampling.coldstartCpuNs, "the CPU of Coldstart's own threads is recorded")
            XCTAssertEqual(sampling.effectiveHz, Double(sampling.samples + sampling.dropped) * 1e9 / Double(cpuNs - ownNs),
                           accuracy: sampling.effectiveHz * 0.001, sampling.clock)
            assertTimesAreSamplesTimesPeriod(run.report)
        }
    }

    /// Coldstart's threads record their CPU over the launch, and each
    /// phase's split puts it apart from the host's user and kernel time.
    func testColdstartsThreadsCPUIsItsOwnInEachPhase() throws {
        let run = try KnownCostsRun.perf()
        let sampling = try XCTUnwrap(run.timeline.sampling)
        let ownNs = try XCTUnwrap(sampling.coldstartCpuNs)
        XCTAssertFalse(run.timeline.ownThreads.isEmpty, "the scan thread and the watcher record their CPU")
        // Their last points come as they end, just after the sampler's stop read their clocks.
        let lastNs = run.timeline.ownThreads.reduce(0.0) { $0 + Double($1.cpu.last?[1] ?? 0) }
        XCTAssertEqual(lastNs, Double(ownNs), accuracy: max(0.1 * Double(ownNs), 300_000), "the threads' CPU at their end")
        let analysis = try LaunchAnalysis(timeline: run.timeline)
        var apartMs = 0.0
        for phase in analysis.report.phases {
            guard let split = phase.kernel, let usage = phase.usage else { continue }
            XCTAssertEqual(split.userMs + split.kernelMs + (split.coldstartMs ?? 0), usage.cpuMs, accuracy: 0.001, phase.name)
            let inPhase = run.timeline.phases.first { $0.name == phase.name }.map { run.timeline.ownCpuNs(from: $0.startNs, to: $0.endNs) / 1e6 } ?? 0
            XCTAssertEqual(split.coldstartMs ?? 0, min(inPhase, usage.cpuMs), accuracy: 0.001, phase.name)
            apartMs += split.coldstartMs ?? 0
        }
        // The scan thread loads the unwinder and names the modules once main runs.
        XCTAssertGreaterThan(apartMs, 0, "some of Coldstart's CPU lies in a split phase")
        XCTAssertLessThanOrEqual(apartMs, lastNs / 1e6 + 0.001)
    }

    /// Every ms in `report` is its sample count × the period, and every % its
    /// share of the selected samples.
    private func assertTimesAreSamplesTimesPeriod(_ report: ProfileReport, file: StaticString = #filePath, line: UInt = #line) {
        let period = report.sampling.msPerSample
        var checked = 0
        func check(_ samples: Int, _ ms: Double, _ what: String, percent: Double? = nil, of whole: Int? = nil) {
            XCTAssertEqual(ms, Double(samples) * period, accuracy: 1e-9 * max(1, ms), "\(what): \(ms) ms for \(samples) samples", file: file, line: line)
            if let percent, let whole, whole > 0 {
                XCTAssertEqual(percent, Double(samples) * 100 / Double(whole), accuracy: 1e-9, "\(what) %", file: file, line: line)
            }
            checked += 1
        }
        func check(_ table: ProfileReport.FunctionTable, _ what: String) {
            check(table.samples, table.ms, what)
            for row in table.bySelf + table.byTotal {
                check(row.selfSamples, row.selfMs, "\(what): \(row.name) self", percent: row.selfPercent, of: table.samples)
                check(row.totalSamples, row.totalMs, "\(what): \(row.name) total", percent: row.totalPercent, of: table.samples)
            }
        }
        func check(_ nodes: [ProfileReport.CallNode]) {
            for node in nodes {
                check(node.samples, node.ms, "call tree \(node.name)", percent: node.percent, of: report.selection.samples)
                check(node.children)
            }
        }
        let whole = report.selection.samples
        check(whole, report.selection.ms, "selection")
        check(report.overall, "overall")
        for phase in report.phases { check(phase.functions, "phase '\(phase.name)'") }
        XCTAssertEqual(report.phases.map(\.functions.samples).reduce(0, +), whole, "each sample in one phase", file: file, line: line)
        for thread in report.threads { check(thread.samples, thread.ms, "thread \(thread.tid)", percent: thread.percent, of: whole) }
        check(report.initializers.samples, report.initializers.ms, "initializers")
        for library in report.initializers.libraries {
            check(library.samples, library.ms, library.module, percent: library.percent, of: whole)
            for constructor in library.constructors { check(constructor.samples, constructor.ms, constructor.name) }
        }
        for global in report.lazyGlobals { check(global.samples, global.ms, global.name, percent: global.percent, of: whole) }
        check(report.callTree)
        XCTAssertGreaterThan(checked, 50, "the report has figures to check", file: file, line: line)
    }

    // MARK: The sampler's own figures

    func testTheSamplingLineSaysWhatTheSamplesMayMiss() throws {
        let run = try KnownCostsRun.perf()
        let sampling = try XCTUnwrap(run.timeline.sampling)
        XCTAssertEqual(sampling.threads, "per-thread")
        // KnownCosts runs on its main thread alone: every sample is its, and
        // its clock is the only one that ran (Coldstart's own threads are
        // never sampled, and a scan that meets one of them starting must not
        // take the main thread for gone and arm it a second time).
        XCTAssertEqual(Set(run.timeline.samples.map(\.tid)), [run.timeline.process.pid])
        XCTAssertEqual(sampling.threadsSampled, 1)
        XCTAssertEqual(sampling.threadsMissed, 0)
        XCTAssertEqual(sampling.maxSamples, 10000, "COLDSTART_MAX_SAMPLES' default")
        let failures = try XCTUnwrap(sampling.unwindFailures)
        let (user, system, cpu) = try (XCTUnwrap(sampling.userNs), XCTUnwrap(sampling.systemNs), XCTUnwrap(sampling.cpuNs))
        // getrusage's total, read at nearly the same moments as the CPU clock.
        XCTAssertEqual(Double(user + system), Double(cpu), accuracy: Double(cpu) * 0.02)
        XCTAssertGreaterThan(Double(cpu), 0.8 * 350e6, "the launch burnt ~350 ms of CPU while sampled")
        let handler = try XCTUnwrap(sampling.handlerNs)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(handler.max), handler.p99)

        XCTAssertEqual(run.report.sampling.threadsSampled, sampling.threadsSampled)
        XCTAssertEqual(run.report.sampling.threadsMissed, 0)
        XCTAssertEqual(run.report.sampling.unwindFailures, failures)
        XCTAssertEqual(run.report.sampling.maxSamples, 10000)
        let text = try ColdstartTests.coldstart(["report", "--full", run.timelinePath]).stdout
        XCTAssertTrue(text.contains("  threads: \(sampling.threadsSampled ?? 0) sampled, 0 missed; unwind failures: \(failures)"), text)
        XCTAssertTrue(text.contains("; buffer: 10000 samples\n"), text)
        XCTAssertTrue(text.contains("(\(sampling.dropped) dropped; unwinder libunwind)"), text)
    }

    /// "threads: 0 sampled, 0 missed" stood beside a launch's 7 samples,
    /// all the bridge's (its clock never armed), and "6 sampled, 0 missed"
    /// where a watched thread ran and got no sample (issue 39, items 10 and
    /// 17): a thread with samples is sampled, and a watched thread that ran
    /// two periods of CPU in the window without one is missed.
    func testThreadsWithSamplesAreSampledAndThreadsThatRanWithoutOneAreMissed() throws {
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App")
        for ms in stride(from: 20.0, to: 27, by: 1) { builder.sample(at: ms, [.init(module: app, name: "main")]) }
        var document = builder.document
        var section = try XCTUnwrap(document["coldstart"] as? [String: Any])
        var sampling = try XCTUnwrap(section["sampling"] as? [String: Any])
        sampling["threadsSampled"] = 0
        sampling["threadsMissed"] = 0
        section["sampling"] = sampling
        // A worker (4243) watched running 5 ms in the window, unsampled; one
        // (4244) that ran 1 µs, which no sampler owes a sample.
        section["watch"] = [
            "requestedHz": 1000, "effectiveHz": 1000, "startNs": 5_000_000, "stopNs": 90_000_000, "ticks": 80, "cpuNs": 0,
            "threads": [[String: Any]](), "paths": [String](), "stacks": [[Any]](), "runnable": [[Any]](),
            "segments": [[4243, 30_000_000, 40_000_000, "R", "running", NSNull(), 5_000_000, 0, 0, 0, -1, -1, [String]()],
                         [4244, 30_000_000, 40_000_000, "S", "sleep", "nanosleep", 1_000, 0, 0, 0, -1, -1, [String]()]],
        ] as [String: Any]
        document["coldstart"] = section
        let timeline = try Timeline(data: JSONSerialization.data(withJSONObject: document))
        let report = try profileReport(timeline)
        XCTAssertEqual(report.sampling.threadsSampled, 1, "the main thread's samples (the bridge's) make it sampled")
        XCTAssertEqual(report.sampling.threadsMissed, 1, "the worker that ran 5 ms got none")
        XCTAssertTrue(report.text().contains("threads: 1 sampled, 1 missed"), report.text())
    }

    func testATimelineWithoutTheSamplersCountsHasNoSuchLine() throws {
        var builder = SampledTimelineBuilder()
        let app = builder.module("/opt/app/App")
        builder.sample(at: 30, [.init(module: app, name: "main")])
        let report = try profileReport(builder.timeline())
        XCTAssertNil(report.sampling.threadsSampled)
        XCTAssertNil(report.sampling.unwindFailures)
        let text = report.text()
        XCTAssertTrue(text.contains("1000 Hz asked\n  every time below"), "nothing claimed that was not recorded: \(text)")
        XCTAssertFalse(text.contains("threads:"), text)
    }

    // MARK: Symbolized, then without the binaries

    func testTheSymbolizedTimelineReportsIdenticallyWithoutTheBinaries() throws {
        let run = try KnownCostsRun.perf()
        let symbolized = try XCTUnwrap(run.symbolized)
        XCTAssertEqual(symbolized.stderr, "", "every binary was there to symbolize from")
        XCTAssertEqual(symbolized.fromFile, run.reportJSON, "the names written in are the names read from the binaries")
        XCTAssertTrue(symbolized.unavailable.allSatisfy { !FileManager.default.fileExists(atPath: $0) }, "\(symbolized.unavailable)")
        XCTAssertTrue(symbolized.unavailable.contains { $0.hasSuffix("/KnownCosts") } && symbolized.unavailable.contains { $0.hasSuffix("/libSlowInit.so") })
        // The report quotes a module's path where it names a library's
        // initializer: undo the rewrite there, every other byte must match.
        let withoutBinaries = symbolized.withoutBinaries.replacingOccurrences(of: KnownCostsRun.gone, with: "")
        XCTAssertEqual(withoutBinaries, symbolized.fromFile, "a symbolized timeline needs no binary")
        // The unsymbolized original, by contrast, lost its names with the binaries.
        XCTAssertNotEqual(symbolized.originalWithoutBinaries, run.reportJSON)
        XCTAssertFalse(symbolized.originalWithoutBinaries.contains("burnOneHundredFiftyMilliseconds"))
    }

    func testTheFlameChartIsTheMainThreadInTimeOrder() throws {
        let run = try KnownCostsRun.perf()
        try run.requireUnstarvedTimers()
        let timeline = try XCTUnwrap(run.symbolized?.timeline)
        let events = try XCTUnwrap(timeline.document["traceEvents"] as? [[String: Any]])
        let track = events.filter { ($0["tid"] as? Int) == Timeline.flameChartTid }
        XCTAssertEqual(track.filter { $0["ph"] as? String == "M" }.compactMap { ($0["args"] as? [String: Any])?["name"] as? String },
                       ["main thread (samples)"])
        // In whole nanoseconds (ts and dur are µs with three decimals), so
        // that a slice ending where the next starts compares equal.
        struct Slice {
            var name: String, startNs: Int64, endNs: Int64, samples: Int
            var start: Double { Double(startNs) / 1e6 }
            var end: Double { Double(endNs) / 1e6 }
        }
        let slices = try track.filter { $0["ph"] as? String == "X" }.map { event -> Slice in
            let ts = try XCTUnwrap((event["ts"] as? NSNumber)?.doubleValue)
            let dur = try XCTUnwrap((event["dur"] as? NSNumber)?.doubleValue)
            let samples = try XCTUnwrap((event["args"] as? [String: Any])?["samples"] as? Int)
            let startNs = Int64((ts * 1000).rounded())
            return Slice(name: try XCTUnwrap(event["name"] as? String), startNs: startNs,
                         endNs: startNs + Int64((dur * 1000).rounded()), samples: samples)
        }
        XCTAssertGreaterThan(slices.count, 10)
        XCTAssertEqual(slices.map(\.startNs), slices.map(\.startNs).sorted(), "written in time order")
        var open: [Slice] = []
        for slice in slices {
            while let last = open.last, last.endNs <= slice.startNs { open.removeLast() }
            if let parent = open.last { XCTAssertLessThanOrEqual(slice.endNs, parent.endNs, "\(slice.name) nests in \(parent.name)") }
            open.append(slice)
        }

        // Each function's slices hold exactly the main-thread samples it is on,
        // and the functions follow each other as the program ran them.
        let mainSamples = timeline.samples.filter { $0.tid == timeline.process.pid }.map { sample in
            Set(sample.frames.compactMap { timeline.symbols[$0.key]?.name })
        }
        let order = ["slow_init_constructor"] + Self.functions.map { Self.demangled($0.0) } + ["one-time initialization function for slowGlobalTable"]
        let measured = try [run.measured("constructor")] + Self.functions.map { try run.measured($0.0) } + [run.measured("slowGlobalTable")]
        var previousEndNs = Int64.min
        for (name, measuredMs) in zip(order, measured) {
            let own = slices.filter { $0.name == name }
            XCTAssertFalse(own.isEmpty, "the flame chart covers \(name)")
            guard let first = own.first, let last = own.last else { continue }
            XCTAssertEqual(own.map(\.samples).reduce(0, +), mainSamples.filter { $0.contains(name) }.count, "\(name)'s slices hold its samples")
            XCTAssertGreaterThanOrEqual(first.startNs, previousEndNs, "\(name) starts after the function before it ended")
            // A slice spans the wall time between samples: at least the CPU time burnt.
            XCTAssertGreaterThan(own.map { $0.end - $0.start }.reduce(0, +), measuredMs * (1 - Self.tolerance), name)
            previousEndNs = last.endNs
        }
        let phase = try phase("main → first burnt", of: run.report)
        let first = try XCTUnwrap(slices.first { $0.name == order[1] })
        XCTAssertGreaterThanOrEqual(first.start, phase.startMs, "the first function starts after main")
    }

    // MARK: A quiet kernel

    /// Every other test here runs while the suite holds a perf event, the
    /// best case. On a kernel no event kept warm, the sampler's first
    /// perf_event_open waits 6–25 ms for the kernel to switch its scheduler
    /// hooks on (docs/performance.md), in the middle of the libraries'
    /// initializers: the bridge's CPU-wide events must cover that wait, so
    /// the slow initializer keeps its time, and the functions after main
    /// keep theirs. Without CPU-wide events (a probe of the machine, not of
    /// the sampler) the initializer's start is unsampled: then the
    /// functions alone are checked. A quiet kernel is a perf matter: where
    /// perf_event_open is refused there is none to test.
    func testOnAQuietKernelTheInitializerAndFunctionsKeepTheirTimes() throws {
        try MachineProbes.requirePerf()
        let run = try KnownCostsRun.quiet()
        try run.requireUnstarvedTimers()
        let firstOpen = String(format: "first open on the quiet kernel %.1f ms", run.quietFirstOpenMs ?? -1)
        XCTAssertEqual(run.sampler, "perf-task-clock", firstOpen)
        for (function, _) in Self.functions {
            let name = Self.demangled(function)
            let row = try XCTUnwrap(run.report.overall.byTotal.first { $0.name == name }, "\(name); \(firstOpen)")
            assertMeasured(row.totalMs, try run.measured(function), "\(name) total; \(firstOpen)")
        }
        guard MachineProbes.cpuWideAllowed else { return }
        let library = try XCTUnwrap(run.report.initializers.libraries.first { $0.module == "libSlowInit.so" }, firstOpen)
        assertMeasured(library.ms, try run.measured("constructor"), "libSlowInit.so's initializer; \(firstOpen)")
    }

    // MARK: The POSIX timer fallback

    func testThePOSIXFallbackAttributesTheFunctions() throws {
        let run = try KnownCostsRun.posix()
        let sampling = try XCTUnwrap(run.timeline.sampling)
        XCTAssertEqual(sampling.clock, "posix-cpu-timer")
        XCTAssertEqual(run.report.sampling.clock, "posix-cpu-timer")
        try run.requireUnstarvedTimers()
        XCTAssertLessThanOrEqual(sampling.effectiveHz, sampling.requestedHz * 1.1)
        for (function, phaseName) in Self.functions {
            let name = Self.demangled(function)
            let row = try XCTUnwrap(try phase(phaseName, of: run.report).functions.byTotal.first { $0.name == name }, "\(name) in '\(phaseName)'")
            assertMeasured(row.totalMs, try run.measured(function), "\(name) total at \(sampling.effectiveHz) Hz")
        }
        // The fallback's handler walks frame pointers: the slow library
        // initializer, built without them, ends its stacks (its callers in
        // the loader are the DWARF unwinder's, perf clock only).
        XCTAssertEqual(run.report.lazyGlobals.first?.name, "KnownCosts.slowGlobalTable")
    }
}

/// KnownCosts run once per test run for each clock, from a copy of its
/// binaries (so they can be taken away), with the reports the tests compare.
enum KnownCostsRun {
    /// KnownCosts' own schedstat and rusage at `ready()` (its OwnLoad.swift).
    struct OwnLoad {
        var mainCpuNs: UInt64
        var mainWaitNs: UInt64
        /// Coldstart's threads' (the scan thread's, the watcher's).
        var otherWaitNs: UInt64
        var otherWaitMaxNs: UInt64
        var threads: Int
        var involuntarySwitches: Int
    }

    struct Run {
        /// The program's own measurements, ms, by name (see its main.swift).
        var measuredMs: [String: Double]
        var timelinePath: String
        var timeline: Timeline
        /// `coldstart report --json` while the binaries were there.
        var reportJSON: String
        var report: ProfileReport
        var symbolized: Symbolized?

        /// How long KnownCosts' threads waited for a CPU, as the program read
        /// its own schedstat and rusage at `ready()`.
        var ownLoad: OwnLoad
        /// The machine's steal while it ran (ms, summed over its CPUs).
        var stolenMs: Double
        /// The load average as it ended (for the figures only).
        var loadAverage: String
        /// Which try this was, and the first open of a perf event on the
        /// quiet kernel it ran on (nil: the suite's warm kernel).
        var attempt = 1
        var quietFirstOpenMs: Double?

        /// Whether the machine starved this run, judged only from figures
        /// the code under test has no part in (never its own timeline: a
        /// sampler arming late or losing records must fail, not skip).
        /// Coldstart's threads (the scan thread starts the perf clocks and
        /// empties their rings) waiting over 10 ms in all for a CPU miss the
        /// start-up or drop records of full rings (CI-like runs at load 3+
        /// showed 19 and 22 of the initializer's 30 ms sampled). POSIX CPU
        /// timers expire only at a tick where their thread runs: a main
        /// thread that waited over a tenth of its CPU time makes their
        /// samples few and lumpy (docs/performance.md). Steal is in neither
        /// clock of the program and in the perf task clock. The load average
        /// is a minute's mean over the machine, not this launch's: reported,
        /// never deciding.
        var starvedBecause: String? {
            var causes: [String] = []
            if ownLoad.otherWaitNs > 10_000_000 { causes.append("Coldstart's threads waited \(ownLoad.otherWaitNs / 1_000_000) ms for a CPU") }
            if sampler == "posix-cpu-timer", Double(ownLoad.mainWaitNs) > 0.1 * Double(ownLoad.mainCpuNs) {
                causes.append("the main thread waited \(ownLoad.mainWaitNs / 1_000_000) ms for a CPU beside \(ownLoad.mainCpuNs / 1_000_000) ms on one")
            }
            if stolenMs > 10 { causes.append("\(Int(stolenMs)) ms stolen by the hypervisor") }
            return causes.isEmpty ? nil : causes.joined(separator: ", ")
        }

        var sampler: String { timeline.sampling?.clock ?? "-" }

        /// This run's figures, for a failure.
        var figures: String {
            "try \(attempt)\(quietFirstOpenMs.map { String(format: " (quiet kernel, first open %.1f ms)", $0) } ?? ""): "
                + "\(starvedBecause ?? "not starved"); main thread \(ownLoad.mainCpuNs / 1_000_000) ms on a CPU, "
                + "\(ownLoad.mainWaitNs / 1_000_000) ms waiting; \(ownLoad.threads - 1) other threads waited \(ownLoad.otherWaitNs / 1_000) µs "
                + "(at most \(ownLoad.otherWaitMaxNs / 1_000) µs one); \(ownLoad.involuntarySwitches) involuntary switches; "
                + "steal \(Int(stolenMs)) ms; \(loadAverage)"
        }

        /// The figures of the tries before this one, all starved.
        var starvedTries: [String] = []

        /// Fails (never skips) a test of accuracy when every try was
        /// starved: the figures say how busy the machine was.
        func requireUnstarvedTimers(file: StaticString = #filePath, line: UInt = #line) throws {
            guard starvedBecause != nil else { return }
            let message = "the machine starved KnownCosts in all \(KnownCostsRun.attempts) tries (\(sampler)):\n"
                + (starvedTries + [figures]).joined(separator: "\n")
            XCTFail(message, file: file, line: line)
            throw Failure(description: message)
        }

        func measured(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> Double {
            try XCTUnwrap(measuredMs[name], "KnownCosts measured \(name)", file: file, line: line)
        }
    }

    struct Symbolized {
        var timeline: Timeline
        var stderr: String
        /// `coldstart report --json` of the symbolized file, binaries present.
        var fromFile: String
        /// The same once no module path it names exists.
        var withoutBinaries: String
        var unavailable: [String]
        /// The unsymbolized original's report after the binaries went.
        var originalWithoutBinaries: String
    }

    private static let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coldstart-knowncosts-\(getpid())")
    /// Prefixed to the module paths of the timeline without binaries: a directory that does not exist.
    static let gone = directory.appendingPathComponent("gone").path
    private static let removedAtExit: Void = { atexit { try? FileManager.default.removeItem(at: KnownCostsRun.directory) } }()
    private static let perfRun = Result { try record(sampler: nil, symbolize: true) }
    private static let posixRun = Result { try record(sampler: "posix", symbolize: false) }
    private static let quietRun = Result { try record(sampler: nil, symbolize: false, quietKernel: true) }
    private static let offlineRun = Result { try record(sampler: nil, symbolize: false, unwinder: "offline") }

    static func perf(file: StaticString = #filePath, line: UInt = #line) throws -> Run { try get(perfRun, file: file, line: line) }
    static func posix(file: StaticString = #filePath, line: UInt = #line) throws -> Run { try get(posixRun, file: file, line: line) }
    /// The default (perf) profile of a launch on a quiet kernel.
    static func quiet(file: StaticString = #filePath, line: UInt = #line) throws -> Run { try get(quietRun, file: file, line: line) }
    /// `COLDSTART_UNWINDER=offline`: the stack copies unwound by the reader.
    static func offline(file: StaticString = #filePath, line: UInt = #line) throws -> Run { try get(offlineRun, file: file, line: line) }

    private static func get(_ result: Result<Run, Error>, file: StaticString, line: UInt) throws -> Run {
        do {
            return try result.get()
        } catch {
            XCTFail("cannot profile KnownCosts: \(error)", file: file, line: line)
            throw error
        }
    }

    private struct Failure: Error, CustomStringConvertible { var description: String }

    private static func coldstart(_ arguments: [String]) throws -> String {
        let result = try ColdstartTests.coldstart(arguments)
        guard result.status == 0 else { throw Failure(description: "coldstart \(arguments) exited \(result.status): \(result.stderr)") }
        return result.stdout
    }

    private static func report(_ path: String) throws -> String { try coldstart(["report", "--json", "--top", "50", path]) }

    /// Runs of a profile, at most, to find one the machine's load did not
    /// starve (`Run.starvedBecause`); the first such run is tested, once.
    static let attempts = 5

    /// Runs KnownCosts (the default 1 kHz) with `COLDSTART_SAMPLER=sampler`,
    /// again while the machine starved it; with `symbolize`, symbolizes the
    /// timeline and reports on it with and without the binaries; with
    /// `unwinder`, COLDSTART_UNWINDER; with `quietKernel`, each try on a
    /// kernel no perf event kept warm (`FixturePrograms.withQuietKernel`).
    private static func record(sampler: String?, symbolize: Bool, unwinder: String? = nil, quietKernel: Bool = false) throws -> Run {
        var starved: [String] = []
        for attempt in 1...attempts {
            var run = try quietKernel
                ? FixturePrograms.withQuietKernel { firstOpenMs in
                    var run = try record(sampler: sampler, symbolize: symbolize, unwinder: unwinder, attempt: attempt, name: "quiet")
                    run.quietFirstOpenMs = firstOpenMs
                    return run
                }
                : record(sampler: sampler, symbolize: symbolize, unwinder: unwinder, attempt: attempt,
                         name: (sampler ?? "perf") + (unwinder.map { "-" + $0 } ?? ""))
            run.attempt = attempt
            run.starvedTries = starved
            if run.starvedBecause == nil || attempt == attempts { return run }
            starved.append(run.figures)
        }
        preconditionFailure("the last try returns")
    }

    private static func record(sampler: String?, symbolize: Bool, unwinder: String?, attempt: Int, name: String) throws -> Run {
        let original = URL(fileURLWithPath: try FixturePrograms.path("KnownCosts"))
        let run = directory.appendingPathComponent("\(name)-\(attempt)")
        let bin = run.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        removedAtExit
        // Its RUNPATH has $ORIGIN: the copy loads the copied library.
        for name in ["KnownCosts", "libSlowInit.so"] {
            let source = original.deletingLastPathComponent().appendingPathComponent(name)
            try FileManager.default.copyItem(at: source, to: bin.appendingPathComponent(name))
        }
        let path = run.appendingPathComponent("launch.json").path
        let stolenBefore = stolenTicks()
        let result = try runProcess(bin.appendingPathComponent("KnownCosts").path, environment: ["COLDSTART": path, "COLDSTART_SAMPLER": sampler,
                                                                                                  "COLDSTART_UNWINDER": unwinder])
        let stolen = stolenMs(since: stolenBefore)
        guard result.status == 0 else { throw Failure(description: "KnownCosts exited \(result.status): \(result.stderr)") }
        let measured = try JSONSerialization.jsonObject(with: Data(result.stderr.utf8)) as? [String: Any]
        let measuredMs = (measured ?? [:]).compactMapValues { ($0 as? NSNumber)?.doubleValue }
        let load = try XCTUnwrap(measured?["ownLoad"] as? [String: Any], "KnownCosts' own load figures: \(result.stderr)")
        func figure(_ key: String) throws -> Int { try XCTUnwrap((load[key] as? NSNumber)?.intValue, "ownLoad.\(key)") }
        let ownLoad = try OwnLoad(mainCpuNs: UInt64(figure("mainCpuNs")), mainWaitNs: UInt64(figure("mainWaitNs")),
                                  otherWaitNs: UInt64(figure("otherWaitNs")), otherWaitMaxNs: UInt64(figure("otherWaitMaxNs")),
                                  threads: figure("threads"), involuntarySwitches: figure("involuntarySwitches"))
        let timeline = try Timeline(contentsOf: path)
        let reportJSON = try report(path)
        struct Document: Decodable { var profile: ProfileReport }
        let profile = try JSONDecoder().decode(Document.self, from: Data(reportJSON.utf8)).profile
        var recorded = Run(measuredMs: measuredMs, timelinePath: path, timeline: timeline, reportJSON: reportJSON, report: profile,
                           ownLoad: ownLoad, stolenMs: stolen, loadAverage: MachineProbes.loadAverage())
        guard symbolize else { return recorded }

        let symbolizedPath = run.appendingPathComponent("symbolized.json").path
        let symbolizeRun = try ColdstartTests.coldstart(["symbolize", path, "-o", symbolizedPath])
        guard symbolizeRun.status == 0 else { throw Failure(description: "symbolize exited \(symbolizeRun.status): \(symbolizeRun.stderr)") }
        let fromFile = try report(symbolizedPath)

        // Take the binaries away: delete the copies, and point every module
        // still on disk (libc, the Swift runtime, …) at a path that is not,
        // keeping its file name (the report names modules by it).
        try FileManager.default.removeItem(at: bin)
        let symbolizedTimeline = try Timeline(contentsOf: symbolizedPath)
        var document = symbolizedTimeline.document
        var section = try XCTUnwrap(document["coldstart"] as? [String: Any])
        var modules = try XCTUnwrap(section["modules"] as? [[String: Any]])
        for index in modules.indices {
            guard let modulePath = modules[index]["path"] as? String, FileManager.default.fileExists(atPath: modulePath) else { continue }
            modules[index]["path"] = gone + modulePath
        }
        section["modules"] = modules
        document["coldstart"] = section
        let unavailablePath = run.appendingPathComponent("unavailable.json").path
        var json = JSONText(escaping: .plain)
        try json.document(document)
        try Data(json.bytes).write(to: URL(fileURLWithPath: unavailablePath))
        recorded.symbolized = Symbolized(
            timeline: symbolizedTimeline, stderr: symbolizeRun.stderr, fromFile: fromFile,
            withoutBinaries: try report(unavailablePath),
            unavailable: modules.compactMap { $0["path"] as? String }.filter { $0.hasPrefix("/") },
            originalWithoutBinaries: try report(path))
        return recorded
    }
}
