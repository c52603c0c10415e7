@testable import ColdstartAnalysis
import Foundation
import XCTest

/// Thread names from the kernel under `coldstart run` (issue 26, item 3):
/// the launcher's COMM and FORK records (perf), or the tracer's reads of
/// each thread's stat (perf refused), name every thread of the program in
/// the timeline's threads section, whether it links Coldstart or not.
final class LauncherThreadNameTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(for: self)
    }

    /// `coldstart run -n 1` of `program`, under NoPerf's seccomp filter
    /// (the tracer) when `traced`; the run's timeline.
    private func run(_ program: [String], traced: Bool, name: String) throws -> (timeline: Timeline, path: String) {
        let out = directory.appendingPathComponent(name).path
        var command = [try Products.path("coldstart"), "run", "-n", "1", "--warmup", "0", "--out", out, "--"] + program
        if traced { command.insert(try FixturePrograms.path("NoPerf"), at: 0) }
        let result = try runProcess(command[0], Array(command.dropFirst()), environment: ["SWIFT_BACKTRACE": "enable=no"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let path = "\(out)/run-1.json"
        let timeline = try Timeline(contentsOf: path)
        XCTAssertEqual(timeline.sampling?.clock, traced ? "ptrace" : "perf-task-clock")
        return (timeline, path)
    }

    private func names(_ timeline: Timeline) -> [Int: String] {
        Dictionary(timeline.threads.map { ($0.tid, $0.name) }) { first, _ in first }
    }

    /// Named with pthread_setname_np, renamed, never named (its creator's
    /// name), and libdispatch's workers (their root queue's label).
    private func assertNamedThreads(traced: Bool) throws {
        let (timeline, path) = try run([try FixturePrograms.path("NamedThreads")], traced: traced, name: traced ? "traced" : "perf")
        let names = Set(names(timeline).values)
        for expected in ["main", "parser-1", "late-name", "NamedThreads", "oot.default-qos"] {
            XCTAssertTrue(names.contains(expected), "\(expected) among \(names.sorted())")
        }
        XCTAssertFalse(names.contains("early-name"), "the last name, not the first")
        for tid in Set(timeline.samples.map(\.tid)) {
            XCTAssertNotEqual(self.names(timeline)[tid] ?? "thread \(tid)", "thread \(tid)", "sampled thread \(tid) is named")
        }
        let report = try coldstart(["report", "--full", path])
        XCTAssertEqual(report.status, 0, report.stderr)
        let threads = report.stdout.components(separatedBy: "Threads (CPU").dropFirst().first ?? ""
        XCTAssertTrue(threads.contains("parser-1 ("), threads)
        XCTAssertTrue(threads.contains("dispatch worker (default QoS) ("), threads)
    }

    func testRunNamesEveryThreadWithPerf() throws {
        try assertNamedThreads(traced: false)
    }

    func testRunNamesEveryThreadWhenTraced() throws {
        try assertNamedThreads(traced: true)
    }

    /// An async main linked with Coldstart: threads that ended before the
    /// app wrote its file, and threads only the tracer sampled (the app's
    /// sampler is off when perf is refused), are named from the kernel too.
    private func assertAsyncService(traced: Bool) throws {
        let fifo = directory.appendingPathComponent(traced ? "traced.fifo" : "perf.fifo").path
        let (timeline, _) = try run([try FixturePrograms.path("AsyncService"), fifo], traced: traced, name: traced ? "async-traced" : "async-perf")
        let names = names(timeline)
        for tid in Set(timeline.samples.map(\.tid)) {
            let name = try XCTUnwrap(names[tid], "sampled thread \(tid) is listed among \(names)")
            XCTAssertNotEqual(name, "thread \(tid)", "thread \(tid) is named")
        }
        XCTAssertFalse(names.contains { $0.value == "thread \($0.key)" }, "every listed thread is named: \(names)")
        XCTAssertTrue(names.values.contains { ThreadLabel.isDispatchWorker($0) }, "a dispatch worker among \(names)")
    }

    func testAsyncMainThreadsAreNamedWithPerf() throws {
        try assertAsyncService(traced: false)
    }

    func testAsyncMainThreadsAreNamedWhenTraced() throws {
        try assertAsyncService(traced: true)
    }

    /// The records' names in time order: a new thread has its creator's
    /// name until it renames itself, the last rename wins, and another
    /// process's records name none of this one's threads.
    func testThreadNamesFollowForksAndRenames() {
        var bytes: [UInt8] = []
        func u32(_ v: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(v).littleEndian, Array.init) }
        func u64(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
        func trailer(_ tid: Int, _ ns: UInt64) -> [UInt8] { u32(100) + u32(tid) + u64(ns) + u64(1) }
        func record(_ type: Int, _ body: [UInt8]) {
            bytes += u32(type) + [0, 0] + withUnsafeBytes(of: UInt16(8 + body.count).littleEndian, Array.init) + body
        }
        func comm(pid: Int = 100, _ tid: Int, _ name: String, _ ns: UInt64) {
            var text = Array(name.utf8) + [0]
            while text.count % 8 != 0 { text.append(0) }
            record(3, u32(pid) + u32(tid) + text + trailer(tid, ns))
        }
        func fork(pid: Int = 100, _ tid: Int, parent: Int, _ ns: UInt64) {
            record(7, u32(pid) + u32(pid) + u32(tid) + u32(parent) + u64(ns) + trailer(tid, ns))
        }
        // Out of time order, as records from several CPUs' rings are.
        comm(101, "worker", 30)
        comm(100, "Tool", 10)
        fork(101, parent: 100, 20)
        fork(102, parent: 100, 25)
        fork(103, parent: 101, 40)
        comm(104, "renamed-early", 50)
        comm(104, "renamed-late", 60)
        comm(pid: 200, 105, "elsewhere", 70)
        let records = PerfRecords(bytes: bytes, clockIDs: [1], faultIDs: [])
        XCTAssertEqual(records.threadNames(pid: 100), [
            100: "Tool", 101: "worker", 102: "Tool", 103: "worker", 104: "renamed-late",
        ])
    }
}
