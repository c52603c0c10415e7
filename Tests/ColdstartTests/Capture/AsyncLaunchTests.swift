@testable import ColdstartAnalysis
import ColdstartExport
import Foundation
import XCTest

/// An async-main service's launch end to end (issue 11): AsyncService
/// (Tests/Fixtures) awaits a sleep, opens a store with child tasks, burns CPU
/// and reads a FIFO on the main actor, one phase each, printing what it
/// measured itself. The report must follow the critical path onto the
/// dispatch worker that runs the main actor: the burn as CPU, the sleep as
/// suspended, the read as blocked on its file, and nothing on the parked
/// first thread's rt_sigsuspend.
final class AsyncLaunchTests: XCTestCase {
    struct Run {
        var measured: [String: Double]
        var timeline: Timeline
        var analysis: LaunchAnalysis
        var blocked: LaunchReport.BlockedTime
        var fifo: String

        func phase(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> LaunchReport.BlockedTime.PhaseSplit {
            try XCTUnwrap(blocked.phases.first { $0.name == name }, "phase '\(name)' in \(blocked.phases.map(\.name))", file: file, line: line)
        }

        func figure(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> Double {
            try XCTUnwrap(measured[name], "AsyncService printed no '\(name)' line", file: file, line: line)
        }
    }

    private static let asyncRun: Result<Run, Error> = Result { try profiledRun() }
    private static let semaphoreRun: Result<Run, Error> = Result { try profiledRun(["--sync-semaphore"]) }

    /// A busy machine can start the watcher late, and the report then says
    /// that part of the first phase was not watched; these tests check what
    /// is attributed once it is watched, so such a launch is run again
    /// (at most twice), as KnownCostsRun does for a late scan thread.
    private static func profiledRun(_ arguments: [String] = []) throws -> Run {
        var run = try profiledRunOnce(arguments)
        for _ in 0..<2 {
            guard let first = run.blocked.phases.first(where: { $0.name == "main → config loaded" }),
                  let sleep = run.measured["sleep"], first.notWatchedMs > 0.1 * sleep else { break }
            run = try profiledRunOnce(arguments)
        }
        return run
    }

    private static func profiledRunOnce(_ arguments: [String]) throws -> Run {
        let service = try FixturePrograms.path("AsyncService")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coldstart-async-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let timelinePath = directory.appendingPathComponent("launch.json").path
        let fifo = directory.appendingPathComponent("settings.fifo").path
        let process = try runProcess(service, [fifo] + arguments, environment: ["COLDSTART": timelinePath])
        guard process.status == 0 else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey:
                "AsyncService failed (status \(process.status)): \(process.stderr)"])
        }
        var measured: [String: Double] = [:]
        for line in process.stdout.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 2, let ms = Double(fields[1]) { measured[String(fields[0])] = ms }
        }
        let timeline = try Timeline(contentsOf: timelinePath)
        let analysis = try LaunchAnalysis(timeline: timeline)
        let blocked = try XCTUnwrap(analysis.report.blockedTime, "the timeline has no watch section")
        return Run(measured: measured, timeline: timeline, analysis: analysis, blocked: blocked, fifo: fifo)
    }

    private func assertWithin25Percent(_ value: Double, of truth: Double, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(value, truth, accuracy: truth * 0.25, "\(what): attributed \(value) ms, measured \(truth) ms", file: file, line: line)
    }

    private func assertNothingBlamesTheParkedThread(_ run: Run, file: StaticString = #filePath, line: UInt = #line) {
        for split in [run.blocked.launch] + run.blocked.phases {
            XCTAssertFalse(split.blocked.contains { $0.what.contains("rt_sigsuspend") }, "phase '\(split.name)'", file: file, line: line)
        }
        XCTAssertFalse(run.blocked.callSites.contains { $0.what.contains("rt_sigsuspend") }, file: file, line: line)
        XCTAssertFalse(run.blocked.offCPUFunctions.contains { $0.name.contains("sigsuspend") }, file: file, line: line)
    }

    // MARK: - async main

    func testTheBurnIsCPUOnTheCriticalPathOffTheMainThread() throws {
        let run = try Self.asyncRun.get()
        let burn = try run.phase("store opened → warmed up")
        assertWithin25Percent(burn.runningMs, of: try run.figure("burn"), "main-actor burn as CPU on the path")
        XCTAssertEqual(burn.onPath.count, 1)
        XCTAssertNotEqual(burn.onPath.first?.tid, run.timeline.process.pid, "the main actor runs on a dispatch worker after the first await")
        XCTAssertTrue(burn.onPath.first?.thread.hasPrefix("dispatch worker") ?? false, "\(burn.onPath)")

        // The findings follow the path to that worker: the burn, the launch's
        // largest cost, leads (the main thread's samples alone never named it).
        let findings = try XCTUnwrap(run.analysis.report.findings)
        let first = try XCTUnwrap(findings.first)
        XCTAssertTrue(first.title.hasPrefix("slow function AsyncService.burnCPU("), findings.map(\.title).joined(separator: "\n"))
        assertWithin25Percent(first.ms, of: try run.figure("burn"), "the burn's finding")
        XCTAssertFalse(findings.contains { $0.title.hasSuffix(" _init") }, "PLT stubs are not crti's _init")
    }

    func testTheSleepIsSuspendedNotBlocked() throws {
        let run = try Self.asyncRun.get()
        let sleep = try run.phase("main → config loaded")
        assertWithin25Percent(sleep.suspendedMs, of: try run.figure("sleep"), "Task.sleep as suspended")
        XCTAssertLessThan(sleep.blockedMs, 0.25 * (try run.figure("sleep")))
        XCTAssertEqual(sleep.onPath.first?.tid, run.timeline.process.pid, "the launch starts on the main thread")
    }

    func testTheBlockingReadOnTheMainActorIsBlockedOnItsFileWithItsCallSite() throws {
        let run = try Self.asyncRun.get()
        let read = try run.phase("warmed up → settings read")
        let onFile = read.blocked.filter { $0.cause == "file-read" && $0.what.hasSuffix(run.fifo) }.map(\.ms).reduce(0, +)
        assertWithin25Percent(onFile, of: try run.figure("read"), "the FIFO read as blocked")
        let site = try XCTUnwrap(run.blocked.callSites.first { $0.what.hasSuffix(run.fifo) })
        XCTAssertEqual(site.function, "AsyncService.LateFIFO.readBlocking() -> Double")
        XCTAssertTrue(site.thread.hasPrefix("dispatch worker"), site.thread)
    }

    func testTheParkedFirstThreadIsANoteAndNeverACause() throws {
        let run = try Self.asyncRun.get()
        assertNothingBlamesTheParkedThread(run)
        let parked = try XCTUnwrap(run.blocked.firstThreadParked)
        XCTAssertEqual(parked.call, "rt_sigsuspend")
        let group = try run.phase("config loaded → store opened")
        XCTAssertGreaterThan(group.suspendedMs, 0.5 * group.wallMs, "the main actor awaits its child tasks")
        XCTAssertGreaterThan(group.othersCPUWhileSuspendedMs, 20, "while the children ran 4 × 10 ms of CPU elsewhere")
    }

    func testASpanAcrossTheAwaitKeepsBothThreads() throws {
        let run = try Self.asyncRun.get()
        let span = try XCTUnwrap(run.timeline.spans.first { $0.name == "load config" })
        XCTAssertEqual(span.tid, run.timeline.process.pid, "begun on the main thread")
        XCTAssertNotEqual(span.endTid, span.tid, "ended where the continuation resumed")
        let row = try XCTUnwrap(try LaunchAnalysis(timeline: run.timeline).report.spans.first { $0.name == "load config" })
        // A loaded machine has failed this twice in CI-like runs and never
        // when tried here: say what the watcher saw, so the log explains it.
        let seen = [span.tid, span.endTid].map { tid in
            let look = run.timeline.watch?.threads.first { $0.tid == tid }
            let segments = (run.timeline.watch?.segments ?? []).filter { $0.tid == tid }.prefix(4)
                .map { "[\($0.startNs)-\($0.endNs) \($0.state) \($0.cause)]" }
            return "tid \(tid): first look \(look.map { "\($0.firstNs) cpu \($0.cpuBeforeNs)" } ?? "none"), segments \(segments)"
        }
        let context = "span \(span.beginNs)-\(span.endNs) (cpu \(span.beginThreadCpuNs.map(String.init) ?? "-") → \(span.endThreadCpuNs.map(String.init) ?? "-")); "
            + seen.joined(separator: "; ")
        XCTAssertEqual(row.ranOn?.first?.tid, span.tid, context)
        XCTAssertEqual(row.ranOn?.last?.tid, span.endTid, context)
    }

    func testTheFlameChartFollowsThePathOntoTheWorker() throws {
        let run = try Self.asyncRun.get()
        let html = HTMLReport.render(run.analysis, source: "launch.json")
        XCTAssertTrue(html.contains("Where the critical path blocked"))
        XCTAssertTrue(html.contains("dispatch_main()"), "the parked first thread is explained")
        // libdispatch's workers block SIGURG (the sampler's signal) but not
        // SIGPROF, which the sampler uses for them: they are sampled.
        let stacks = try XCTUnwrap(run.analysis.stacks)
        XCTAssertTrue(stacks.samples.contains { $0.tid != run.timeline.process.pid }, "the dispatch workers were sampled")
        XCTAssertTrue(html.contains("Flame chart of the launch&#39;s critical path") || html.contains("Flame chart of the launch's critical path"))
        let burnPhase = try XCTUnwrap(run.timeline.phases.first { $0.name == "store opened → warmed up" })
        let burnRuns = stacks.runsOnCriticalPath().filter {
            stacks.functions[$0.function].name.hasPrefix("AsyncService.burnCPU") && $0.startNs >= burnPhase.startNs
        }
        let sampledMs = Double(burnRuns.map(\.samples).reduce(0, +)) * stacks.nsPerSample / 1e6
        assertWithin25Percent(sampledMs, of: try run.figure("burn"), "the burn in the critical path's flame chart")
        XCTAssertTrue(stacks.runs(thread: run.timeline.process.pid).allSatisfy { $0.startNs < burnPhase.startNs },
                      "the main thread's own chart is empty after it parked")
    }

    // MARK: - a synchronous main blocked on a semaphore while a Task works

    func testWithASemaphoreTheWaitingMainThreadIsNotTheCause() throws {
        let run = try Self.semaphoreRun.get()
        XCTAssertNil(run.blocked.firstThreadParked, "a synchronous main never reaches dispatch_main")
        assertWithin25Percent(try run.phase("main → config loaded").suspendedMs, of: try run.figure("sleep"), "Task.sleep as suspended")
        assertWithin25Percent(try run.phase("store opened → warmed up").runningMs, of: try run.figure("burn"), "the burn as CPU")
        let read = try run.phase("warmed up → settings read")
        assertWithin25Percent(read.blocked.filter { $0.what.hasSuffix(run.fifo) }.map(\.ms).reduce(0, +),
                              of: try run.figure("read"), "the FIFO read as blocked")
        // The main thread waits on the semaphore the whole launch (hundreds
        // of ms); only the last look before it woke to call ready() — a few
        // ms on a loaded machine, whose watcher misses looks — may show.
        let onMain = run.blocked.callSites.filter { $0.thread == "main thread" && $0.cause == "lock" }.map(\.ms).reduce(0, +)
        XCTAssertLessThan(onMain, 10,
                          "the semaphore wait is the main thread's, off the path: \(run.blocked.callSites.map { ($0.what, $0.ms) })")
    }
}
