import ColdstartAnalysis
import Foundation
import XCTest

/// The stack sampler, end to end: SamplerHost runs under profiling and must
/// behave exactly as without it, and the samples it leaves must be usable.
final class SamplerTests: XCTestCase {
    private var host: String!
    private var directory: URL!

    override func setUpWithError() throws {
        host = try FixturePrograms.path("SamplerHost")
        directory = try makeTemporaryDirectory(for: self)
    }

    /// Runs SamplerHost profiled and returns what it printed and its timeline.
    /// `cpu`: the one CPU it may run on (taskset).
    private func profiled(
        _ arguments: [String], hz: Int = 1000, sampler: String? = nil, extra: [String: String?] = [:], cpu: Int? = nil,
        timeout: TimeInterval = 60, file: StaticString = #filePath, line: UInt = #line
    ) throws -> (ProcessResult, Timeline) {
        let path = directory.appendingPathComponent("\(UUID().uuidString).json").path
        var environment: [String: String?] = ["COLDSTART": path, "COLDSTART_HZ": String(hz), "COLDSTART_SAMPLER": sampler]
        for (key, value) in extra { environment[key] = value }
        let host: String = self.host
        let (executable, all) = cpu.map { ("/usr/bin/taskset", ["-c", String($0), host] + arguments) } ?? (host, arguments)
        let result = try runProcess(executable, all, environment: environment, timeout: timeout)
        XCTAssertEqual(result.status, 0, "SamplerHost \(arguments) failed: \(result.stderr)", file: file, line: line)
        return (result, try Timeline(contentsOf: path))
    }

    private func sampling(_ timeline: Timeline, file: StaticString = #filePath, line: UInt = #line) throws -> Timeline.Sampling {
        try XCTUnwrap(timeline.sampling, "the timeline has a sampling section", file: file, line: line)
    }

    /// Skips only where perf_event_open is refused, which a direct probe
    /// (MachineProbes) decides without the sampler. Where it is allowed each
    /// test asserts that its launch took the perf task clock
    /// (`assertPerfClock`): a perf path that fell back to POSIX timers fails
    /// instead of skipping the tests that check it.
    private func perfClockOrSkip() throws {
        try MachineProbes.requirePerf()
    }

    private func assertPerfClock(_ timeline: Timeline, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(timeline.sampling?.clock, "perf-task-clock", "perf_event_open is allowed here: the sampler must not fall back",
                       file: file, line: line)
    }

    func testSleepsAndBlockingReadsAreNotCutShort() throws {
        for (hz, sampler) in [(1000, nil), (10000, nil), (1000, "posix")] as [(Int, String?)] {
            let (result, timeline) = try profiled(["sleep"], hz: hz, sampler: sampler)
            let report = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            let slept = try XCTUnwrap(report?["sleptUs"] as? [Int])
            XCTAssertEqual(slept.count, 3)
            for microseconds in slept {
                XCTAssertGreaterThanOrEqual(microseconds, 50_000, "usleep(50 ms) slept its full time at \(hz) Hz (\(sampler ?? "default"))")
            }
            XCTAssertEqual(report?["read"] as? Int, 1, "a blocking read is not interrupted (errno \(report?["readErrno"] ?? "?"))")
            XCTAssertEqual(report?["byte"] as? Int, 42)
            XCTAssertGreaterThan(try sampling(timeline).samples, 0, "the burning thread was sampled meanwhile")
        }
    }

    func testExceptionsStillWorkWhileSampled() throws {
        for hz in [1000, 10000] {
            let (result, timeline) = try profiled(["exception", "100"], hz: hz)
            XCTAssertEqual(result.stdout, "every exception caught: true\n", "C++ and Swift throws are caught at \(hz) Hz")
            XCTAssertGreaterThan(try sampling(timeline).samples, 0)
        }
    }

    func testEffectiveRateIsWithinTenPercentOfTheRequest() throws {
        try perfClockOrSkip()
        for hz in [1000, 10000] {
            let stolenBefore = stolenTicks()
            let (_, timeline) = try profiled(["burn", "300"], hz: hz)
            // The task clock counts time stolen from the burning thread, its
            // CPU clock does not: at most the machine's whole steal meanwhile.
            let stolenShare = stolenMs(since: stolenBefore) / 300
            let sampling = try sampling(timeline)
            XCTAssertEqual(sampling.clock, "perf-task-clock")
            XCTAssertEqual(sampling.requestedHz, Double(hz))
            XCTAssertNil(sampling.loweredHz, "a 1 µs handler never needs a lower rate")
            XCTAssertEqual(sampling.effectiveHz, Double(hz), accuracy: Double(hz) * (0.10 + stolenShare),
                           "effective rate at \(hz) Hz, steal up to \(stolenShare) of the burn")
            XCTAssertEqual(sampling.dropped, 0)
        }
    }

    func testThePOSIXTimerFallbackSamplesWhenForced() throws {
        let (result, timeline) = try profiled(["burn", "300"], hz: 1000, sampler: "posix")
        XCTAssertEqual(result.stderr, "")
        let sampling = try sampling(timeline)
        XCTAssertEqual(sampling.clock, "posix-cpu-timer")
        XCTAssertEqual(sampling.requestedHz, 1000)
        // Capped by the kernel tick (250 Hz here), never above what was asked.
        XCTAssertGreaterThan(sampling.effectiveHz, 50)
        XCTAssertLessThanOrEqual(sampling.effectiveHz, 1100)
        XCTAssertGreaterThan(sampling.samples, 300 * Int(sampling.effectiveHz) / 1000 / 2, "about 300 ms of samples")
        XCTAssertFalse(timeline.samples.isEmpty)
    }

    func testThreadsStartedDuringTheLaunchAreSampled() throws {
        let (_, timeline) = try profiled(["threads"])
        let main = timeline.launch.mainNs
        let tids = Set(timeline.samples.filter { $0.ns > main }.map(\.tid))
        XCTAssertGreaterThanOrEqual(tids.count, 3, "each of the three burning threads has samples: \(tids)")
        let named = Set(timeline.threads.map(\.tid))
        XCTAssertTrue(tids.isSubset(of: named), "sampled threads are listed in threads")
    }

    func testSamplesLoadAndLeavesAreInTheBurningFunction() throws {
        let (_, timeline) = try profiled(["burn", "200", "5"])
        let sampling = try sampling(timeline)
        XCTAssertEqual(sampling.unwinder, "libunwind")
        XCTAssertEqual(sampling.samples, timeline.samples.count)
        XCTAssertGreaterThan(timeline.samples.count, 100)
        XCTAssertTrue(zip(timeline.samples, timeline.samples.dropFirst()).allSatisfy { $0.tid != $1.tid || $0.ns <= $1.ns }, "time order per thread")
        XCTAssertTrue(timeline.samples.allSatisfy { $0.ns >= sampling.startNs && $0.ns <= sampling.stopNs })
        // The main thread's clock started after .preinit_array (on the scan
        // thread): samples come from then (its time is read just after the
        // clock is enabled, so one may precede it by microseconds).
        let armed = try XCTUnwrap(sampling.clockArmedNs, "when the main thread's clock started")
        XCTAssertGreaterThanOrEqual(armed, sampling.startNs)
        XCTAssertTrue(timeline.samples.allSatisfy { $0.ns >= armed - 1_000_000 }, "no sample before the clock ran")
        let executable = try XCTUnwrap(timeline.modules.firstIndex { $0.path == timeline.process.executable }, "the executable is a module")
        let module = timeline.modules[executable]
        XCTAssertNotNil(module.buildId, "the executable's GNU build-id is recorded")
        XCTAssertLessThanOrEqual(module.base, module.start)
        let afterMain = timeline.samples.filter { $0.ns > timeline.launch.mainNs }
        let inExecutable = afterMain.filter { $0.frames.first?.module == executable }
        XCTAssertGreaterThan(inExecutable.count, afterMain.count * 8 / 10, "a CPU burn in the executable puts most leaves there")
        // Five extra frames of burnAtDepth, then main: deep stacks, not just leaves.
        let depths = afterMain.map(\.frames.count).sorted()
        XCTAssertGreaterThanOrEqual(depths[depths.count / 2], 9, "median depth")
        XCTAssertTrue(timeline.samples.allSatisfy { $0.frames.allSatisfy { $0.module >= -1 } })
    }

    /// No sample costs the host a signal: at each overflow the kernel copies
    /// the registers and the top of the stack into the thread's ring, and
    /// Coldstart's scan thread unwinds the copy with DWARF CFI. Every sample
    /// is the kernel's, in time order, as deep as the frame-pointer walk, no
    /// handler ran, and none was lost.
    func testTheKernelRecordsEverySampleWithoutASignal() throws {
        try perfClockOrSkip()
        let (_, timeline) = try profiled(["burn", "200", "5"])
        assertPerfClock(timeline)
        let sampling = try sampling(timeline)
        let kernel = try XCTUnwrap(sampling.kernelStacks)
        XCTAssertNil(kernel.untilNs, "never switched to signals")
        XCTAssertEqual(kernel.lost, 0)
        XCTAssertEqual(kernel.samples, sampling.samples)
        XCTAssertEqual(kernel.dwarf, sampling.samples, "every stack unwound from the kernel's copy")
        XCTAssertGreaterThan(sampling.samples, 150, "200 ms of CPU at 1 kHz")
        XCTAssertEqual(sampling.handlerNs?.totalNs, 0)
        XCTAssertTrue(zip(timeline.samples, timeline.samples.dropFirst()).allSatisfy { $0.tid != $1.tid || $0.ns <= $1.ns }, "time order per thread")
        let executable = try XCTUnwrap(timeline.modules.firstIndex { $0.path == timeline.process.executable })
        let afterMain = timeline.samples.filter { $0.ns > timeline.launch.mainNs }
        XCTAssertGreaterThan(afterMain.filter { $0.frames.first?.module == executable }.count, afterMain.count * 8 / 10)
        let depths = afterMain.map(\.frames.count).sorted()
        XCTAssertGreaterThanOrEqual(depths[depths.count / 2], 9, "burnAtDepth's five frames, then main")
    }

    /// The bridge (performance.md, "The bridge"): while the task clocks are
    /// held back, as a quiet kernel holds them back 10–18 ms (here 60 ms,
    /// `COLDSTART_BRIDGE_HOLD_MS`, on any kernel), CPU-wide events sample
    /// the host from its first millisecond, and only the host: a process
    /// spinning beside it on the other CPU is sampled by the same events,
    /// and none of its samples is in the file. Without the bridge
    /// (`COLDSTART_BRIDGE=0`) the launch's first 60 ms have no sample.
    /// `COLDSTART_BRIDGE_HOLD_MS` is read by SamplerHost's own BridgeHold
    /// (Tests/Fixtures), never by the capture layer.
    func testTheBridgeSamplesOnlyTheHostWhileItsClocksAreHeldBack() throws {
        try perfClockOrSkip()
        if !MachineProbes.cpuWideAllowed {
            throw XCTSkip("CPU-wide perf events need CAP_PERFMON or perf_event_paranoid <= 0 (it is \(MachineProbes.paranoid)): no bridge here")
        }
        // Host and spinner pinned to CPUs of their own: the spinner never
        // takes the host's CPU, so the host has the hold's 60 ms to run in,
        // and always runs under one of the bridge's events.
        let cpus = allowedCPUs()
        guard cpus.count >= 2 else {
            throw XCTSkip("this test process may run on \(cpus) only (/proc/self/status, Cpus_allowed_list): host and spinner need a CPU each")
        }
        let spinner = Process()
        spinner.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
        spinner.arguments = ["-c", String(cpus[1]), "/bin/sh", "-c", "while :; do :; done"]
        try spinner.run()
        defer { spinner.terminate(); spinner.waitUntilExit() }
        let holdNs: Int64 = 60_000_000
        let (_, timeline) = try profiled(["burn", "100"], extra: ["COLDSTART_BRIDGE_HOLD_MS": "60"], cpu: cpus[0])
        assertPerfClock(timeline)
        let sampling = try sampling(timeline)
        let bridge = try XCTUnwrap(sampling.bridge, "CPU-wide events opened while the task clocks were held back")
        let armed = try XCTUnwrap(sampling.clockArmedNs)
        XCTAssertGreaterThanOrEqual(armed - bridge.openNs, holdNs, "the task clocks were held back")
        let early = timeline.samples.filter { $0.ns < armed }
        // The host runs its initializers, then a CPU burn: a sample per 1 ms
        // period of its user CPU (the initializers' time is mostly the
        // kernel's), from the first.
        XCTAssertGreaterThanOrEqual(early.count, 10, "samples while the task clocks were held back (\(bridge))")
        let first = try XCTUnwrap(early.map(\.ns).min())
        XCTAssertLessThan(first - bridge.openNs, 20_000_000, "a sample within 20 ms of the bridge's opening, long before the clock")
        XCTAssertEqual(bridge.samples, early.count, "every sample before the main thread's clock is the bridge's")
        XCTAssertEqual(bridge.lost, 0)
        XCTAssertEqual(sampling.sampledFromNs, bridge.openNs, "the host counts as sampled from the bridge's opening")
        // Only the host's: the spinner's samples were taken and dropped.
        XCTAssertGreaterThan(bridge.foreign, 0, "the spinner beside it was sampled by the bridge and dropped")
        let hostThreads = Set(timeline.threads.map(\.tid)).union([timeline.process.pid])
        XCTAssertFalse(timeline.samples.contains { $0.tid == Int(spinner.processIdentifier) })
        XCTAssertTrue(timeline.samples.allSatisfy { hostThreads.contains($0.tid) },
                      "every sample is one of the host's threads': \(Set(timeline.samples.map(\.tid)).subtracting(hostThreads))")
        XCTAssertTrue(zip(timeline.samples, timeline.samples.dropFirst()).allSatisfy { $0.tid != $1.tid || $0.ns <= $1.ns }, "time order per thread")

        // Without it, the same hold leaves the launch's start unsampled.
        let (_, without) = try profiled(["burn", "100"], extra: ["COLDSTART_BRIDGE_HOLD_MS": "60", "COLDSTART_BRIDGE": "0"], cpu: cpus[0])
        let plain = try self.sampling(without)
        XCTAssertNil(plain.bridge)
        let plainArmed = try XCTUnwrap(plain.clockArmedNs)
        XCTAssertFalse(without.samples.contains { $0.ns < plainArmed - 1_000_000 }, "no sample before the held clock")
    }

    func testTheFramePointerUnwinderIsAnOption() throws {
        let (_, timeline) = try profiled(["burn", "200", "5"], extra: ["COLDSTART_UNWINDER": "fp"])
        XCTAssertEqual(try sampling(timeline).unwinder, "frame-pointer")
        let afterMain = timeline.samples.filter { $0.ns > timeline.launch.mainNs }
        XCTAssertFalse(afterMain.isEmpty)
        let depths = afterMain.map(\.frames.count).sorted()
        XCTAssertGreaterThanOrEqual(depths[depths.count / 2], 7, "Swift keeps frame pointers: burnAtDepth's frames are walked")
        // With frame pointers the unwinder anyway, the kernel walks them for
        // the whole launch: no signal, no handler, past the first 50 ms too.
        let sampling = try sampling(timeline)
        // Decided by the probe, not by the clock the sampler reports.
        if MachineProbes.perfAllowed {
            XCTAssertEqual(sampling.clock, "perf-task-clock")
            XCTAssertNil(sampling.kernelStacks?.untilNs)
            XCTAssertEqual(sampling.kernelStacks?.samples, sampling.samples)
            XCTAssertGreaterThan(sampling.samples, 150, "200 ms of CPU at 1 kHz")
            XCTAssertEqual(sampling.handlerNs?.totalNs, 0)
        }
    }

    func testInvalidRateFallsBackToTheDefaultWithOneLine() throws {
        try perfClockOrSkip()
        let (result, timeline) = try profiled(["burn", "50"], extra: ["COLDSTART_HZ": "20000"])
        assertPerfClock(timeline)
        XCTAssertEqual(result.stderr, "coldstart: ignoring COLDSTART_HZ (want 10 to 10000): 20000\n")
        let boost = try XCTUnwrap(try sampling(timeline).boost, "the default: a boosted start, then 1 kHz")
        XCTAssertEqual(boost.afterHz, 1000)
    }

    /// Without COLDSTART_HZ sampling runs at 3 kHz until the host has had
    /// 50 ms of CPU. A launch that outlives that has its boosted samples
    /// thinned per thread, so the file holds one rate, 1 kHz, within the same
    /// 10% as an asked-for rate.
    func testTheDefaultRateBoostsTheStartAndTheFileKeepsOneRate() throws {
        try perfClockOrSkip()
        let (_, long) = try profiled(["burn", "300"], extra: ["COLDSTART_HZ": nil])
        assertPerfClock(long)
        let thinned = try sampling(long)
        let boost = try XCTUnwrap(thinned.boost)
        XCTAssertEqual(boost.hz, 3000)
        XCTAssertTrue(boost.thinned, "a 300 ms burn outlives the boost's 50 ms of CPU")
        XCTAssertEqual(thinned.requestedHz, 1000)
        XCTAssertEqual(thinned.effectiveHz, 1000, accuracy: 100, "one rate after thinning")
        XCTAssertEqual(thinned.samples, long.samples.count)
        XCTAssertLessThan(boost.untilNs, long.launch.endNs, "the boost's end is when the clocks went back")
    }

    /// The boost goes by the host's CPU, not wall time: a 10 ms burn that
    /// then sleeps 80 ms (or that a busy machine stretches the same way)
    /// keeps all its 3 kHz samples.
    func testAShortLaunchKeepsItsBoostedSamplesHoweverLongItsWallTime() throws {
        try perfClockOrSkip()
        let (_, short) = try profiled(["burn", "10", "0", "80"], extra: ["COLDSTART_HZ": nil])
        assertPerfClock(short)
        let quick = try sampling(short)
        let boost = try XCTUnwrap(quick.boost)
        XCTAssertFalse(boost.thinned, "10 ms of CPU in 90 ms of wall time is inside the boost")
        XCTAssertEqual(quick.requestedHz, 3000)
        XCTAssertGreaterThan(quick.samples, 10, "a 10 ms burn at 3 kHz gets tens of samples, not a handful")
    }

    func testSamplingOffLeavesNoSamplingSection() throws {
        let (result, timeline) = try profiled(["burn", "50"], sampler: "off")
        XCTAssertEqual(result.stderr, "")
        XCTAssertNil(timeline.sampling)
        XCTAssertTrue(timeline.samples.isEmpty)
    }

    func testLibraryInitializersStillSeeTheEnvironment() throws {
        // libunwind is loaded before libc's own constructor has run; libc must
        // still hand later initializers the environment and the program name.
        let knownCosts = try FixturePrograms.path("KnownCosts")
        let path = directory.appendingPathComponent("known.json").path
        for environment in [[:], ["COLDSTART": path]] as [[String: String?]] {
            let result = try runProcess(knownCosts, environment: environment)
            XCTAssertEqual(result.status, 0)
            XCTAssertTrue(result.stderr.contains("\"environmentAtInit\":true"), "profiled: \(environment.isEmpty ? "no" : "yes"); \(result.stderr)")
        }
        XCTAssertNotNil(try Timeline(contentsOf: path).sampling)
    }

    func testTheSignalIsOursOnlyWhileSampling() throws {
        XCTAssertEqual(try runProcess(host, ["disposition"]).stdout, "during: default, after: default\n", "not profiled: untouched")
        let (result, _) = try profiled(["disposition"])
        XCTAssertEqual(result.stdout, "during: handled, after: default\n", "SIGURG and SIGPROF are given back once sampling is over")
    }

    func testStressDlopenMallocAndThrowingNeitherCrashesNorHangs() throws {
        // Ten runs of 1 s at 10 kHz, each bounded: a deadlock shows as a timeout.
        var dropped = 0
        for run in 0..<10 {
            let small = run == 0
            let (result, timeline) = try profiled(
                ["stress", "1"], hz: 10000,
                extra: small ? ["COLDSTART_MAX_SAMPLES": "100"] : [:], timeout: 30)
            XCTAssertEqual(result.stdout, "stress done: true\n", "run \(run)")
            let sampling = try sampling(timeline)
            XCTAssertEqual(sampling.samples, timeline.samples.count)
            if small {
                XCTAssertEqual(sampling.samples, 100, "a full buffer keeps what it has")
                dropped = sampling.dropped
            }
        }
        XCTAssertGreaterThan(dropped, 0, "samples past a full buffer are counted as dropped")
    }

    func testNotProfilingLoadsNoLibunwindAndChangesNothing() throws {
        let plain = try runProcess(host, ["maps"])
        XCTAssertEqual(plain.stdout, "libunwind mapped: no\n", "profiling off: libunwind is not loaded")
        XCTAssertEqual(plain.stderr, "")
        let (profiledRun, timeline) = try profiled(["maps"])
        XCTAssertEqual(profiledRun.stdout, "libunwind mapped: yes\n", "profiling on: libunwind is loaded, privately")
        // By Coldstart's scan thread once main runs, not on the host's main
        // thread before its library initializers.
        let sampling = try XCTUnwrap((timeline.document["coldstart"] as? [String: Any])?["sampling"] as? [String: Any])
        let ready = try XCTUnwrap((sampling["unwinderReadyNs"] as? NSNumber)?.int64Value, "when libunwind became usable")
        XCTAssertGreaterThan(ready, timeline.launch.mainNs)

        let exitPlain = try runProcess(host, ["exit", "3"])
        let path = directory.appendingPathComponent("exit.json").path
        let exitProfiled = try runProcess(host, ["exit", "3"], environment: ["COLDSTART": path])
        XCTAssertEqual(exitPlain.status, 3)
        XCTAssertEqual(exitProfiled.status, exitPlain.status, "the exit status is the host's")
        XCTAssertEqual(exitProfiled.stdout, exitPlain.stdout)
        XCTAssertEqual(exitProfiled.stderr, exitPlain.stderr)
        XCTAssertEqual(try Timeline(contentsOf: path).launch.exitStatus, 3)
    }

    func testTheHostsExceptionsStillBindToLibgcc() throws {
        let path = directory.appendingPathComponent("bindings.json").path
        let result = try runProcess(host, ["exception", "10"], environment: [
            "COLDSTART": path, "LD_BIND_NOW": "1", "LD_DEBUG": "bindings",
        ])
        XCTAssertEqual(result.status, 0)
        // libunwind's own references bind to itself; every other library's must not.
        let unwindBindings = result.stderr.split(separator: "\n").filter {
            ($0.contains("`_Unwind_RaiseException'") || $0.contains("`_Unwind_Resume'") || $0.contains("`_Unwind_Backtrace'"))
                && !($0.components(separatedBy: " to ").first ?? "").contains("libunwind")
        }
        XCTAssertFalse(unwindBindings.isEmpty, "LD_DEBUG shows the unwinder bindings")
        for binding in unwindBindings {
            let target = binding.components(separatedBy: " to ").last ?? ""
            XCTAssertTrue(target.contains("libgcc_s"), "still bound to libgcc_s: \(binding)")
            XCTAssertFalse(target.contains("libunwind"), "never to libunwind: \(binding)")
        }
    }
}
