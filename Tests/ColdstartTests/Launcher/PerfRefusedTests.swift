@testable import ColdstartAnalysis
import Foundation
import XCTest

/// Profiling where perf_event_open is refused (issue 27; docs/containers.md):
/// under NoPerf, a seccomp filter refusing it with EPERM as a container's
/// default profile does, `coldstart run` traces its child instead, a lone
/// launch falls back to POSIX timers, and the first screen names the cause
/// and the remedy. This machine's stock kernel treats perf_event_paranoid 3
/// like 2, so the filter is the only real refusal here; the unprivileged
/// case runs as `nobody` (setpriv) under the same filter.
final class PerfRefusedTests: XCTestCase {
    private var noPerf: String!
    private var directory: URL!

    override func setUpWithError() throws {
        noPerf = try FixturePrograms.path("NoPerf")
        directory = try makeTemporaryDirectory(for: self)
    }

    private func document(_ path: String) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
        return try XCTUnwrap((object as? [String: Any])?["coldstart"] as? [String: Any])
    }

    /// `coldstart run` under the filter, as `user` when given (setpriv).
    private func run(_ arguments: [String], user: String? = nil, whileRunning: ((Process) -> Void)? = nil) throws -> ProcessResult {
        let command = [noPerf!, try Products.path("coldstart"), "run"] + arguments
        guard let user else {
            return try runProcess(command[0], Array(command.dropFirst()), environment: ["SWIFT_BACKTRACE": "enable=no"], whileRunning: whileRunning)
        }
        return try runProcess("/usr/bin/setpriv", ["--reuid=\(user)", "--regid=nogroup", "--clear-groups", "--"] + command,
                              environment: ["SWIFT_BACKTRACE": "enable=no"])
    }

    func testFilterRefusesPerfEventOpen() throws {
        // perf_event_open(NULL…) is EFAULT when allowed: EPERM means the filter answered.
        let result = try runProcess(noPerf, ["/bin/grep", "^Seccomp:", "/proc/self/status"])
        XCTAssertEqual(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "Seccomp:\t2")
    }

    func testRunTracesEveryThreadFromExecWherePerfIsRefused() throws {
        let out = directory.appendingPathComponent("runs").path
        let result = try run(["-n", "3", "--warmup", "0", "--out", out, try FixturePrograms.path("CodableTool")])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout.components(separatedBy: "300 items, 28223 bytes of JSON").count - 1, 3, "the app's output passes through")
        XCTAssertTrue(result.stderr.contains("sampling by tracing the program instead"), result.stderr)
        for index in 1...3 {
            let path = "\(out)/run-\(index).json"
            let section = try document(path)
            let sampling = try XCTUnwrap(section["sampling"] as? [String: Any])
            XCTAssertEqual(sampling["clock"] as? String, "ptrace")
            XCTAssertEqual(sampling["unwinder"] as? String, "libunwind")
            let launcher = try XCTUnwrap(section["launcher"] as? [String: Any])
            XCTAssertEqual(launcher["threads"] as? String, "ptrace")
            let refusal = try XCTUnwrap(PerfRefusal(json: launcher["perfRefused"]))
            XCTAssertEqual(refusal.errno, 1, "EPERM")
            XCTAssertEqual(refusal.seccomp, 2)
            // The loader is sampled: samples in ld.so, before the app's earliest init.
            let timeline = try Timeline(contentsOf: path)
            let loader = timeline.modules.indices.filter { (timeline.modules[$0].path as NSString).lastPathComponent.hasPrefix("ld-linux") }
            let earliest = try XCTUnwrap(timeline.launch.earliestInitNs)
            XCTAssertTrue(timeline.samples.contains { $0.ns < earliest && loader.contains($0.frames.first?.module ?? -1) },
                          "run-\(index): a sample in the dynamic loader before the earliest init")
            // DWARF-unwound: stacks reach from the app's code back to its start.
            XCTAssertTrue(timeline.samples.contains { $0.frames.count >= 8 }, "run-\(index): deep stacks")
            // Every frame in a module: both loads of libc (the LD_AUDIT namespace has its own) are in the table.
            let unresolved = timeline.samples.filter { $0.frames.contains { $0.module < 0 } }.count
            XCTAssertLessThanOrEqual(unresolved * 50, timeline.samples.count, "run-\(index): \(unresolved) samples with a frame in no module")
            XCTAssertGreaterThanOrEqual(timeline.samples.count, 5, "run-\(index): sampled at ≥ 1 kHz of a ~10 ms launch's CPU")
        }
    }

    /// A program that starts threads all the time is sampled to its end. The
    /// kernel drops a pending interrupt when its thread stops for a clone
    /// event or a signal first; a tracer that waited for the interrupt's own
    /// stop took no sample after the first such race.
    func testThreadChurnKeepsTheTracerSamplingToTheEnd() throws {
        let out = directory.appendingPathComponent("churn").path
        let result = try run(["-n", "1", "--warmup", "0", "--out", out, "--", try FixturePrograms.path("SamplerHost"), "stress", "1"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("stress done: true"), result.stdout)
        let timeline = try Timeline(contentsOf: "\(out)/run-1.json")
        let sampling = try XCTUnwrap(timeline.sampling)
        XCTAssertEqual(sampling.clock, "ptrace")
        // One sample per period of CPU: the rate achieved is the rate asked,
        // less the threads' last part-periods (thousands of threads here).
        XCTAssertGreaterThan(sampling.effectiveHz, sampling.requestedHz / 2, "\(sampling.samples) samples of \(sampling.cpuNs ?? 0) ns of CPU")
        let end = timeline.launch.readyNs ?? timeline.launch.endNs
        let late = timeline.samples.filter { $0.ns > end - 200_000_000 }
        XCTAssertGreaterThan(late.count, 100, "samples in the stress's last 200 ms (\(timeline.samples.count) in all)")
    }

    /// KnownCosts' own measurements against the traced samples, pooled over
    /// five launches, at the tolerance the perf path is held to.
    func testKnownCostsHoldPooledUnderTheTracer() throws {
        let out = directory.appendingPathComponent("known").path
        let result = try run(["-n", "5", "--out", out, "--", try FixturePrograms.path("KnownCosts")])
        XCTAssertEqual(result.status, 0, result.stderr)
        let measured = result.stderr.split(separator: "\n").compactMap { line -> [String: Double]? in
            guard line.hasPrefix("{"), let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return object.compactMapValues { ($0 as? NSNumber)?.doubleValue }
        }.suffix(5)
        XCTAssertEqual(measured.count, 5, "KnownCosts measured each launch")
        func mean(_ name: String) -> Double { measured.compactMap { $0[name] }.reduce(0, +) / Double(max(measured.count, 1)) }
        let json = try coldstart(["report", "--json", "--top", "50", out])
        XCTAssertEqual(json.status, 0, json.stderr)
        let pool = try JSONDecoder().decode(PooledLaunches.self, from: Data(json.stdout.utf8))
        XCTAssertEqual(pool.profile.launches, 5)
        for (function, _) in KnownCostsTests.functions {
            let name = KnownCostsTests.demangled(function)
            let row = try XCTUnwrap(pool.profile.byTotal.first { $0.name == name }, "\(name) among \(pool.profile.byTotal.map(\.name))")
            XCTAssertEqual(row.totalMsPerLaunch, mean(function), accuracy: mean(function) * KnownCostsTests.tolerance, name)
        }
        // The constructor (built without frame pointers) calls clock_gettime
        // in the program's libc, not the LD_AUDIT namespace's copy of it: its
        // samples there reach it only when the tracer unwinds each load of a
        // file with its own bias (24–26 ms of 30 when the loads shared one;
        // 30.7 of 30.0 since). Held to 10%, as the other costs hold within 2%
        // under the tracer: the suite's 25% would not tell the two apart.
        let library = try XCTUnwrap(pool.profile.initializers.libraries.first)
        XCTAssertEqual(library.module, "libSlowInit.so")
        XCTAssertEqual(library.msPerLaunch, mean("constructor"), accuracy: mean("constructor") * 0.10, "libSlowInit.so's initializer")
        let global = try XCTUnwrap(pool.profile.lazyGlobals.first)
        XCTAssertEqual(global.name, "KnownCosts.slowGlobalTable")
        XCTAssertEqual(global.msPerLaunch, mean("slowGlobalTable"), accuracy: mean("slowGlobalTable") * KnownCostsTests.tolerance)
    }

    func testTracedProgramKeepsItsWaitsSignalsAndExitStatus() throws {
        let host = try FixturePrograms.path("SamplerHost")
        let out = directory.appendingPathComponent("waits").path
        let waits = try run(["-n", "1", "--warmup", "0", "--out", out, host, "waits"])
        XCTAssertEqual(waits.status, 0, waits.stderr)
        try assertWaitsWhole(waits.stdout, "under coldstart run's tracer")
        let sleep = try run(["-n", "1", "--warmup", "0", "--out", out, "--append", host, "sleep"])
        let report = String(sleep.stdout.prefix { $0 != "\n" })
        let slept = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])?["sleptUs"] as? [Int])
        XCTAssertTrue(slept.allSatisfy { $0 >= 50_000 }, "usleep(50 ms) slept whole when traced: \(slept)")
        let exit = try run(["-n", "1", "--warmup", "0", "--out", out, "--append", host, "exit", "3"])
        XCTAssertEqual(exit.status, 3, "the program's exit status is coldstart run's")
        // A signal sent to the program reaches it (the tracer gives it back): SIGTERM ends it as without a tracer.
        let killed = try run(["-n", "1", "--warmup", "0", "--timeout", "0.5", "--out", out, "--append", host, "burn", "5000"])
        XCTAssertEqual(killed.status, 128 + SIGTERM, killed.stderr)
    }

    /// A group stop stays a stop under the tracer (issue 35 item 4), as
    /// without one: `raise(SIGSTOP)` stops the whole program until SIGCONT,
    /// which the tracer used to resume at once. Stopped means, for 300 ms on
    /// end, every thread in a stop state ('T', or 't': a traced process's
    /// group stop is a ptrace stop) and no CPU time gained.
    func testTracedProgramKeepsAGroupStopUntilContinued() throws {
        let pidFile = directory.appendingPathComponent("stop.pid").path
        let out = directory.appendingPathComponent("stop").path
        var observed: [String] = []
        // No reference launch: it runs the program untraced, and would stop it too.
        let arguments = ["-n", "1", "--warmup", "0", "--no-reference", "--out", out, "--", try FixturePrograms.path("SamplerHost"), "stop", pidFile]
        let result = try run(arguments) { _ in
            var pid: pid_t = 0
            for _ in 0..<3_000 where pid == 0 {
                pid = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap { pid_t($0) } ?? 0
                if pid == 0 { usleep(10_000) }
            }
            guard pid > 0 else { return observed.append("no pid in \(pidFile) after 30 s") }
            // Whatever was seen, the program is let go: a failure must not hang the test.
            defer { kill(pid, SIGCONT) }
            // Up to 5 s for the stop to begin, then 30 looks in a row.
            var stopped = 0, lastCPU = -1
            for _ in 0..<500 where stopped < 30 {
                usleep(10_000)
                let threads = Self.threadStates(pid)
                let cpu = threads.reduce(0) { $0 + $1.cpuTicks }
                let allStopped = threads.allSatisfy { $0.state == "T" || $0.state == "t" }
                stopped = allStopped && (stopped == 0 || cpu == lastCPU) ? stopped + 1 : 0
                lastCPU = cpu
                guard !threads.isEmpty else { return observed.append("exited") }
                observed.append(String(threads.map(\.state)))
            }
            if stopped >= 30 { observed = [] }
        }
        XCTAssertEqual(observed, [], "the program stayed stopped for 300 ms until SIGCONT (each thread's state, every 10 ms)")
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("continued"), result.stdout)
        let timeline = try Timeline(contentsOf: "\(out)/run-1.json")
        XCTAssertEqual(timeline.sampling?.clock, "ptrace")
        // The 100 ms burnt after SIGCONT are sampled: the tracer samples on.
        let end = try XCTUnwrap(timeline.launch.readyNs)
        let late = timeline.samples.filter { $0.ns > end - 80_000_000 }
        XCTAssertGreaterThanOrEqual(late.count, 10, "samples in the last 80 ms before ready() (\(timeline.samples.count) in all)")
    }

    /// Each thread of `pid`: its state letter and its user + system CPU
    /// time in clock ticks (/proc/PID/task/TID/stat, after the last ')').
    private static func threadStates(_ pid: pid_t) -> [(state: Character, cpuTicks: Int)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { tid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let state = fields[0].first, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
            return (state, user + system)
        }
    }

    func testLoneLaunchWaitsAreWholeUnderTheFallback() throws {
        let path = directory.appendingPathComponent("lone.json").path
        let result = try runProcess(noPerf, [try FixturePrograms.path("SamplerHost"), "waits"], environment: ["COLDSTART": path])
        XCTAssertEqual(result.status, 0, result.stderr)
        try assertWaitsWhole(result.stdout, "sampled by the POSIX fallback")
        XCTAssertEqual(try Timeline(contentsOf: path).sampling?.clock, "posix-cpu-timer")
    }

    private func assertWaitsWhole(_ stdout: String, _ how: String, file: StaticString = #filePath, line: UInt = #line) throws {
        // The first line: coldstart run's summary follows the program's output.
        let output = String(stdout.prefix { $0 != "\n" })
        let calls = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]], stdout, file: file, line: line)
        XCTAssertEqual(calls.count, 7, file: file, line: line)
        for call in calls {
            let name = call["call"] as? String ?? "?"
            XCTAssertEqual(call["errno"] as? Int, 0, "\(name) saw no EINTR \(how)", file: file, line: line)
            if name == "epoll_wait-data" {
                XCTAssertEqual(call["result"] as? Int, 1, "the wait ended by data got it \(how)", file: file, line: line)
            } else {
                XCTAssertEqual(call["result"] as? Int, 0, file: file, line: line)
                XCTAssertGreaterThanOrEqual(call["us"] as? Int ?? 0, 50_000, "\(name) lasted its 50 ms timeout \(how)", file: file, line: line)
            }
        }
    }

    /// The report's first 40 lines, with the wrapped sentences joined again.
    private func firstScreen(_ path: String) throws -> String {
        try coldstart(["report", path]).stdout.components(separatedBy: "\n").prefix(40)
            .map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
    }

    func testFirstScreenNamesTheCauseAndTheRemedy() throws {
        // A lone launch: the POSIX fallback, its rate said plainly.
        let path = directory.appendingPathComponent("lone.json").path
        let lone = try runProcess(noPerf, [try FixturePrograms.path("CodableTool")], environment: ["COLDSTART": path])
        XCTAssertEqual(lone.status, 0, lone.stderr)
        let refusal = try XCTUnwrap(PerfRefusal(json: (try document(path)["sampling"] as? [String: Any])?["perfRefused"]),
                                    "the timeline records why perf was refused")
        XCTAssertEqual(refusal.errno, 1)
        XCTAssertEqual(refusal.seccomp, 2)
        XCTAssertNotNil(refusal.paranoid)
        let screen = try firstScreen(path)
        XCTAssertTrue(screen.contains("by a seccomp filter"), screen)
        XCTAssertTrue(screen.contains("POSIX CPU-time timers"), screen)
        XCTAssertTrue(screen.contains("docker run --cap-add PERFMON"), screen)
        XCTAssertTrue(screen.contains("capabilities: {add: [\"PERFMON\"]}"), screen)
        XCTAssertTrue(screen.contains("coldstart run"), screen)
        XCTAssertFalse(screen.contains("before the first sampling period (3000 Hz)"), "the tick rate, not the rate asked: \(screen)")
        XCTAssertFalse(screen.contains("Sampling began late"), "a POSIX timer does not wait for the kernel's first perf event")

        // Under coldstart run: the tracer and its rate.
        let out = directory.appendingPathComponent("runs").path
        XCTAssertEqual(try run(["-n", "1", "--warmup", "0", "--out", out, try FixturePrograms.path("CodableTool")]).status, 0)
        let traced = try firstScreen("\(out)/run-1.json")
        XCTAssertTrue(traced.contains("sampled from exec by ptrace (perf refused)"), traced)
        XCTAssertTrue(traced.contains("coldstart run sampled every thread by ptrace"), traced)
        XCTAssertTrue(traced.contains("--cap-add PERFMON"), traced)
    }

    func testAnUnprivilegedUserIsTracedToo() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            throw XCTSkip("needs root and setpriv to become nobody")
        }
        // nobody may write only there; the fixtures and coldstart are world-readable.
        chmod(directory.path, 0o777)
        let out = directory.appendingPathComponent("nobody").path
        let result = try run(["-n", "1", "--warmup", "0", "--out", out, try FixturePrograms.path("FoundationTool")], user: "nobody")
        XCTAssertEqual(result.status, 0, result.stderr)
        let section = try document("\(out)/run-1.json")
        XCTAssertEqual((section["sampling"] as? [String: Any])?["clock"] as? String, "ptrace")
        let refusal = try XCTUnwrap(PerfRefusal(json: (section["launcher"] as? [String: Any])?["perfRefused"]))
        XCTAssertEqual(refusal.capPerfmon, false, "nobody has no CAP_PERFMON")
        XCTAssertEqual(refusal.capSysAdmin, false)
        XCTAssertGreaterThan((section["samples"] as? [Any])?.count ?? 0, 5, "a parent may trace its child without privileges")
    }

    /// The remedy `sudo setcap cap_perfmon+ep` on the CLI, tested as far as
    /// this machine can: run by `nobody`, the launcher has CAP_PERFMON (its
    /// events on the child may sample kernel mode, which paranoid 2 refuses
    /// an unprivileged user), the program it starts has no capability and is
    /// not in secure-execution mode, and gets back the variables glibc took
    /// from the CLI's environment.
    func testSetcapOnTheCLIGivesTheLauncherPerfmonAndTheProgramNothing() throws {
        // Each fact probed on its own, so the skip names only what is missing.
        var missing: [String] = []
        if getuid() != 0 { missing.append("root (to set a file capability and become nobody)") }
        if !FileManager.default.isExecutableFile(atPath: "/usr/sbin/setcap") { missing.append("/usr/sbin/setcap (apt-get install libcap2-bin)") }
        if !FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") { missing.append("/usr/bin/setpriv (util-linux)") }
        guard missing.isEmpty else { throw XCTSkip("needs " + missing.joined(separator: " and ")) }
        chmod(directory.path, 0o777)
        let capped = directory.appendingPathComponent("coldstart").path
        try FileManager.default.copyItem(atPath: try Products.path("coldstart"), toPath: capped)
        let setcap = try runProcess("/usr/sbin/setcap", ["cap_perfmon+ep", capped])
        guard setcap.status == 0 else { throw XCTSkip("this file system keeps no file capabilities: \(setcap.stderr)") }
        let probe = directory.appendingPathComponent("probe.sh").path
        try """
        #!/bin/sh
        grep '^CapEff' /proc/self/status
        echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH-unset} TMPDIR=${TMPDIR-unset}"
        od -An -tu8 -w16 /proc/self/auxv | awk '$1 == 23 { print "AT_SECURE=" $2 }'

        """.write(toFile: probe, atomically: true, encoding: .utf8)
        chmod(probe, 0o755)
        func launch(_ cli: String, _ name: String) throws -> (ProcessResult, [String: Any]) {
            let out = directory.appendingPathComponent(name).path
            let result = try runProcess("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                                                             "/usr/bin/env", "LD_LIBRARY_PATH=/opt/example", "TMPDIR=/tmp/example",
                                                             cli, "run", "-n", "1", "--warmup", "0", "--out", out, probe],
                                        environment: ["SWIFT_BACKTRACE": "enable=no"])
            XCTAssertEqual(result.status, 0, result.stderr)
            return (result, try document("\(out)/run-1.json"))
        }
        let (result, section) = try launch(capped, "capped")
        XCTAssertTrue(result.stdout.contains("CapEff:\t0000000000000000"), "the program gets no capability: \(result.stdout)")
        XCTAssertTrue(result.stdout.contains("AT_SECURE=0"), "nor secure-execution mode: \(result.stdout)")
        XCTAssertTrue(result.stdout.contains("LD_LIBRARY_PATH=/opt/example TMPDIR=/tmp/example"),
                      "the variables glibc removed from the CLI's environment are the program's again: \(result.stdout)")
        XCTAssertNotNil((section["launcher"] as? [String: Any])?["kernelSamples"], "CAP_PERFMON: kernel-mode samples of the child")
        let (_, plain) = try launch(try Products.path("coldstart"), "plain")
        XCTAssertNil((plain["launcher"] as? [String: Any])?["kernelSamples"], "without it, paranoid 2 refuses nobody kernel mode")
    }
}
