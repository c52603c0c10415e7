import ColdstartAnalysis
import Foundation
import XCTest

/// End to end: the example app, linked with Coldstart, run as a user would.
final class LaunchTests: XCTestCase {
    private var example: String!
    private var directory: URL!

    override func setUpWithError() throws {
        example = try Products.path("ServiceStartup")
        directory = try makeTemporaryDirectory(for: self)
    }

    private func timelinePath(_ name: String = "launch.json") -> String {
        directory.appendingPathComponent(name).path
    }

    private func assertPhasesCoverTheLaunch(_ timeline: Timeline, file: StaticString = #filePath, line: UInt = #line) {
        let phases = timeline.phases
        XCTAssertEqual(phases.first?.startNs, 0, "the first phase starts at process creation", file: file, line: line)
        XCTAssertEqual(phases.first?.name, "kernel exec + loader", file: file, line: line)
        XCTAssertEqual(phases.dropFirst().prefix(2).map(\.name), ["Coldstart set-up", "library initializers"], file: file, line: line)
        XCTAssertEqual(phases.prefix(3).map(\.kind), ["loader", "profiler", "initializers"], file: file, line: line)
        XCTAssertEqual(phases.dropFirst().first?.startNs, timeline.launch.earliestInitNs, file: file, line: line)
        XCTAssertEqual(phases.dropFirst().first?.endNs, timeline.launch.setupEndNs, "the profiler's own set-up is a phase of its own", file: file, line: line)
        for (previous, next) in zip(phases, phases.dropFirst()) {
            XCTAssertEqual(previous.endNs, next.startNs, "phases are contiguous: \(previous.name) → \(next.name)", file: file, line: line)
        }
        for phase in phases {
            XCTAssertGreaterThanOrEqual(phase.durationNs, 0, "\(phase.name) is non-negative", file: file, line: line)
        }
        XCTAssertEqual(phases.map(\.durationNs).reduce(0, +), timeline.launch.endNs, "phases add up to the launch", file: file, line: line)
        XCTAssertEqual(phases.last?.endNs, timeline.launch.endNs, file: file, line: line)
    }

    func testProfiledLaunchWritesPhasesUpToReady() throws {
        let result = try runProcess(example, environment: ["COLDSTART": timelinePath()])
        XCTAssertEqual(result.status, 0)
        XCTAssertEqual(result.stderr, "", "profiling prints nothing")
        let timeline = try Timeline(contentsOf: timelinePath())
        XCTAssertTrue(timeline.launch.completed)
        XCTAssertEqual(timeline.launch.endReason, "ready")
        let ready = try XCTUnwrap(timeline.launch.readyNs, "ready() is recorded")
        XCTAssertEqual(ready, timeline.launch.endNs)
        assertPhasesCoverTheLaunch(timeline)
        XCTAssertEqual(timeline.phases.map(\.name).suffix(3), [
            "main → config loaded", "config loaded → store opened", "store opened → ready",
        ])
        let earliest = try XCTUnwrap(timeline.launch.earliestInitNs)
        XCTAssertLessThan(earliest, timeline.launch.mainNs, ".preinit_array runs before the executable's constructor")
        // No launcher: estimated from the main thread's CPU and run-queue time,
        // or the tick when the thread slept while loading.
        XCTAssertTrue(["thread-cpu", "proc-stat"].contains(timeline.launch.startSource), timeline.launch.startSource)
        XCTAssertLessThanOrEqual(timeline.launch.startPrecisionNs, 1_000_000_000 / UInt64(sysconf(Int32(_SC_CLK_TCK))))
        XCTAssertEqual(timeline.rusage.map(\.at), ["earliestInit", "setupEnd", "main", "ready"])
        let faults = timeline.rusage.map(\.usage.minorFaults)
        XCTAssertEqual(faults, faults.sorted(), "snapshots count since exec, so they only grow")
        XCTAssertGreaterThan(faults.first ?? 0, 0, "the loader faults pages in before any user code")
        XCTAssertEqual(Set(timeline.spans.map(\.name)), ["read config", "open store", "warm cache"])
        XCTAssertTrue(timeline.spans.allSatisfy { !$0.unfinished && $0.durationNs >= 0 })
        XCTAssertEqual(timeline.process.executable, URL(fileURLWithPath: example).resolvingSymlinksInPath().path)
        XCTAssertFalse(try Data(contentsOf: URL(fileURLWithPath: timelinePath())).isEmpty)
        // The Chrome Trace Event side of the file: what Perfetto reads.
        let root = try XCTUnwrap(timeline.document["traceEvents"] as? [[String: Any]])
        XCTAssertEqual(root.filter { $0["cat"] as? String == "phase" }.count, timeline.phases.count)
        XCTAssertTrue(root.contains { $0["ph"] as? String == "i" && $0["name"] as? String == "ready" })
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".tmp.") }
        XCTAssertEqual(leftovers, [], "the temporary file is renamed into place")
    }

    func testLauncherTimestampMakesTheStartExact() throws {
        var before = timespec()
        clock_gettime(CLOCK_BOOTTIME, &before)
        let spawnNs = UInt64(before.tv_sec) * 1_000_000_000 + UInt64(before.tv_nsec)
        let result = try runProcess(example, environment: [
            "COLDSTART": timelinePath(), "COLDSTART_SPAWN_NS": String(spawnNs),
        ])
        var after = timespec()
        clock_gettime(CLOCK_BOOTTIME, &after)
        let outsideNs = Int64(UInt64(after.tv_sec) * 1_000_000_000 + UInt64(after.tv_nsec) - spawnNs)
        XCTAssertEqual(result.status, 0)
        let timeline = try Timeline(contentsOf: timelinePath())
        XCTAssertEqual(timeline.launch.startSource, "spawn-env")
        XCTAssertEqual(timeline.launch.startPrecisionNs, 0)
        // The recorded start is the launcher's timestamp, converted to CLOCK_MONOTONIC.
        let boot = try XCTUnwrap(timeline.launch.bootMinusMonotonicNs)
        XCTAssertLessThanOrEqual(abs(Int64(timeline.launch.startNs + boot) - Int64(spawnNs)), 100_000, "within 0.1 ms")
        assertPhasesCoverTheLaunch(timeline)
        // From outside, the whole run (spawn → exit observed) bounds the launch,
        // and the loader phase is a positive part of it.
        let loader = timeline.phases[0].durationNs
        XCTAssertGreaterThan(loader, 0)
        XCTAssertLessThan(timeline.launch.endNs, outsideNs)
    }

    func testProfilingOffWritesNothingAndChangesNothing() throws {
        let plain = try runProcess(example, currentDirectory: directory.path)
        for value in [nil, "", "0"] as [String?] {
            let off = try runProcess(example, environment: ["COLDSTART": value], currentDirectory: directory.path)
            XCTAssertEqual(off.status, plain.status)
            XCTAssertEqual(off.stdout, plain.stdout)
            XCTAssertEqual(off.stderr, "")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), [], "no timeline written")
        // Profiling on leaves stdout and the exit status alone too.
        let on = try runProcess(example, environment: ["COLDSTART": "1"], currentDirectory: directory.path)
        XCTAssertEqual(on.stdout, plain.stdout)
        XCTAssertEqual(on.status, plain.status)
    }

    func testDefaultFileNameInCurrentOrChosenDirectory() throws {
        let here = try runProcess(example, environment: ["COLDSTART": "1"], currentDirectory: directory.path)
        XCTAssertEqual(here.status, 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        XCTAssertEqual(files.count, 1)
        XCTAssertTrue(files[0].hasPrefix("coldstart-ServiceStartup-") && files[0].hasSuffix(".json"), files[0])
        let pid = try Timeline(contentsOf: directory.appendingPathComponent(files[0]).path).process.pid
        XCTAssertEqual(files[0], "coldstart-ServiceStartup-\(pid).json")

        let chosen = directory.appendingPathComponent("runs")
        try FileManager.default.createDirectory(at: chosen, withIntermediateDirectories: true)
        _ = try runProcess(example, environment: ["COLDSTART": "1", "COLDSTART_DIR": chosen.path], currentDirectory: "/")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: chosen.path).count, 1)
    }

    func testBadSettingsTurnProfilingOffWithOneLine() throws {
        let plain = try runProcess(example)
        let cases: [([String: String?], String)] = [
            (["COLDSTART": "yes"], "COLDSTART must be 0, 1 or a path ending in .json"),
            (["COLDSTART": "/nonexistent-dir/x.json"], "cannot write the timeline to /nonexistent-dir"),
            (["COLDSTART": "1", "COLDSTART_DIR": "/proc/1"], "cannot write the timeline to /proc/1"),
        ]
        for (environment, message) in cases {
            let result = try runProcess(example, environment: environment, currentDirectory: directory.path)
            XCTAssertEqual(result.status, plain.status, "\(environment)")
            XCTAssertEqual(result.stdout, plain.stdout)
            let lines = result.stderr.split(separator: "\n")
            XCTAssertEqual(lines.count, 1, "exactly one line on stderr: \(result.stderr)")
            XCTAssertTrue(result.stderr.hasPrefix("coldstart: ") && result.stderr.contains(message), result.stderr)
            XCTAssertTrue(result.stderr.contains("profiling off"), result.stderr)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), [])
    }

    func testSigtermBeforeReadyIsRecordedAsAbandoned() throws {
        let out = directory.appendingPathComponent("stdout.txt")
        XCTAssertTrue(FileManager.default.createFile(atPath: out.path, contents: nil))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: example)
        process.arguments = ["--wait-before-ready"]
        process.environment = ["COLDSTART": timelinePath(), "PATH": "/usr/bin:/bin"]
        process.standardOutput = try FileHandle(forWritingTo: out)
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, !(try String(contentsOf: out, encoding: .utf8)).contains("waiting before ready") {
            usleep(10_000)
        }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal)
        XCTAssertEqual(process.terminationStatus, SIGTERM, "the exit status is the signal's")

        let timeline = try Timeline(contentsOf: timelinePath())
        XCTAssertFalse(timeline.launch.completed)
        XCTAssertEqual(timeline.launch.endReason, "signal")
        XCTAssertEqual(timeline.launch.signal, Int(SIGTERM))
        XCTAssertEqual(timeline.launch.signalName, "SIGTERM")
        XCTAssertNil(timeline.launch.readyNs)
        XCTAssertEqual(timeline.launch.endPhase, "store opened → SIGTERM", "names the phase it was cut short in")
        assertPhasesCoverTheLaunch(timeline)
        XCTAssertEqual(timeline.document["otherData"].flatMap { ($0 as? [String: Any])?["completed"] as? Bool }, false)
    }

    func testErrorExitBeforeReadyIsAbandonedAndKeepsTheStatus() throws {
        let result = try runProcess(example, ["--fail-before-ready"], environment: ["COLDSTART": timelinePath()])
        XCTAssertEqual(result.status, 3)
        XCTAssertEqual(result.stderr, "service: cannot bind port 8080\n", "the host's own output only")
        let timeline = try Timeline(contentsOf: timelinePath())
        XCTAssertFalse(timeline.launch.completed)
        XCTAssertEqual(timeline.launch.endReason, "error-exit")
        XCTAssertEqual(timeline.launch.exitStatus, 3)
        XCTAssertEqual(timeline.phases.last?.name, "store opened → exit(3)")
        assertPhasesCoverTheLaunch(timeline)
    }

    func testNormalExitWithoutReadyCompletesTheLaunch() throws {
        let result = try runProcess(example, ["--no-ready"], environment: ["COLDSTART": timelinePath()])
        XCTAssertEqual(result.status, 0)
        let timeline = try Timeline(contentsOf: timelinePath())
        XCTAssertTrue(timeline.launch.completed, "a command-line tool's launch ends at a normal exit")
        XCTAssertEqual(timeline.launch.endReason, "exit")
        XCTAssertEqual(timeline.launch.exitStatus, 0)
        XCTAssertNil(timeline.launch.readyNs)
        XCTAssertEqual(timeline.phases.last?.name, "store opened → exit(0)")
        // Without ready() every mark is still part of the launch.
        XCTAssertTrue(timeline.marks.allSatisfy { !$0.extended })
        assertPhasesCoverTheLaunch(timeline)
    }

    func testMarksAfterReadyAreExtended() throws {
        let result = try runProcess(example, environment: ["COLDSTART": timelinePath(), "COLDSTART_EXTEND_MS": "5000"])
        XCTAssertEqual(result.status, 0)
        let timeline = try Timeline(contentsOf: timelinePath())
        let served = try XCTUnwrap(timeline.marks.first { $0.name == "first request served" })
        XCTAssertTrue(served.extended)
        XCTAssertFalse(served.phaseBoundary)
        XCTAssertGreaterThan(served.ns, try XCTUnwrap(timeline.launch.readyNs))
        XCTAssertEqual(timeline.launch.endReason, "ready", "the exit during the extension does not change how the launch ended")
        XCTAssertEqual(timeline.phases.last?.name, "store opened → ready")
    }
}
