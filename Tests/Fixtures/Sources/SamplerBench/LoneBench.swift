// `make bench`, part 4 (`--only lone`, `make bench-lone`): lone launches of
// the short tool (CodableTool), as `COLDSTART=file ./tool` alone gets them,
// on a quiet kernel (no perf event open anywhere for 3 s: the kernel's perf
// scheduler hooks are off, and the first perf_event_open waits for an RCU
// grace period), on a quiet kernel with `coldstart keep-warm` running, and
// back to back (the previous launch's events closed a moment ago), each with
// the other CPU idle and busy (a shell spinning); the quiet kernel also with
// COLDSTART_BRIDGE=0 (no CPU-wide events while the kernel holds the task
// clocks back), each quiet launch paired with one with COLDSTART unset just
// before it (which opens no perf event, so the kernel stays quiet) for its
// wall-time ratio. The eight conditions take turns within each round. Then what keep-warm costs (its own CPU, and a
// context switch of other processes with the hooks on), and how long the
// first perf_event_open takes on a quiet kernel, task-bound and per-CPU.
import BenchSupport
import Foundation

/// A `coldstart keep-warm` the bench starts and stops.
final class KeepWarm {
    let process = Process()
    private(set) var cpuNs: Int64 = 0   // of every instance stopped so far

    init?(_ coldstart: String) {
        process.executableURL = URL(fileURLWithPath: coldstart)
        process.arguments = ["keep-warm"]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        // Holding its event before anything is measured (2 s at most).
        for _ in 0..<200 where !holdsPerfEvent(process.processIdentifier) { usleep(10_000) }
    }

    /// SIGTERM; true when it exited with status 0. Adds its CPU time first.
    func stop() -> (cleanExit: Bool, cpuNs: Int64) {
        let cpu = onCPUNanoseconds(process.processIdentifier)
        process.terminate()
        process.waitUntilExit()
        return (process.terminationReason == .exit && process.terminationStatus == 0, cpu)
    }
}

/// Whether `pid` has a perf event among its descriptors.
func holdsPerfEvent(_ pid: Int32) -> Bool {
    let dir = "/proc/\(pid)/fd"
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
    return entries.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(dir)/\($0)")) == "anon_inode:[perf_event]" }
}

/// The first field of /proc/PID/schedstat: ns the task ran on a CPU.
func onCPUNanoseconds(_ pid: Int32) -> Int64 {
    let text = (try? String(contentsOfFile: "/proc/\(pid)/schedstat", encoding: .utf8)) ?? ""
    return Int64(text.split(separator: " ").first ?? "") ?? 0
}

/// A shell spinning on the other CPU for as long as it runs.
func startSpinner() -> Process {
    let spin = Process()
    spin.executableURL = URL(fileURLWithPath: "/bin/sh")
    spin.arguments = ["-c", "while :; do :; done"]
    try? spin.run()
    return spin
}

func stopSpinner(_ spin: Process) {
    if spin.isRunning { spin.terminate() }
    spin.waitUntilExit()
}

func benchLone(tool: String, coldstart: String, launches: Int, pingPongPairs: Int) {
    enum Kernel: CaseIterable { case quiet, quietNoBridge, keepWarm, backToBack }
    struct Launch { var mainSamples: Int, armedAfterMainMs: Double?, mainToEndMs: Double, wallMs: Double, ratio: Double?, bridgeSamples: Int? }
    // results[kernel][busy]: the launches whose condition held.
    var results = [[[Launch]]](repeating: [[], []], count: Kernel.allCases.count)
    var notQuiet = 0, keepWarmCPU: Int64 = 0, keepWarmAlive = 0.0, keepWarmExits: [Bool] = []
    var keepWarm: KeepWarm?, keepWarmSince = Date()
    func stopKeepWarm() {
        guard let running = keepWarm else { return }
        let (clean, cpu) = running.stop()
        keepWarmCPU += cpu
        keepWarmAlive += Date().timeIntervalSince(keepWarmSince)
        keepWarmExits.append(clean)
        keepWarm = nil
    }
    for round in 0..<launches {
        for busyStep in 0..<2 {
            let busy = (busyStep + round) % 2 == 1
            let spinner = busy ? startSpinner() : nil
            for step in 0..<Kernel.allCases.count {
                let kernel = Kernel.allCases[(step + round) % Kernel.allCases.count]
                var held = true
                var unsetWall: Double?
                switch kernel {
                case .quiet, .quietNoBridge:
                    stopKeepWarm()
                    held = waitForQuietKernel(patience: 60)
                    unsetWall = runTool(tool, profiled: false)?.wallMs
                case .keepWarm:
                    if keepWarm == nil { keepWarm = KeepWarm(coldstart); keepWarmSince = Date() }
                    guard let running = keepWarm else { print("  (coldstart keep-warm did not start)"); return }
                    held = waitForQuietKernel(patience: 60, except: running.process.processIdentifier)
                        && holdsPerfEvent(running.process.processIdentifier)
                case .backToBack:
                    _ = runTool(tool, profiled: true)
                }
                let extra = kernel == .quietNoBridge ? ["COLDSTART_BRIDGE": "0"] : [:]
                guard let run = runTool(tool, profiled: true, extra), let t = run.timeline else { continue }
                if !held { notQuiet += 1; continue }
                results[Kernel.allCases.firstIndex(of: kernel)!][busy ? 1 : 0].append(
                    Launch(mainSamples: t.mainSamples, armedAfterMainMs: t.clockArmedAfterMainMs, mainToEndMs: t.mainToEndMs, wallMs: run.wallMs,
                           ratio: unsetWall.map { run.wallMs / $0 }, bridgeSamples: t.bridgeSamples))
            }
            if let spinner { stopSpinner(spinner) }
        }
    }
    stopKeepWarm()

    print("")
    print("Lone launches of the short tool (CodableTool, release, default settings), \(launches) rounds in which the eight")
    print("conditions take turns; quiet = no perf event open on the machine for 3 s before the launch; medians (÷ unset: of")
    print("each launch's wall time over that of the launch with COLDSTART unset just before it; bridge: samples from it):")
    print("  condition                                   launches   main samples [min–max]   clock ran from (ms after main)   armed before the end   wall ms   ÷ unset   bridge")
    let names: [Kernel: String] = [.quiet: "quiet kernel", .quietNoBridge: "quiet kernel, COLDSTART_BRIDGE=0", .keepWarm: "quiet kernel + keep-warm", .backToBack: "back to back"]
    for (k, kernel) in Kernel.allCases.enumerated() {
        for busy in 0..<2 {
            let set = results[k][busy]
            let label = names[kernel]! + (busy == 1 ? ", other CPU busy" : ", idle")
            let samples = set.map { Double($0.mainSamples) }
            let armed = set.compactMap(\.armedAfterMainMs)
            let early = set.filter { ($0.armedAfterMainMs ?? .infinity) < $0.mainToEndMs }.count
            let ratios = set.compactMap(\.ratio), bridged = set.compactMap(\.bridgeSamples)
            print("  " + label.padding(toLength: 44, withPad: " ", startingAt: 0) + "\(set.count)".leftPadded(8)
                + (format(median(samples), 0) + " [" + format(samples.min() ?? .nan, 0) + "–" + format(samples.max() ?? .nan, 0) + "]").leftPadded(25)
                + (armed.isEmpty ? "never" : format(median(armed), 2) + (armed.count < set.count ? " (never in \(set.count - armed.count))" : "")).leftPadded(33)
                + "\(early) of \(set.count)".leftPadded(23) + format(median(set.map(\.wallMs)), 2).leftPadded(10)
                + (ratios.isEmpty ? "" : "×" + format(median(ratios), 3)).leftPadded(10)
                + (bridged.isEmpty ? "" : format(median(bridged.map(Double.init)), 0) + " in \(bridged.count)").leftPadded(9))
        }
    }
    if notQuiet > 0 { print("  (\(notQuiet) launches found no 3 s without another process's perf event within 60 s and are not counted)") }
    let busyQuiet = results[0][1].map { Double($0.mainSamples) }, busyBack = results[3][1].map { Double($0.mainSamples) }
    let busyWarm = results[2][1].map { Double($0.mainSamples) }, busyNoBridge = results[1][1].map { Double($0.mainSamples) }
    print("  issue 24 targets: ≥ 40 main-thread samples lone (other CPU busy): quiet \(format(median(busyQuiet), 0)) "
        + "(COLDSTART_BRIDGE=0: \(format(median(busyNoBridge), 0))), with keep-warm \(format(median(busyWarm), 0)); "
        + "≥ 60 back to back: \(format(median(busyBack), 0)); ≤ ×1.10 wall, idle, quiet: "
        + "×\(format(median(results[0][0].compactMap(\.ratio)), 3)) (COLDSTART_BRIDGE=0: ×\(format(median(results[1][0].compactMap(\.ratio)), 3)))")

    // What keep-warm costs: its own CPU while it ran above, and a context
    // switch of everyone else with the hooks on (off = a quiet kernel).
    print("")
    print("What coldstart keep-warm costs:")
    let unclean = keepWarmExits.filter { !$0 }.count
    print("  its own CPU: \(format(Double(keepWarmCPU) / 1e6, 3)) ms in \(format(keepWarmAlive, 0)) s running"
        + (unclean > 0 ? "; \(unclean) of \(keepWarmExits.count) instances did NOT exit 0 on SIGTERM" : "; every instance exited 0 on SIGTERM"))
    var off: [Double] = [], on: [Double] = [], ratios: [Double] = []
    let rounds = 20_000
    for pair in 0..<pingPongPairs {
        var offNs = Double.nan, onNs = Double.nan
        for step in 0..<2 {
            if (step + pair) % 2 == 0 {
                guard waitForQuietKernel(patience: 60) else { continue }
                let ns = bench_pingpong_ns(rounds, 0)
                if bench_perf_event_holders(0) == 0 && ns > 0 { offNs = ns }   // quiet throughout
            } else if let running = KeepWarm(coldstart) {
                let ns = bench_pingpong_ns(rounds, 0)
                if ns > 0 { onNs = ns }
                _ = running.stop()
            }
        }
        guard !offNs.isNaN, !onNs.isNaN else { continue }
        off.append(offNs); on.append(onNs); ratios.append(onNs / offNs)
    }
    print("  pipe ping-pong between two processes on CPU 0 (\(rounds) round trips, two context switches each), \(ratios.count) interleaved pairs:")
    print("    hooks off (quiet kernel) \(format(median(off), 0)) ns per round trip, with keep-warm \(format(median(on), 0)) ns: "
        + "×\(format(median(ratios), 3)) (median of the pairs' ratios; range ×\(format(ratios.min() ?? .nan, 3))–×\(format(ratios.max() ?? .nan, 3)))")

    // The first perf_event_open on a quiet kernel: a task-bound event waits
    // for the kernel's switch; a per-CPU event, which does not switch the
    // hooks on, should not (and a task-bound event right after it still does).
    var taskFirst: [Double] = [], cpuFirst: [Double] = [], taskAfterCPU: [Double] = []
    var cpuOpened = 0
    for _ in 0..<3 {
        var n: Int32 = 0
        if waitForQuietKernel(patience: 60) { taskFirst.append(bench_open_ms(0, &n)) }
        if waitForQuietKernel(patience: 60) {
            cpuFirst.append(bench_open_ms(1, &n))
            cpuOpened = Int(n)
            taskAfterCPU.append(bench_open_ms(0, &n))
        }
    }
    print("")
    print("The first perf_event_open on a quiet kernel (CLOCK_MONOTONIC ms, medians of \(taskFirst.count) and \(cpuFirst.count)):")
    print("  a task-bound task-clock event: \(format(median(taskFirst), 2)) ms")
    if cpuOpened == 0 {
        print("  per-CPU events: refused here (they need CAP_PERFMON or kernel.perf_event_paranoid ≤ 0)")
    } else {
        print("  a CPU-clock event on each of \(cpuOpened) CPUs (pid -1): \(format(median(cpuFirst), 2)) ms for all; "
            + "a task-bound event right after: \(format(median(taskAfterCPU), 2)) ms")
    }
}
