import ColdstartAnalysis
import Foundation
import XCTest

/// Issue 35: hosts that fork workers, limit their file size, end their main
/// thread with pthread_exit, begin a span right after ready(): each must
/// behave exactly as it does without Coldstart. The hosts are HostPatterns
/// modes.
final class HostBehaviourTests: XCTestCase {
    private var host: String!
    private var directory: URL!

    override func setUpWithError() throws {
        host = try FixturePrograms.path("HostPatterns")
        directory = try makeTemporaryDirectory(for: self)
    }

    private var timelinePath: String { directory.appendingPathComponent("timeline.json").path }

    private func profiled(_ arguments: [String], _ extra: [String: String?] = [:], timeout: TimeInterval = 60) throws -> ProcessResult {
        var environment: [String: String?] = ["COLDSTART": timelinePath]
        for (key, value) in extra { environment[key] = value }
        return try runProcess(host, arguments, environment: environment, timeout: timeout)
    }

    // MARK: - Item 1: a forked child keeps nothing of Coldstart's

    /// A worker forked at the start of main, and one forked 30 ms of CPU into
    /// it, while the parent samples: mapped and re-enabled, an inherited task
    /// clock gave a child that dropped to another user its root parent's
    /// stacks. Each child now holds no perf event and no /proc file.
    func testAForkedChildHoldsNoneOfColdstartsDescriptors() throws {
        let result = try profiled(["fork-fds", "30"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2, result.stdout)
        for line in lines { XCTAssertTrue(line.hasSuffix("child perf/proc 0 0"), line) }
        // Root may open perf events (a fact of the machine, not of Coldstart):
        // the parent held its task clock when it forked the second child, so
        // the child had one to inherit.
        if geteuid() == 0 {
            XCTAssertFalse(lines.last?.contains("parent perf 0 ") ?? true, "the parent sampled with perf events: \(lines)")
        }
        XCTAssertEqual(try Timeline(contentsOf: timelinePath).launch.endReason, "ready", "the parent's launch is whole")
    }

    // MARK: - Item 12: a span begun right after ready()

    /// The report advises work "after ready()": a span begun there is open
    /// when the ready() writer writes. Its resource use was written as a
    /// wrapped negative delta and the reader rejected the whole file; now the
    /// writer writes no negative delta, and the launch reads whole.
    func testASpanBegunRightAfterReadyKeepsTheLaunch() throws {
        // The span begins within microseconds of ready(), the writer on a
        // thread ready() creates: it usually (6 of 6 in the issue) begins
        // first, and must be in at least one of three launches.
        var recorded = 0
        for _ in 0..<3 {
            let result = try profiled(["span-after-ready"])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(result.stdout, "done\n")
            let timeline = try Timeline(contentsOf: timelinePath)
            XCTAssertEqual(timeline.launch.endReason, "ready")
            XCTAssertEqual(timeline.setAside, [], "nothing out of range")
            guard let span = timeline.spans.first(where: { $0.name == "warm caches" }) else { continue }
            recorded += 1
            XCTAssertTrue(span.unfinished, "open when the timeline was written")
            let usage = try XCTUnwrap(span.rusage)
            XCTAssertEqual([usage.minorFaults, usage.majorFaults, usage.voluntarySwitches, usage.involuntarySwitches, usage.userNs, usage.systemNs],
                           [0, 0, 0, 0, 0, 0], "it ends where it began, as far as the file knows")
        }
        XCTAssertGreaterThan(recorded, 0, "the span was recorded in one of three launches")
    }

    /// A file with one wrapped delta (as the writer wrote a span's before)
    /// reads, with that delta set aside and said so in the report.
    func testAnOutOfRangeDeltaIsSetAsideNotTheLaunch() throws {
        let result = try profiled(["span-after-ready"])
        XCTAssertEqual(result.status, 0, result.stderr)
        var text = try String(contentsOfFile: timelinePath, encoding: .utf8)
        let field = "\"minorFaults\":"
        let phases = try XCTUnwrap(text.range(of: "\"phases\":["))
        let at = try XCTUnwrap(text.range(of: field, range: phases.upperBound..<text.endIndex))
        let end = try XCTUnwrap(text[at.upperBound...].firstIndex(where: { !$0.isNumber }))
        text.replaceSubrange(at.upperBound..<end, with: "18446744073709551611")
        let broken = directory.appendingPathComponent("wrapped.json").path
        try text.write(toFile: broken, atomically: true, encoding: .utf8)
        let timeline = try Timeline(contentsOf: broken)
        XCTAssertEqual(timeline.setAside.count, 1, "\(timeline.setAside)")
        XCTAssertTrue(timeline.setAside.first?.hasPrefix("phases[0].rusage.minorFaults is 18446744073709551611") ?? false, "\(timeline.setAside)")
        XCTAssertNil(timeline.phases.first?.rusage)
        let report = try coldstart(["report", broken])
        XCTAssertEqual(report.status, 0, report.stderr)
        XCTAssertTrue(report.stdout.contains("Set aside (out of range"), report.stdout)
    }

    // MARK: - Item 2: a file size limit below the timeline's size

    /// Past RLIMIT_FSIZE a write raises SIGXFSZ, which ends the whole
    /// process (exit 153 under `ulimit -f 4`). The writer keeps under the
    /// limit: at 4 KiB nothing fits, and the timeline is left out with one
    /// line on stderr; at 6 KiB it fits without its sampling and watch data
    /// (~4.3 KiB; ~11 KiB with them). Whether the shell or the host itself
    /// lowered the limit.
    func testAFileSizeLimitNeverKillsTheHost() throws {
        // dash counts `ulimit -f` in 512-byte blocks.
        let shell = try runProcess("/bin/sh", ["-c", "ulimit -f 8 && exec \"$0\" never-ready 30", host], environment: ["COLDSTART": timelinePath])
        XCTAssertEqual(shell.status, 0, "ulimit -f 8 (4 KiB): \(shell.stderr)")
        XCTAssertTrue(shell.stderr.contains("over the file size limit (RLIMIT_FSIZE)"), shell.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: timelinePath))
        for (bytes, fits) in [(4096, false), (6144, true)] {
            try? FileManager.default.removeItem(atPath: timelinePath)
            let result = try profiled(["fsize", "\(bytes)"])
            XCTAssertEqual(result.status, 0, "RLIMIT_FSIZE \(bytes) set by the host: \(result.stderr)")
            XCTAssertEqual(result.stdout, "written\n")
            if fits {
                let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: timelinePath))) as? [String: Any]
                let limit = try XCTUnwrap((object?["coldstart"] as? [String: Any])?["sizeLimit"] as? [String: Any])
                XCTAssertEqual(limit["maxBytes"] as? Int, bytes)
                XCTAssertEqual(limit["rlimitFsize"] as? Bool, true)
                XCTAssertEqual(limit["dropped"] as? [String], ["sampling", "watch"])
                XCTAssertEqual(try Timeline(contentsOf: timelinePath).launch.endReason, "exit")
            } else {
                XCTAssertTrue(result.stderr.contains("over the file size limit (RLIMIT_FSIZE)"), result.stderr)
                XCTAssertFalse(FileManager.default.fileExists(atPath: timelinePath))
            }
        }
    }

    // MARK: - Item 3: a main thread that ends with pthread_exit

    /// The process ends when its last thread does: glibc's last thread
    /// calls exit(0). Coldstart's threads count among glibc's, so the exit
    /// never came until Coldstart's time limit (here 60 s; the run is killed
    /// at 20 s). With the sampler, with the watcher alone, and with the
    /// sampler alone, one of Coldstart's threads now calls exit(0) once no
    /// thread of the host's is left, and the timeline says so. A main thread
    /// gone before its clock opened is not "perf_event_open refused".
    func testAMainThreadEndingWithPthreadExitLetsTheProcessExit() throws {
        for settings in [[:], ["COLDSTART_SAMPLER": "off"], ["COLDSTART_WATCH": "0"]] as [[String: String?]] {
            for _ in 0..<2 {
                try? FileManager.default.removeItem(atPath: timelinePath)
                let result = try profiled(["main-exit", "100"], settings.merging(["COLDSTART_LIMIT_MS": "60000"]) { $1 }, timeout: 20)
                XCTAssertEqual(result.status, 0, "\(settings): \(result.stderr)")
                XCTAssertEqual(result.stdout, "thread done\n", "\(settings)")
                XCTAssertFalse(result.stderr.contains("refused"), "\(settings): \(result.stderr)")
                let launch = try Timeline(contentsOf: timelinePath).launch
                XCTAssertEqual(launch.endReason, "exit", "\(settings)")
                XCTAssertEqual(launch.exitStatus, 0, "\(settings)")
            }
        }
    }

    // MARK: - Item 10: PID 1 of a pid namespace

    /// A container's entrypoint is PID 1 of its pid namespace: the kernel
    /// never delivers it a signal whose action is the default one, so its
    /// SIGTERM does nothing and it finishes. Coldstart's handler over SIGTERM
    /// made it deliverable: the timeline said "main → SIGTERM, not
    /// completed" while the host went on to exit 0.
    func testPidOneIgnoresSIGTERMAndTheTimelineSaysItFinished() throws {
        // A fact of the machine, probed without Coldstart: pid namespaces here.
        let probe = try runProcess("/usr/bin/unshare", ["-p", "-f", "--mount-proc", "/bin/true"])
        guard probe.status == 0 else { throw XCTSkip("unshare -p -f --mount-proc refused here: \(probe.stderr)") }
        let marker = directory.appendingPathComponent("go").path
        let result = try runProcess("/usr/bin/unshare", ["-p", "-f", "--mount-proc", host, "wait-file", marker],
                                    environment: ["COLDSTART": timelinePath], timeout: 30) { unshare in
            // The host is unshare's child, PID 1 inside.
            var child: pid_t = 0
            for _ in 0..<2000 where child == 0 {
                let children = (try? String(contentsOfFile: "/proc/\(unshare.processIdentifier)/task/\(unshare.processIdentifier)/children", encoding: .utf8)) ?? ""
                child = pid_t(children.split(separator: " ").first ?? "") ?? 0
                if child == 0 { usleep(5_000) }
            }
            usleep(100_000)   // in main, waiting
            if child > 0 { kill(child, SIGTERM) }
            usleep(100_000)
            _ = FileManager.default.createFile(atPath: marker, contents: nil)
        }
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "waiting\ndone\n")
        let launch = try Timeline(contentsOf: timelinePath).launch
        XCTAssertEqual(launch.endReason, "exit", "the launch went on past the SIGTERM")
        XCTAssertEqual(launch.exitStatus, 0)
    }

    // MARK: - Items 5 and 7: calls after which Coldstart cannot go on

    /// unshare(CLONE_NEWUSER), and setns into a mount namespace, fail with
    /// EINVAL in a process of several threads: Coldstart's threads made a
    /// sandboxing host's call fail. A seccomp allow-list on every thread
    /// (TSYNC, kill otherwise) killed the process at Coldstart's next /proc
    /// read (SIGSYS). Coldstart now steps aside: the launch ends there
    /// ("stepped-aside"), its threads end, one line on stderr, and the call
    /// does what it does without Coldstart.
    func testAHostThatSwitchesNamespacesOrSandboxesItselfGetsItsCallAndATimeline() throws {
        for (mode, call) in [("user", "unshare(CLONE_NEWUSER)"), ("mnt", "setns(CLONE_NEWNS)"), ("seccomp", "seccomp(FILTER)")] {
            // What the call does here without Coldstart (a fact of the machine).
            let alone = try runProcess(host, ["unshare", mode])
            XCTAssertEqual(alone.status, 0, alone.stderr)
            let result = try profiled(["unshare", mode])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(result.stdout, alone.stdout, "the call's result as without Coldstart")
            let lines = result.stderr.split(separator: "\n")
            XCTAssertEqual(lines.count, 1, result.stderr)
            XCTAssertTrue(result.stderr.contains("the program called \(call), after which Coldstart cannot go on"), result.stderr)
            let launch = try Timeline(contentsOf: timelinePath).launch
            XCTAssertEqual(launch.endReason, "stepped-aside")
            XCTAssertEqual(launch.asideFor, call)
            let report = try coldstart(["report", timelinePath])
            XCTAssertEqual(report.status, 0, report.stderr)
            XCTAssertTrue(report.stdout.contains("NOT completed: the program called \(call)"), report.stdout)
        }
    }

    // MARK: - Item 9: a supervisor that reaps every child

    /// Coldstart's helper process (it pays a quiet kernel's first perf
    /// event) sends no signal when it ends, so only a wait with __WALL or
    /// __WCLONE sees it: a supervisor reaping with waitpid(-1, __WALL) got
    /// it, a pid it never made, on a quiet kernel (4 of 4 runs). The host's
    /// waits now never return it. The test suite keeps the kernel warm: this
    /// test lets it go quiet, as a lone launch finds it.
    func testASupervisorWaitingForEveryChildGetsOnlyItsOwn() throws {
        try FixturePrograms.withQuietKernel { firstOpenMs in
            // A fact of the machine: the quiet kernel's wait, without which the
            // helper ends within microseconds and nothing can race it.
            guard firstOpenMs >= 2 else {
                throw XCTSkip("a first perf event opened in \(firstOpenMs) ms: the kernel stays warm here (another process holds an event)")
            }
            let result = try profiled(["supervise"])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(result.stdout, "reaped 2 own, 0 other\n")
            XCTAssertNotNil(try Timeline(contentsOf: timelinePath).sampling, "sampled: the helper ran")
        }
    }
}
