@testable import ColdstartAnalysis
@testable import ColdstartText
import Foundation
import XCTest

/// Timelines written by real runs, and broken ones (Fixtures/README.md).
enum Fixtures {
    static let directory: URL = Bundle.module.resourceURL!.appendingPathComponent("Fixtures")
    static let good = ["ready.json", "sigterm.json", "error-exit.json", "exit.json", "threads.json"]

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static func timeline(_ name: String) throws -> Timeline { try Timeline(contentsOf: path(name)) }

    static func report(_ name: String) throws -> LaunchReport { try LaunchAnalysis(timeline: timeline(name)).report }
}

/// A small timeline in the file format, for cases no real run produces.
private func syntheticTimeline(
    endNs: Int64 = 100_000_000,
    phases: [(name: String, start: Int64, end: Int64)] = [
        ("kernel exec + loader", 0, 10_000_000),
        ("library initializers", 10_000_000, 12_000_000),
        ("main → ready", 12_000_000, 100_000_000),
    ],
    marks: [[String: Any]] = [],
    spans: [[String: Any]] = [],
    launch: [String: Any] = [:],
    dropped: [String: Any] = ["events": 0, "nameBytes": 0]
) throws -> Timeline {
    var launchSection: [String: Any] = [
        "startNs": 1_000_000_000, "startSource": "proc-stat", "startPrecisionNs": 10_000_000,
        "earliestInitNs": 10_000_000, "mainNs": 12_000_000, "readyNs": endNs, "endNs": endNs,
        "completed": true, "endReason": "ready",
    ]
    launchSection.merge(launch) { _, new in new }
    let section: [String: Any] = [
        "version": 1,
        "launch": launchSection,
        "process": ["pid": 42, "executable": "/usr/bin/app", "kernelRelease": "6.1.0", "swiftVersion": "6.3"],
        "phases": phases.map { ["name": $0.name, "kind": "app", "startNs": $0.start, "endNs": $0.end, "rusage": NSNull()] },
        "marks": marks,
        "spans": spans,
        "rusage": [Any](),
        "threads": [["tid": 42, "name": "main"]],
        "dropped": dropped,
    ]
    let data = try JSONSerialization.data(withJSONObject: ["traceEvents": [], "coldstart": section])
    return try Timeline(data: data)
}

private func mark(_ name: String, at ns: Int64, boundary: Bool = false, extended: Bool = false) -> [String: Any] {
    ["name": name, "ns": ns, "tid": 42, "phaseBoundary": boundary, "extended": extended]
}

private func span(_ name: String, from begin: Int64, to end: Int64, unfinished: Bool = false) -> [String: Any] {
    ["name": name, "beginNs": begin, "endNs": end, "tid": 42, "endTid": 42, "unfinished": unfinished]
}

final class LaunchReportTests: XCTestCase {
    func testPhasesAreInOrderContiguousAndTheirSharesSumToTheLaunch() throws {
        for name in Fixtures.good {
            let report = try Fixtures.report(name)
            XCTAssertGreaterThanOrEqual(report.phases.count, 3, name)
            XCTAssertEqual(report.phases[0].name, "kernel exec + loader", name)
            XCTAssertEqual(report.phases[0].kind, "loader", name)
            XCTAssertEqual(report.phases[0].startMs, 0, name)
            XCTAssertEqual(report.phases[1].kind, "initializers", name)
            for (before, after) in zip(report.phases, report.phases.dropFirst()) {
                XCTAssertEqual(before.startMs + before.durationMs, after.startMs, accuracy: 1e-9, "\(name): \(before.name) → \(after.name)")
            }
            for phase in report.phases {
                XCTAssertGreaterThanOrEqual(phase.durationMs, 0, "\(name): \(phase.name)")
                XCTAssertEqual(phase.sharePercent, phase.durationMs / report.launch.totalMs * 100, accuracy: 1e-9)
            }
            XCTAssertEqual(report.phases.map(\.sharePercent).reduce(0, +), 100, accuracy: 1e-6, name)
            XCTAssertEqual(report.phases.map(\.durationMs).reduce(0, +), report.launch.totalMs, accuracy: 1e-6, name)
        }
    }

    func testPhaseRowsCarryTheTimelinesFiguresInMilliseconds() throws {
        let timeline = try Fixtures.timeline("ready.json")
        let report = try LaunchAnalysis(timeline: timeline).report
        XCTAssertEqual(report.phases.map(\.name), timeline.phases.map(\.name))
        XCTAssertEqual(report.phases.map(\.name), [
            "kernel exec + loader", "library initializers", "main → config loaded",
            "config loaded → store opened", "store opened → ready",
        ])
        for (row, phase) in zip(report.phases, timeline.phases) {
            XCTAssertEqual(row.startMs, Double(phase.startNs) / 1e6, accuracy: 1e-9)
            XCTAssertEqual(row.durationMs, Double(phase.durationNs) / 1e6, accuracy: 1e-9)
            let rusage = try XCTUnwrap(phase.rusage)
            let usage = try XCTUnwrap(row.usage)
            XCTAssertEqual(usage.minorFaults, rusage.minorFaults)
            XCTAssertEqual(usage.majorFaults, rusage.majorFaults)
            XCTAssertEqual(usage.voluntarySwitches, rusage.voluntarySwitches)
            XCTAssertEqual(usage.involuntarySwitches, rusage.involuntarySwitches)
            XCTAssertEqual(usage.cpuMs, Double(rusage.userNs + rusage.systemNs) / 1e6, accuracy: 1e-9)
        }
        XCTAssertEqual(report.launch.totalMs, Double(timeline.launch.endNs) / 1e6, accuracy: 1e-9)
        XCTAssertEqual(report.launch.readyMs, report.launch.totalMs)
        XCTAssertEqual(report.launch.mainMs, report.phases[2].startMs, accuracy: 1e-9)
        XCTAssertEqual(report.launch.clock, "CLOCK_MONOTONIC")
        XCTAssertEqual(report.launch.pid, timeline.process.pid)
    }

    func testABoundaryMarkBelongsToThePhaseItEndsAndAnExtendedMarkToNone() throws {
        let report = try Fixtures.report("ready.json")
        XCTAssertEqual(report.marks.map(\.name), ["config loaded", "store opened", "first request served"])
        XCTAssertEqual(report.marks[0].phase, "main → config loaded")
        XCTAssertTrue(report.marks[0].phaseBoundary)
        XCTAssertEqual(report.marks[1].phase, "config loaded → store opened")
        let extended = report.marks[2]
        XCTAssertTrue(extended.extended)
        XCTAssertNil(extended.phase)
        XCTAssertGreaterThan(extended.offsetMs, report.launch.totalMs)
        XCTAssertEqual(extended.thread, "main")
    }

    func testAMarkOnAnotherThreadFallsInThePhaseRunningAtTheTime() throws {
        let report = try Fixtures.report("threads.json")
        let mark = try XCTUnwrap(report.marks.first { $0.name == "index loaded" })
        XCTAssertFalse(mark.phaseBoundary)
        XCTAssertEqual(mark.phase, "flags parsed → ready")
        XCTAssertNotEqual(mark.tid, report.launch.pid)
    }

    func testSpansAreSlowestFirstWithThreadPhaseAndUnfinishedFlag() throws {
        let report = try Fixtures.report("threads.json")
        XCTAssertEqual(report.spans.map(\.name), ["connect upstream", "load index (worker)", "parse flags"])
        let durations = report.spans.map(\.durationMs)
        XCTAssertEqual(durations, durations.sorted(by: >))
        let open = report.spans[0]
        XCTAssertTrue(open.unfinished)
        XCTAssertEqual(open.startMs + open.durationMs, report.launch.totalMs, accuracy: 1e-9, "an open span ends with the launch")
        XCTAssertEqual(open.thread, "main")
        XCTAssertEqual(open.phase, "main → flags parsed")
        let worker = report.spans[1]
        XCTAssertFalse(worker.unfinished)
        XCTAssertNotEqual(worker.tid, report.launch.pid)
        XCTAssertNil(worker.endTid, "began and ended on the same thread")
    }

    func testCompletionSentences() throws {
        let ready = try Fixtures.report("ready.json").launch
        XCTAssertTrue(ready.completed)
        XCTAssertEqual(ready.completion, "completed at ready(), \(String(format: "%.1f", ready.totalMs)) ms after start")

        let exit = try Fixtures.report("exit.json").launch
        XCTAssertTrue(exit.completed)
        XCTAssertEqual(exit.endReason, "exit")
        XCTAssertEqual(exit.completion, "completed at normal exit (no ready() call — a command-line tool's launch ends at exit), "
            + "\(String(format: "%.1f", exit.totalMs)) ms after start")

        let failed = try Fixtures.report("error-exit.json").launch
        XCTAssertFalse(failed.completed)
        XCTAssertEqual(failed.exitStatus, 3)
        XCTAssertEqual(failed.completion, "NOT completed: exit(3) before ready(), "
            + "\(String(format: "%.1f", failed.totalMs)) ms after start, during phase 'store opened → exit(3)'")

        let signalled = try Fixtures.report("sigterm.json").launch
        XCTAssertFalse(signalled.completed)
        XCTAssertEqual(signalled.signal, 15)
        XCTAssertEqual(signalled.completion, "NOT completed: abandoned by SIGTERM "
            + "\(String(format: "%.1f", signalled.totalMs)) ms after start, during phase 'store opened → SIGTERM'")
    }

    func testStartPrecisionSaysWhetherTheStartIsExact() throws {
        let exact = try Fixtures.report("ready.json").launch
        XCTAssertEqual(exact.startSource, "spawn-env")
        XCTAssertEqual(exact.startPrecisionMs, 0)
        XCTAssertEqual(exact.startPrecision, "exact (launcher timestamp)")

        let ticks = try Fixtures.report("sigterm.json").launch
        XCTAssertEqual(ticks.startSource, "proc-stat")
        XCTAssertEqual(ticks.startPrecisionMs, 10)
        XCTAssertEqual(ticks.startPrecision, "±10 ms: /proc starttime is in clock ticks, so the start may be up to 10 ms early")
    }

    func testTimesOnPhaseBoundariesAndOutsideTheLaunch() throws {
        let timeline = try syntheticTimeline(
            marks: [
                mark("at start", at: 0),
                mark("at main", at: 12_000_000),
                mark("late", at: 150_000_000),
            ],
            spans: [span("opens app phase", from: 12_000_000, to: 20_000_000)]
        )
        let report = try LaunchAnalysis(timeline: timeline).report
        XCTAssertEqual(report.marks.map(\.phase), ["kernel exec + loader", "library initializers", nil])
        XCTAssertEqual(report.spans[0].phase, "main → ready", "a span starting on a boundary is in the phase it opens")
        XCTAssertNil(report.phases[0].usage, "no snapshots: no figures rather than zeros")
    }

    func testMarksAreListedInTimeOrder() throws {
        let timeline = try syntheticTimeline(marks: [mark("second", at: 50_000_000), mark("first", at: 20_000_000)])
        XCTAssertEqual(try LaunchAnalysis(timeline: timeline).report.marks.map(\.name), ["first", "second"])
    }

    func testAZeroLengthOrHostileLaunchStillReports() throws {
        let empty = try LaunchAnalysis(timeline: syntheticTimeline(endNs: 0, phases: [("kernel exec + loader", 0, 0)])).report
        XCTAssertEqual(empty.phases[0].sharePercent, 0)
        XCTAssertNoThrow(try empty.jsonData())
        XCTAssertFalse(empty.text().isEmpty)

        // Extreme and backwards times are refused where the file is decoded,
        // with the field named, so nothing downstream can overflow or trap.
        let hostile: [(() throws -> Timeline, String)] = [
            ({ try syntheticTimeline(endNs: Int64.max) }, "launch.endNs is 9223372036854775807, out of range"),
            ({ try syntheticTimeline(phases: [("backwards", 20, 10)]) }, "phases[0] ends (10 ns) before it starts (20 ns)"),
            ({ try syntheticTimeline(phases: [("huge", Int64.min, Int64.max)]) }, "phases[0] start is -9223372036854775808, out of range"),
            ({ try syntheticTimeline(spans: [span("reversed", from: 5, to: -5)]) }, "spans[0] end is -5, out of range"),
        ]
        for (make, problem) in hostile {
            XCTAssertThrowsError(try make()) { error in
                XCTAssertTrue("\(error)".hasPrefix("<timeline>: malformed timeline: \(problem)"), "\(error)")
            }
        }
    }

    func testAnUnknownEndReasonIsReportedAsItIs() throws {
        let report = try LaunchAnalysis(timeline: syntheticTimeline(launch: ["endReason": "watchdog", "completed": false])).report
        XCTAssertTrue(report.launch.completion.hasPrefix("NOT completed (end: watchdog)"), report.launch.completion)
    }

    func testJSONHasStableTopLevelKeysAndRoundTrips() throws {
        let report = try Fixtures.report("threads.json")
        let data = try report.jsonData()
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        XCTAssertEqual(Set(object.keys), ["reportVersion", "launch", "findings", "phases", "marks", "spans"])
        XCTAssertEqual(object["reportVersion"] as? Int, 1)
        let decoded = try JSONDecoder().decode(LaunchReport.self, from: data)
        XCTAssertEqual(decoded.phases.map(\.durationMs), report.phases.map(\.durationMs))
        XCTAssertEqual(decoded.findings, report.findings, "findings round-trip, certainty as its text")
        XCTAssertEqual(decoded.launch.completion, report.launch.completion)
        XCTAssertEqual(try decoded.jsonData(), data, "encoding is deterministic")
    }
}

final class LaunchReportTextTests: XCTestCase {
    func testTheWaterfallShowsEveryPhaseWithUnitsClockAndPrecision() throws {
        let report = try Fixtures.report("ready.json")
        let text = report.text()
        for phase in report.phases { XCTAssertTrue(text.contains(phase.name), phase.name) }
        XCTAssertTrue(text.contains("CLOCK_MONOTONIC"))
        XCTAssertTrue(text.contains("start exact (launcher timestamp)"))
        XCTAssertTrue(text.contains("start ms") && text.contains("wall ms") && text.contains("CPU ms"))
        XCTAssertTrue(text.contains("Launch: completed at ready()"))
        XCTAssertTrue(text.contains("extended (after ready())"))

        // Every waterfall bar is exactly 40 columns between its bars, in time order.
        let bars = text.split(separator: "\n").compactMap { line -> Substring? in
            guard let open = line.firstIndex(of: "|"), let close = line.lastIndex(of: "|"), open < close else { return nil }
            return line[line.index(after: open)..<close]
        }
        XCTAssertEqual(bars.count, report.phases.count)
        var previousStart = -1
        for bar in bars {
            XCTAssertEqual(bar.count, 40)
            let start = try XCTUnwrap(bar.firstIndex(of: "█"), "every phase shows at least one block")
            let column = bar.distance(from: bar.startIndex, to: start)
            XCTAssertGreaterThanOrEqual(column, previousStart)
            previousStart = column
        }
    }

    func testBarsArePositionedAndSizedByShare() {
        XCTAssertEqual(LaunchReport.bar(start: 0, duration: 100, total: 100, width: 10), String(repeating: "█", count: 10))
        XCTAssertEqual(LaunchReport.bar(start: 50, duration: 50, total: 100, width: 10), "     █████")
        XCTAssertEqual(LaunchReport.bar(start: 0, duration: 0.001, total: 100, width: 10), "█         ")
        XCTAssertEqual(LaunchReport.bar(start: 100, duration: 0.001, total: 100, width: 10), "         █")
        XCTAssertEqual(LaunchReport.bar(start: 5, duration: -3, total: 100, width: 10).count, 10)
        XCTAssertEqual(LaunchReport.bar(start: 0, duration: 1, total: 0, width: 10), String(repeating: " ", count: 10))
    }

    func testSpansBeyondTheLimitAreCountedNotListed() throws {
        let spans = (0..<15).map { span("span \($0)", from: 12_000_000, to: 12_000_000 + Int64($0 + 1) * 1_000_000) }
        let text = try LaunchAnalysis(timeline: syntheticTimeline(spans: spans)).report.text()
        XCTAssertTrue(text.contains("Slowest spans (top 10 of 15; ms)"))
        XCTAssertTrue(text.contains("span 14"))
        XCTAssertFalse(text.contains("span 4 "), "the five fastest are left out")
    }

    func testDroppedEventsAndUnfinishedSpansAreSaid() throws {
        let text = try LaunchAnalysis(timeline: syntheticTimeline(
            spans: [span("still open", from: 20_000_000, to: 100_000_000, unfinished: true)],
            dropped: ["events": 3, "nameBytes": 120]
        )).report.text()
        XCTAssertTrue(text.contains("Dropped: 3 events and 120 name bytes"))
        XCTAssertTrue(text.contains("UNFINISHED"))
    }

    func testNamesCannotBreakTheLayout() throws {
        let text = try LaunchAnalysis(timeline: syntheticTimeline(
            marks: [mark("line\nbreak\u{1b}[31m", at: 20_000_000), mark(String(repeating: "x", count: 255), at: 30_000_000)]
        )).report.text()
        XCTAssertFalse(text.contains("\u{1b}"))
        let markLine = try XCTUnwrap(text.split(separator: "\n").first { $0.contains("line?break") })
        XCTAssertTrue(markLine.contains("20.00"))
        XCTAssertFalse(text.contains(String(repeating: "x", count: 61)))
    }
}

/// The `coldstart report` executable, as a user runs it.
final class ReportCommandTests: XCTestCase {
    func testReportsEveryGoodTimeline() throws {
        for name in Fixtures.good {
            let result = try coldstart(["report", Fixtures.path(name)])
            XCTAssertEqual(result.status, 0, "\(name): \(result.stderr)")
            XCTAssertEqual(result.stderr, "", name)
            for phase in try Fixtures.timeline(name).phases {
                XCTAssertTrue(result.stdout.contains(phase.name), "\(name) lacks phase \(phase.name)")
            }
            XCTAssertTrue(result.stdout.contains("CLOCK_MONOTONIC"), name)
            XCTAssertTrue(result.stdout.contains("Start time: "), name)
            XCTAssertTrue(result.stdout.contains("Launch: "), name)
        }
        let ready = try coldstart(["report", "--full", Fixtures.path("ready.json")]).stdout
        XCTAssertTrue(ready.contains("ready"))
        XCTAssertTrue(ready.contains("Launch: completed at ready()"))
        XCTAssertTrue(ready.contains("first request served"))
        let signalled = try coldstart(["report", "--full", Fixtures.path("sigterm.json")]).stdout
        XCTAssertTrue(signalled.contains("Launch: NOT completed: abandoned by SIGTERM"))
    }

    func testJSONIsTheReportEncodedAsIs() throws {
        for name in Fixtures.good {
            let result = try coldstart(["report", "--json", Fixtures.path(name)])
            XCTAssertEqual(result.status, 0, "\(name): \(result.stderr)")
            let printed = Data(result.stdout.utf8)
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: printed) as? [String: Any], name)
            let phases = try XCTUnwrap(object["phases"] as? [[String: Any]])
            XCTAssertEqual(phases.compactMap { $0["name"] as? String }, try Fixtures.timeline(name).phases.map(\.name))
            let expected = try Fixtures.report(name).jsonData() + Data("\n".utf8)
            XCTAssertEqual(result.stdout, String(decoding: expected, as: UTF8.self), name)
        }
        let afterFile = try coldstart(["report", Fixtures.path("exit.json"), "--json"])
        XCTAssertEqual(afterFile.status, 0)
        XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(afterFile.stdout.utf8)))
    }

    func testBadFilesGetOneLineNamingTheFileAndExitOne() throws {
        let cases: [(path: String, problem: String)] = [
            (Fixtures.path("bad-empty.json"), "empty file"),
            (Fixtures.path("bad-truncated.json"), "truncated JSON"),
            (Fixtures.path("bad-garbage.json"), "not JSON"),
            (Fixtures.path("bad-chrome-trace.json"), "no \"coldstart\" section"),
            (Fixtures.path("bad-chrome-array.json"), "not a Coldstart timeline"),
            (Fixtures.path("bad-newer-version.json"), "format version 2 is newer"),
            (Fixtures.path("bad-malformed.json"), "malformed timeline: bad \"phases\""),
            (Fixtures.directory.appendingPathComponent("no-such-timeline.json").path, "no such file"),
            // A directory is pooled (`report DIR`); one without timelines has nothing to pool.
            (try makeTemporaryDirectory(for: self).path, "no sampled launch to pool"),
            // Would block or never end if read: refused up front.
            ("/dev/zero", "not a regular file"),
        ]
        for (path, problem) in cases {
            for json in [false, true] {
                let result = try coldstart(["report", path] + (json ? ["--json"] : []))
                let label = "\(path)\(json ? " --json" : "")"
                XCTAssertEqual(result.status, 1, label)
                XCTAssertNil(result.signal, "\(label) crashed")
                XCTAssertEqual(result.stdout, "", label)
                let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
                XCTAssertEqual(lines.count, 2, "\(label): one line, then the newline: \(result.stderr)")
                XCTAssertTrue(lines[0].hasPrefix("coldstart report: \(path): "), "\(label): \(result.stderr)")
                XCTAssertTrue(lines[0].contains(problem), "\(label): \(result.stderr)")
            }
        }
    }

    func testUsageErrorsExitTwo() throws {
        for arguments in [["report"], ["report", "a.json", "b.json"], ["report", "--jsn", Fixtures.path("ready.json")]] {
            let result = try coldstart(arguments)
            XCTAssertEqual(result.status, 2, "\(arguments): \(result.stderr)")
            XCTAssertEqual(result.stdout, "", "\(arguments)")
            XCTAssertTrue(result.stderr.contains("coldstart report --help"), "\(arguments): \(result.stderr)")
        }
    }

    func testHelpDescribesTheCommand() throws {
        let help = try coldstart(["report", "--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.hasPrefix("Usage: coldstart report FILE [--full | --json | --html OUT]"))
        let overview = try coldstart(["--help"])
        XCTAssertEqual(overview.status, 0)
        XCTAssertTrue(overview.stdout.contains("report"))
    }
}
