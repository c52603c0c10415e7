import CColdstart
@testable import ColdstartAnalysis
@testable import ColdstartText
import Foundation
import XCTest

/// The watcher's /proc parsers (C) and the blocked-time arithmetic on
/// hand-made timelines, for cases a real run cannot produce on demand.
final class BlockedTimeTests: XCTestCase {
    // MARK: - /proc/<pid>/task/<tid>/syscall, schedstat, stat

    private func syscallLine(_ line: String) -> cs_task_syscall? {
        var out = cs_task_syscall()
        let rc = line.withCString { cs_parse_task_syscall($0, strlen($0), &out) }
        return rc == 0 ? out : nil
    }

    func testParsesABlockedSyscallWithArgumentsStackPointerAndPC() throws {
        let parsed = try XCTUnwrap(syscallLine("202 0x55e4c21bdb70 0x80 0x2 0x0 0x0 0x0 0x7fab292b5e98 0x7fab293a812b\n"))
        XCTAssertFalse(parsed.running)
        XCTAssertEqual(parsed.nr, 202)
        XCTAssertEqual(parsed.args.0, 0x55e4c21bdb70)
        XCTAssertEqual(parsed.args.1, 0x80)
        XCTAssertEqual(parsed.args.2, 2)
        XCTAssertEqual(parsed.sp, 0x7fab292b5e98)
        XCTAssertEqual(parsed.pc, 0x7fab293a812b)
    }

    func testParsesRunningAndBlockedOutsideASyscall() throws {
        let running = try XCTUnwrap(syscallLine("running\n"))
        XCTAssertTrue(running.running)
        let fault = try XCTUnwrap(syscallLine("-1 0x7ffc5b82c068 0x55d0f00ba2ad\n"))
        XCTAssertFalse(fault.running)
        XCTAssertEqual(fault.nr, -1, "blocked outside a syscall: a page fault")
        XCTAssertEqual(fault.sp, 0x7ffc5b82c068)
        XCTAssertEqual(fault.pc, 0x55d0f00ba2ad)
    }

    func testRejectsMalformedSyscallLines() {
        XCTAssertNil(syscallLine(""))
        XCTAssertNil(syscallLine("0 0x3 0x7f00\n"), "too few fields")
        XCTAssertNil(syscallLine("-2 0x1 0x2\n"), "only -1 has the short form")
        XCTAssertNil(syscallLine("x 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8\n"))
        XCTAssertNil(syscallLine("0 0x11112222333344445 0x0 0x0 0x0 0x0 0x0 0x1 0x2\n"), "over 64 bits")
        XCTAssertNil(syscallLine("0 3 0x0 0x0 0x0 0x0 0x0 0x1 0x2\n"), "arguments are hex")
    }

    func testParsesSchedstat() {
        var run: UInt64 = 0, wait: UInt64 = 0, slices: UInt64 = 0
        XCTAssertEqual("138105 2265651 2\n".withCString { cs_parse_schedstat($0, strlen($0), &run, &wait, &slices) }, 0)
        XCTAssertEqual([run, wait, slices], [138_105, 2_265_651, 2])
        XCTAssertEqual("138105 x\n".withCString { cs_parse_schedstat($0, strlen($0), &run, &wait, &slices) }, -1)
    }

    func testParsesStateAndFaultsWhateverTheCommandName() {
        func stat(_ line: String) -> (String, UInt64, UInt64)? {
            var state: CChar = 0
            var minor: UInt64 = 0, major: UInt64 = 0
            let rc = line.withCString { cs_parse_task_stat($0, strlen($0), &state, &minor, &major) }
            return rc == 0 ? (String(UnicodeScalar(UInt8(state))), minor, major) : nil
        }
        // tpgid (field 8) is -1 for a process without a terminal.
        let line = "4242 (a) b) c) D 1 4242 4242 0 -1 4194560 1234 0 56 0 10 2 0 0 20 0 3 0 5000\n"
        XCTAssertEqual(stat(line)?.0, "D")
        XCTAssertEqual(stat(line)?.1, 1234)
        XCTAssertEqual(stat(line)?.2, 56)
        XCTAssertNil(stat("4242 (no fields) S 1 2\n"))
        XCTAssertNil(stat("no parenthesis S 1 2 3 4 5 6 7 8 9\n"))
        let own = try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)
        XCTAssertEqual(own.flatMap(stat)?.0, "R", "this thread, reading its own stat, is running")
    }

    // MARK: - the arithmetic on a hand-made watch

    /// A timeline whose main thread (tid 42) has `segments`:
    /// [tid, start, end, state, cause, syscall, run, wait, minor, major, path, stack, args].
    private func timeline(
        phases: [(String, Int64, Int64)],
        segments: [[Any]],
        paths: [String] = [],
        threads: [[String: Any]] = [],
        runnable: [[Int64]] = [],
        watchStartNs: Int64 = 0,
        stacks: [[Any]] = [],
        modules: [String] = [],
        symbols: [String: String] = [:]
    ) throws -> Timeline {
        let end = phases.last!.2
        var section: [String: Any] = [
            "version": 1,
            "launch": ["startNs": 1_000_000_000, "startSource": "spawn-env", "startPrecisionNs": 0,
                       "mainNs": phases[0].1, "endNs": end, "completed": true, "endReason": "ready"],
            "process": ["pid": 42, "executable": "/usr/bin/app", "kernelRelease": "6.1", "swiftVersion": "6.3"],
            "phases": phases.map { ["name": $0.0, "kind": "app", "startNs": $0.1, "endNs": $0.2, "rusage": NSNull()] },
            "marks": [Any](), "spans": [Any](), "rusage": [Any](), "threads": [["tid": 42, "name": "main"]],
            "watch": [
                "requestedHz": 1000, "effectiveHz": 990.5, "startNs": watchStartNs, "stopNs": end, "complete": true,
                "ticks": 100, "missedTicks": 0, "cpuNs": 2_000_000, "tickNs": ["median": 8500, "p99": 30500],
                "cpus": 2, "syscallFile": true, "unwinder": "libunwind-remote",
                "dropped": ["segments": 0, "stacks": 0, "threads": 0, "paths": 0, "runnable": 0],
                "threads": [["tid": 42, "name": "app", "firstNs": watchStartNs, "lastNs": end, "exited": false,
                             "watched": true, "cpuNs": 0, "runQueueNs": 0, "switches": 0]] + threads,
                "paths": paths, "stacks": stacks, "segments": segments, "runnable": runnable,
            ],
        ]
        if !modules.isEmpty {
            section["modules"] = modules.enumerated().map { index, path in
                ["path": path, "buildId": NSNull(), "base": index * 0x100000, "start": index * 0x100000, "end": index * 0x100000 + 0x10000]
            }
        }
        if !symbols.isEmpty {
            section["symbols"] = symbols.mapValues { ["name": $0] }
            section["symbolized"] = true
        }
        return try Timeline(data: try JSONSerialization.data(withJSONObject: ["traceEvents": [], "coldstart": section]))
    }

    private let noArgs: [String] = []

    func testASegmentAcrossAPhaseBoundaryIsSharedInProportion() throws {
        // A 40 ms file read from 10 to 50 ms; the phase boundary is at 30 ms.
        let timeline = try timeline(
            phases: [("a", 0, 30_000_000), ("b", 30_000_000, 60_000_000)],
            segments: [
                [42, 0, 10_000_000, "R", "running", NSNull(), 8_000_000, 2_000_000, 0, 0, -1, -1, noArgs],
                [42, 10_000_000, 50_000_000, "S", "file-read", "read", 0, 0, 0, 0, 0, -1, ["0x3", "0x0", "0x1000", "0x0", "0x0", "0x0"]],
                [42, 50_000_000, 60_000_000, "R", "running", NSNull(), 9_000_000, 0, 0, 0, -1, -1, noArgs],
            ],
            paths: ["/etc/app.conf"]
        )
        let blocked = try XCTUnwrap(LaunchReport.BlockedTime(timeline))
        let a = blocked.phases[0], b = blocked.phases[1]
        XCTAssertEqual(a.runningMs, 8, accuracy: 1e-9)
        XCTAssertEqual(a.runQueueMs, 2, accuracy: 1e-9)
        XCTAssertEqual(a.blocked.map(\.what), ["file read /etc/app.conf"])
        XCTAssertEqual(a.blocked[0].ms, 20, accuracy: 1e-9)
        XCTAssertEqual(a.blocked[0].percent, 20.0 / 30 * 100, accuracy: 1e-9)
        XCTAssertEqual(b.blocked.first { $0.cause == "file-read" }?.ms ?? 0, 20, accuracy: 1e-9)
        // The last segment's 1 ms that was neither CPU nor run queue: a block no look saw.
        XCTAssertEqual(b.blocked.first { $0.cause == "short" }?.ms ?? 0, 1, accuracy: 1e-9)
        XCTAssertEqual(b.runningMs + b.runQueueMs + b.blockedMs, b.wallMs, accuracy: 1e-9)
        XCTAssertEqual(blocked.files.map(\.path), ["/etc/app.conf"])
        XCTAssertEqual(blocked.files[0].ms, 40, accuracy: 1e-9)
        XCTAssertEqual(blocked.callSites.first?.ms ?? 0, 40, accuracy: 1e-9)
    }

    func testSchedstatCountersPastASegmentsEndDoNotMakeAPhaseLongerThanItsWallTime() throws {
        // The counters are read at the looks: this 10 ms segment claims 9 ms on
        // a CPU and 3 ms queued.
        let timeline = try timeline(
            phases: [("a", 0, 10_000_000), ("b", 10_000_000, 20_000_000)],
            segments: [
                [42, 0, 10_000_000, "R", "running", NSNull(), 9_000_000, 3_000_000, 0, 0, -1, -1, noArgs],
                [42, 10_000_000, 20_000_000, "R", "running", NSNull(), 4_000_000, 1_000_000, 0, 0, -1, -1, noArgs],
            ]
        )
        let blocked = try XCTUnwrap(LaunchReport.BlockedTime(timeline))
        for split in [blocked.launch] + blocked.phases {
            XCTAssertEqual(split.runningMs + split.runQueueMs + split.blockedMs + split.suspendedMs + split.notWatchedMs,
                           split.wallMs, accuracy: 1e-9, split.name)
        }
        XCTAssertEqual(blocked.phases[0].blockedMs, 0, accuracy: 1e-9)
        XCTAssertEqual(blocked.phases[1].blockedMs, 5, accuracy: 1e-9)
    }

    func testRoundedSharesAddUpToTheTotal() {
        // One third each: plain rounding prints 33 + 33 + 33 = 99%.
        XCTAssertEqual(LaunchReport.roundedShares([1, 1, 1], of: 3, decimals: 0), [34, 33, 33])
        // 66.67 + 16.67 + 16.67 = 100.01 plain.
        XCTAssertEqual(LaunchReport.roundedShares([4, 1, 1], of: 6, decimals: 2).reduce(0, +), 100, accuracy: 1e-9)
        XCTAssertEqual(LaunchReport.roundedParts([0.005, 0.005, 9.99], total: 10, decimals: 2).reduce(0, +), 10, accuracy: 1e-9)
        XCTAssertEqual(LaunchReport.roundedShares([2, 0], of: 0, decimals: 0), [0, 0])
        // Parts that do not add up are rounded one by one.
        XCTAssertEqual(LaunchReport.roundedParts([1.4, 1.4], total: 10, decimals: 0), [1, 1])
    }

    func testTimeBeforeTheWatcherStartedIsNotWatchedAndNotGuessed() throws {
        let timeline = try timeline(
            phases: [("loader", 0, 10_000_000), ("main → ready", 10_000_000, 20_000_000)],
            segments: [[42, 12_000_000, 20_000_000, "R", "running", NSNull(), 8_000_000, 0, 0, 0, -1, -1, noArgs]],
            watchStartNs: 12_000_000
        )
        let blocked = try XCTUnwrap(LaunchReport.BlockedTime(timeline))
        XCTAssertEqual(blocked.phases[0].notWatchedMs, 10, accuracy: 1e-9)
        XCTAssertEqual(blocked.phases[0].runningMs, 0)
        XCTAssertEqual(blocked.phases[1].notWatchedMs, 2, accuracy: 1e-9)
        XCTAssertTrue(blocked.watcher.notes.contains { $0.contains("not watched") })
    }

    func testAWatcherThatStartedAfterTheLaunchSaysSoInsteadOfARate() throws {
        let timeline = try timeline(
            phases: [("loader", 0, 10_000_000), ("main → ready", 10_000_000, 20_000_000)],
            segments: [], watchStartNs: 20_000_000)
        let blocked = try XCTUnwrap(LaunchReport.BlockedTime(timeline))
        XCTAssertFalse(blocked.watcher.watchedTheLaunch)
        XCTAssertEqual(blocked.textLines(), [
            "Critical path: why it was not running — not known: the watcher started after the launch ended "
                + "(its first look at 20.00 ms, the launch ended at 20.00 ms)",
        ])
    }

    func testUnnamedSystemCallsAreNamed() throws {
        let timeline = try timeline(
            phases: [("p", 0, 10_000_000)],
            segments: [[42, 0, 10_000_000, "S", "other", "syscall 298", 0, 0, 0, 0, -1, -1, noArgs]],
            modules: ["/usr/bin/app", "/lib64/ld-linux-x86-64.so.2"])
        XCTAssertEqual(try XCTUnwrap(LaunchReport.BlockedTime(timeline)?.phases.first).blocked.map(\.what), ["syscall perf_event_open"])
    }

    func testAWatcherThatStoppedEarlySaysWhyAndLeavesTheRestNotWatched() throws {
        var root = try timeline(
            phases: [("main → ready", 0, 100_000_000)],
            segments: [[42, 0, 40_000_000, "R", "running", NSNull(), 40_000_000, 0, 0, 0, -1, -1, noArgs]]
        ).document
        var section = root["coldstart"] as! [String: Any]
        var watch = section["watch"] as! [String: Any]
        watch["stopNs"] = 40_000_000
        watch["stopReason"] = "time-limit"
        section["watch"] = watch
        root["coldstart"] = section
        let timeline = try Timeline(data: try JSONSerialization.data(withJSONObject: root))
        let blocked = try XCTUnwrap(LaunchReport.BlockedTime(timeline))
        XCTAssertEqual(blocked.phases[0].notWatchedMs, 60, accuracy: 1e-9)
        XCTAssertTrue(blocked.watcher.notes.contains { $0.contains("stopped before the launch ended (its 2-minute limit)") },
                      "\(blocked.watcher.notes)")
    }

    func testRunQueueWaitCountsTheCompetingThreads() throws {
        let timeline = try timeline(
            phases: [("busy", 0, 100_000_000)],
            segments: [[42, 0, 100_000_000, "R", "running", NSNull(), 40_000_000, 60_000_000, 0, 0, -1, -1, noArgs]],
            runnable: [[0, 1], [50_000_000, 5]]
        )
        let phase = try XCTUnwrap(LaunchReport.BlockedTime(timeline)?.phases.first)
        XCTAssertEqual(phase.runQueueMs, 60, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(phase.runnableThreads), 3, accuracy: 1e-9, "half the time 1, half the time 5")
        let text = try LaunchAnalysis(timeline: timeline).report.text()
        XCTAssertTrue(text.contains("60.00 (60%), 3.0 runnable/2 CPUs"), text)
    }

    /// A newer Coldstart's cause, read by this one: shown as unknown, with
    /// the name the file gives it, not counted as another cause.
    func testAnUnknownCauseIsShownAsUnknownWithItsName() throws {
        let timeline = try timeline(
            phases: [("p", 0, 20_000_000)],
            segments: [
                [42, 0, 10_000_000, "S", "gpu-wait", "ioctl", 0, 0, 0, 0, 0, -1, noArgs],
                [42, 10_000_000, 20_000_000, "S", "other", "syscall 999", 0, 0, 0, 0, -1, -1, noArgs],
            ],
            paths: ["/dev/dri/card0"]
        )
        XCTAssertEqual(timeline.watch?.segments.map(\.cause), [.unknown("gpu-wait"), .other])
        let blocked = try XCTUnwrap(LaunchReport.BlockedTime(timeline))
        let rows = try XCTUnwrap(blocked.phases.first).blocked
        XCTAssertEqual(Set(rows.map { "\($0.cause): \($0.what)" }),
                       ["unknown: unknown cause \"gpu-wait\" (ioctl /dev/dri/card0)", "other: syscall 999"])
        let text = try LaunchAnalysis(timeline: timeline).report.text(full: true)
        XCTAssertTrue(text.contains("unknown cause \"gpu-wait\""), text)
    }

    func testCausesAreNamedForPeople() throws {
        let args = ["0x55e4c21bdb70", "0x80", "0x2", "0x0", "0x0", "0x0"]
        let timeline = try timeline(
            phases: [("p", 0, 60_000_000)],
            segments: [
                [42, 0, 10_000_000, "S", "lock", "futex", 0, 0, 0, 0, -1, -1, args],
                [42, 10_000_000, 20_000_000, "D", "page-fault", NSNull(), 0, 0, 0, 7, -1, -1, noArgs],
                [42, 20_000_000, 30_000_000, "S", "network", "connect", 0, 0, 0, 0, 0, -1, args],
                [42, 30_000_000, 40_000_000, "S", "events", "epoll_wait", 0, 0, 0, 0, -1, -1, args],
                [42, 40_000_000, 50_000_000, "S", "file-system", "openat", 0, 0, 0, 0, 1, -1, args],
                [42, 50_000_000, 60_000_000, "S", "other", "syscall 999", 0, 0, 0, 0, -1, -1, args],
            ],
            paths: ["10.0.0.7:5432", "/var/lib/app/store.db"]
        )
        let phase = try XCTUnwrap(LaunchReport.BlockedTime(timeline)?.phases.first)
        XCTAssertEqual(Set(phase.blocked.map(\.what)), [
            "lock wait (futex 0x55e4c21bdb70)", "page faults", "network: connect 10.0.0.7:5432",
            "waiting for events (epoll_wait)", "file system: openat /var/lib/app/store.db", "syscall 999",
        ])
        XCTAssertEqual(phase.majorFaults, 7)
        XCTAssertTrue(phase.blocked.allSatisfy { abs($0.ms - 10) < 1e-9 })
    }

    func testCallSitesNameTheFunctionOutsideSystemLibrariesAndOffCPUTimeGoesToEveryFunctionOnTheStack() throws {
        let futex = ["0x5000", "0x80", "0x2", "0x0", "0x0", "0x0"]
        let timeline = try timeline(
            phases: [("p", 0, 100_000_000)],
            segments: [
                [42, 0, 30_000_000, "S", "lock", "futex", 0, 0, 0, 0, -1, 0, futex],
                [42, 30_000_000, 40_000_000, "R", "running", NSNull(), 10_000_000, 0, 0, 0, -1, -1, noArgs],
                [42, 40_000_000, 100_000_000, "S", "sleep", "clock_nanosleep", 0, 0, 0, 0, -1, 1, noArgs],
            ],
            stacks: [[0, 0x100, 0, 0x200, 1, 0x300, 1, 0x400], [0, 0x500, 1, 0x600, 1, 0x400]],
            modules: ["/usr/lib/x86_64-linux-gnu/libc.so.6", "/srv/app/App"],
            symbols: ["0:256": "__lll_lock_wait", "0:512": "pthread_mutex_lock", "1:768": "App.waitForLock()",
                      "1:1024": "App_main", "0:1280": "clock_nanosleep", "1:1536": "App.pause()"]
        )
        let blocked = try XCTUnwrap(LaunchReport.BlockedTime(timeline))
        XCTAssertEqual(blocked.callSites.map(\.function), ["App.pause()", "App.waitForLock()"])
        XCTAssertEqual(blocked.callSites[1].stack, ["__lll_lock_wait", "pthread_mutex_lock", "App.waitForLock()", "App_main"])
        let functions = Dictionary(uniqueKeysWithValues: blocked.offCPUFunctions.map { ($0.name, $0) })
        XCTAssertEqual(functions["App_main"]?.ms ?? 0, 90, accuracy: 1e-9, "on both stacks")
        XCTAssertEqual(functions["App_main"]?.percent ?? 0, 100, accuracy: 1e-9)
        XCTAssertEqual(functions["App.waitForLock()"]?.ms ?? 0, 30, accuracy: 1e-9)
        XCTAssertEqual(functions["App.waitForLock()"]?.module, "App")
        XCTAssertEqual(blocked.offCPUFunctions.first?.name, "App_main")
        let text = try LaunchAnalysis(timeline: timeline).report.text()
        XCTAssertTrue(text.contains("lock wait (futex 0x5000) in App.waitForLock()"), text)
        XCTAssertTrue(text.contains("not CPU time"), "off-CPU time is labelled as such")
    }

    /// The blocked section cut function names at 80 and 90 characters with
    /// no regard for what told them apart: two overloads read as one. They
    /// are clipped as the tables' names are, alike names numbered.
    func testBlockedFunctionsThatClipAlikeReadApart() throws {
        let stem = "App.Store.open(path: Swift.String, options: App.Store.Options, retry: Swift.Int, log: App.Log, "
        let (one, two) = (stem + "timeout: Swift.Double) -> App.Store", stem + "deadline: Swift.UInt64) -> App.Store")
        let timeline = try timeline(
            phases: [("p", 0, 100_000_000)],
            segments: [
                [42, 0, 50_000_000, "S", "file-system", "fsync", 0, 0, 0, 0, -1, 0, noArgs],
                [42, 50_000_000, 100_000_000, "S", "file-system", "fsync", 0, 0, 0, 0, -1, 1, noArgs],
            ],
            stacks: [[0, 0x100, 1, 0x200, 1, 0x400], [0, 0x100, 1, 0x300, 1, 0x400]],
            modules: ["/usr/lib/x86_64-linux-gnu/libc.so.6", "/srv/app/App"],
            symbols: ["0:256": "fsync", "1:512": one, "1:768": two, "1:1024": "App_main"]
        )
        let text = try LaunchAnalysis(timeline: timeline).report.text(full: true)
        let lines = text.components(separatedBy: "\n")
        let sites = lines.filter { $0.contains("fsync in App.Store.open") }
        let offCPU = lines.filter { $0.contains("App.Store.open") && $0.hasSuffix("  (App)") }
        XCTAssertEqual(sites.count, 2, text)
        XCTAssertEqual(offCPU.count, 2, text)
        for pair in [sites, offCPU] {
            XCTAssertNotEqual(pair[0], pair[1], "the same figures, so the names must differ")
            XCTAssertTrue(pair.allSatisfy { $0.contains(" #1") || $0.contains(" #2") }, "\(pair)")
        }
    }

    func testThreadsHaveOneLineEachAndColdstartsOwnAreLeftOut() throws {
        let timeline = try timeline(
            phases: [("p", 0, 10_000_000)],
            segments: [
                [42, 0, 10_000_000, "R", "running", NSNull(), 10_000_000, 0, 0, 0, -1, -1, noArgs],
                [43, 0, 10_000_000, "R", "running", NSNull(), 4_000_000, 6_000_000, 0, 0, -1, -1, noArgs],
                [44, 0, 10_000_000, "S", "sleep", "nanosleep", 0, 0, 0, 0, -1, -1, noArgs],
            ],
            threads: [
                ["tid": 43, "name": "worker", "firstNs": 0, "lastNs": 10_000_000, "exited": true, "watched": true,
                 "cpuNs": 4_000_000, "runQueueNs": 6_000_000, "switches": 3],
                ["tid": 44, "name": "coldstart-write", "firstNs": 0, "lastNs": 10_000_000, "exited": false, "watched": true,
                 "cpuNs": 0, "runQueueNs": 0, "switches": 1],
            ]
        )
        let threads = try XCTUnwrap(LaunchReport.BlockedTime(timeline)?.threads)
        XCTAssertEqual(threads.map(\.name), ["main", "worker"])
        XCTAssertEqual(threads[1].runQueueMs, 6, accuracy: 1e-9)
        XCTAssertTrue(threads[1].exited)
    }

    func testAMalformedWatchIsAOneLineErrorNamingTheFile() throws {
        let good = try timeline(phases: [("p", 0, 10)], segments: [])
        var root = good.document
        var section = root["coldstart"] as! [String: Any]
        var watch = section["watch"] as! [String: Any]
        watch["segments"] = [[42, 5, 1, "R", "running", NSNull(), 0, 0, 0, 0, -1, -1, [String]()]]   // ends before it starts
        section["watch"] = watch
        root["coldstart"] = section
        let data = try JSONSerialization.data(withJSONObject: root)
        XCTAssertThrowsError(try Timeline(data: data, path: "x.json")) { error in
            XCTAssertEqual("\(error)", "x.json: malformed timeline: watch: segment 0 is not [tid, startNs, endNs, state, cause, syscall, runNs, waitNs, minorFaults, majorFaults, path, stack, args]")
        }
    }
}
