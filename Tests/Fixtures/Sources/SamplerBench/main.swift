// `make bench`: what sampling costs, measured in one interleaved run.
//
//     SamplerBench --host SamplerHost --linked ServiceStartup --plain ServiceStartup --tool CodableTool
//                  --coldstart coldstart [--runs N] [--quiet-runs N] [--lone-launches N]
//                  [--only cost,kernel,example,tool,lone]
//
// 1. Per-sample handler cost (median and p99, ns) at stack depths ~10 and ~50,
//    for libunwind and the frame-pointer walk: SamplerHost burns 1 s of CPU at
//    1 kHz that many frames deep; the cost is what the handler measured itself
//    (CLOCK_MONOTONIC at entry and exit, 10 ns histogram buckets), taken from
//    the timeline's `sampling.handlerNs`. Kernel signal delivery is not in it.
// 2. Launch time of the example: not linked with Coldstart, linked with
//    profiling off, profiled at 1 kHz and at 10 kHz. Each run is timed from
//    just before posix_spawn to the "ready to serve" line (printed right after
//    Coldstart.ready()) on a pseudo-terminal, CLOCK_MONOTONIC. The four
//    variants take turns, so drift on the machine hits them alike.
// 3. A short command-line tool (ToolBench.swift): ratios to the same binary
//    with COLDSTART unset, set-up on a quiet kernel, watcher CPU, exit delay.
// 4. Its lone launches (LoneBench.swift): main-thread samples and when the
//    clock ran, on a quiet kernel, with `coldstart keep-warm`, back to back;
//    what keep-warm costs; the first perf_event_open, task-bound and per-CPU.
import BenchSupport
import Foundation

struct Options {
    var host = "", linked = "", plain = "", tool = "", toolBefore = "", coldstart = "", runs = 40, quietRuns = 6, loneLaunches = 20
    var sections: Set<String> = ["cost", "kernel", "example", "tool", "lone"]
    init() {
        var it = CommandLine.arguments.dropFirst().makeIterator()
        while let flag = it.next() {
            let value = it.next() ?? ""
            switch flag {
            case "--host": host = value
            case "--linked": linked = value
            case "--plain": plain = value
            case "--tool": tool = value
            case "--tool-before": toolBefore = value
            case "--runs": runs = Int(value) ?? runs
            case "--quiet-runs": quietRuns = Int(value) ?? quietRuns
            case "--lone-launches": loneLaunches = Int(value) ?? loneLaunches
            case "--coldstart": coldstart = value
            case "--only": sections = Set(value.split(separator: ",").map(String.init))
            default:
                FileHandle.standardError.write(Data("SamplerBench: unknown option \(flag)\n".utf8))
                exit(64)
            }
        }
        // Each section's programs: only those of the sections asked for.
        let needs: [(section: String, path: String)] = [
            ("cost", host), ("example", linked), ("example", plain), ("tool", tool), ("lone", tool), ("lone", coldstart),
        ]
        if needs.contains(where: { sections.contains($0.section) && $0.path.isEmpty }) {
            FileHandle.standardError.write(Data("usage: SamplerBench --host PATH --linked PATH --plain PATH --tool PATH --coldstart PATH [--tool-before PATH] [--runs N] [--quiet-runs N] [--lone-launches N] [--only cost,kernel,example,tool,lone]\n".utf8))
            exit(64)
        }
    }
}

let options = Options()
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("coldstart-bench-\(getpid())")
try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: scratch) }

func environment(_ extra: [String: String]) -> [String] {
    var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("COLDSTART") }
    for (key, value) in extra { env[key] = value }
    return env.map { "\($0.key)=\($0.value)" }
}

/// Runs `path` and returns nanoseconds until a line containing `marker`.
func timeToLine(_ path: String, _ arguments: [String], _ env: [String], marker: String) -> Int64 {
    func cStrings(_ strings: [String]) -> [UnsafeMutablePointer<CChar>?] { strings.map { strdup($0) } + [nil] }
    let argv = cStrings([path] + arguments), envp = cStrings(env)
    defer { (argv + envp).forEach { free($0) } }
    return bench_time_to_line(path, argv, envp, marker)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

func format(_ value: Double, _ decimals: Int = 0) -> String { String(format: "%.\(decimals)f", value) }

// ---- 1. per-sample cost ----

/// One SamplerHost burn's figures: the fallback handler's cost per signal
/// (COLDSTART_SAMPLER=signals), or for the kernel's samples the CPU
/// Coldstart's own thread spent unwinding each and how many needed the
/// kernel's frame-pointer chain past the stack copy.
struct CostRun { var median: Double, p99: Double, depth: Double, samples: Int, unwindNs: Double, tails: Double }

func costRun(_ extra: [String: String], extraFrames: Int) -> CostRun? {
    let timeline = scratch.appendingPathComponent("cost.json").path
    let env = environment(["COLDSTART": timeline, "COLDSTART_HZ": "1000"].merging(extra) { $1 })
    guard timeToLine(options.host, ["burn", "1000", String(extraFrames)], env, marker: "burned") >= 0,
          let data = FileManager.default.contents(atPath: timeline),
          let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
          let section = root["coldstart"] as? [String: Any],
          let sampling = section["sampling"] as? [String: Any],
          let handler = sampling["handlerNs"] as? [String: Any],
          let samples = section["samples"] as? [[Any]],
          let launch = section["launch"] as? [String: Any]
    else { return nil }
    try? FileManager.default.removeItem(atPath: timeline)
    let main = (launch["mainNs"] as? NSNumber)?.int64Value ?? 0
    let depths = samples.filter { (($0[0] as? NSNumber)?.int64Value ?? 0) > main }.map { Double((($0[2] as? [Any])?.count ?? 0) / 2) }
    let kernel = sampling["kernelStacks"] as? [String: Any]
    let dwarf = (kernel?["dwarf"] as? NSNumber)?.doubleValue ?? 0
    return CostRun(
        median: (handler["median"] as? NSNumber)?.doubleValue ?? .nan,
        p99: (handler["p99"] as? NSNumber)?.doubleValue ?? .nan,
        depth: median(depths), samples: samples.count,
        unwindNs: dwarf > 0 ? ((kernel?["unwindNs"] as? NSNumber)?.doubleValue ?? .nan) / dwarf : .nan,
        tails: dwarf > 0 ? ((kernel?["chainTails"] as? NSNumber)?.doubleValue ?? 0) / dwarf : .nan)
}

// SamplerHost's burn stack is main, burnAtDepth, burnCPU and three frames of
// libc start-up: extra frames 4 and 44 give depths of about 10 and 50.
let costCases: [(label: String, env: [String: String], frames: Int)] = [
    ("signal, frame pointers", ["COLDSTART_SAMPLER": "signals"], 4), ("signal, frame pointers", ["COLDSTART_SAMPLER": "signals"], 44),
    ("kernel, fp chain", ["COLDSTART_UNWINDER": "fp"], 44),
    ("kernel, 2 KiB, DWARF", ["COLDSTART_STACK_BYTES": "2048"], 44), ("kernel, 4 KiB, DWARF", [:], 4),
    ("kernel, 4 KiB, DWARF", [:], 44), ("kernel, 8 KiB, DWARF", ["COLDSTART_STACK_BYTES": "8192"], 44),
]
var costs = [[CostRun]](repeating: [], count: costCases.count)
print("Coldstart sampler benchmark (\(ProcessInfo.processInfo.activeProcessorCount) CPUs)")
for _ in 0..<(options.sections.contains("cost") ? 3 : 0) {
    for (index, c) in costCases.enumerated() {
        if let run = costRun(c.env, extraFrames: c.frames) { costs[index].append(run) }
    }
}

if options.sections.contains("cost") {
    print("")
    print("Per sample, 1 kHz, 1 s CPU burn per run, 3 runs per row (median of the runs' figures): the signal")
    print("fallback's handler on the host's thread; for the kernel's samples, Coldstart's own thread's CPU")
    print("unwinding each (off the host's threads) and the share completed by the kernel's frame-pointer chain:")
    print("  path                     depth   handler ns (median, p99)   unwind ns   fp tail   samples/run")
    for (index, c) in costCases.enumerated() {
        let runs = costs[index]
        let handler = c.env["COLDSTART_SAMPLER"] == "signals"
            ? format(median(runs.map(\.median))).leftPadded(12) + format(median(runs.map(\.p99))).leftPadded(9) : "–".leftPadded(12) + "".leftPadded(9)
        let unwind = median(runs.map(\.unwindNs)), tails = median(runs.map(\.tails))
        let row = "  " + c.label.padding(toLength: 23, withPad: " ", startingAt: 0)
            + format(median(runs.map(\.depth))).leftPadded(7) + handler + "".leftPadded(6)
            + (unwind.isNaN ? "–" : format(unwind)).leftPadded(12) + (tails.isNaN ? "–" : format(tails * 100) + "%").leftPadded(10)
            + String(runs.isEmpty ? 0 : runs.map(\.samples).reduce(0, +) / runs.count).leftPadded(14)
        print(runs.isEmpty ? "  \(c.label) at \(c.frames) extra frames: no run succeeded" : row)
    }
}

// ---- 1b. what the host's thread pays per sample ----

if options.sections.contains("kernel") {
    print("")
    print("The host thread's cost per sample: a fixed CPU loop with and without a perf task-clock event")
    print("(extra thread CPU time / samples, 3 runs, median): a signal to an empty handler, or the kernel's")
    print("sample into a ring another thread empties (frame-pointer chain; + registers and a stack copy):")
    for hz in [1000, 10000] {
        var rows: [(String, [Double], Int)] = [("signal, empty handler", [], 0)]
        for bytes in [0, 2048, 4096, 8192] { rows.append((bytes == 0 ? "kernel, fp chain only" : "kernel, \(bytes / 1024) KiB stack copy", [], 0)) }
        var loop = 0.0
        for _ in 0..<3 {
            var count = 0, loopMs = 0.0
            let signal = bench_signal_cost_ns(Int32(hz), &count, &loopMs)
            if signal >= 0 { rows[0].1.append(signal); rows[0].2 = count; loop = loopMs }
            for (i, bytes) in [0, 2048, 4096, 8192].enumerated() {
                let ns = bench_ring_cost_ns(Int32(hz), Int32(bytes), &count, &loopMs)
                if ns >= 0 { rows[i + 1].1.append(ns); rows[i + 1].2 = count }
            }
        }
        print("  \(hz) Hz (a \(format(loop)) ms loop):")
        for (label, values, count) in rows {
            print("    " + label.padding(toLength: 24, withPad: " ", startingAt: 0)
                + (values.isEmpty ? "perf_event_open refused" : "\(format(median(values))) ns per sample (\(count) samples), \(format(median(values) * Double(hz) / 1e7, 1))% of CPU"))
        }
    }
}

// ---- 2. launch time ----

if options.sections.contains("example") {
    let variants: [(label: String, path: String, env: [String: String])] = [
        ("not linked", options.plain, [:]),
        ("linked, profiling off", options.linked, [:]),
        ("profiled, 1 kHz", options.linked, ["COLDSTART_HZ": "1000"]),
        ("profiled, 10 kHz", options.linked, ["COLDSTART_HZ": "10000"]),
        // Where the cost goes: the timeline without sampling, and sampling without libunwind.
        ("profiled, no sampling", options.linked, ["COLDSTART_SAMPLER": "off"]),
        ("1 kHz, frame pointers", options.linked, ["COLDSTART_HZ": "1000", "COLDSTART_UNWINDER": "fp"]),
        ("1 kHz, signals", options.linked, ["COLDSTART_HZ": "1000", "COLDSTART_SAMPLER": "signals"]),
    ]
    var launches = [[Double]](repeating: [], count: variants.count)
    var failures = 0
    for round in -3..<options.runs {   // three warm-up rounds
        for step in 0..<variants.count {
            let index = (step + max(round, 0)) % variants.count   // rotate who goes first
            let v = variants[index]
            var extra = v.env
            let timeline = scratch.appendingPathComponent("launch.json").path
            if !extra.isEmpty { extra["COLDSTART"] = timeline }
            let ns = timeToLine(v.path, [], environment(extra), marker: "ready to serve")
            try? FileManager.default.removeItem(atPath: timeline)
            if ns < 0 { failures += 1; continue }
            if round >= 0 { launches[index].append(Double(ns) / 1e6) }
        }
    }
    print("")
    print("Launch time of the example (release), spawn → \"ready to serve\" line, CLOCK_MONOTONIC ms,")
    print("\(options.runs) interleaved runs per variant; ratios of medians (and of minimums, less noisy on a busy machine):")
    print("  variant                 median  [p25–p75]         min    ratio (median, min)")
    let medians = launches.map(median), minimums = launches.map { $0.min() ?? .nan }
    for (index, v) in variants.enumerated() {
        let reference = index == 1 ? 0 : 1
        let ratio = index == 0 ? "" : "   ×\(format(medians[index] / medians[reference], 3)), ×\(format(minimums[index] / minimums[reference], 3)) vs \(index == 1 ? "not linked" : "off")"
        print("  " + v.label.padding(toLength: 22, withPad: " ", startingAt: 0)
            + format(medians[index], 2).leftPadded(8) + "  [" + format(percentile(launches[index], 0.25), 2) + "–"
            + format(percentile(launches[index], 0.75), 2) + "]" + format(minimums[index], 2).leftPadded(9) + ratio)
    }
    if failures > 0 { print("  (\(failures) runs failed and are not counted)") }

    print("")
    print("Targets:")
    func verdict(_ ok: Bool) -> String { ok ? "met" : "NOT met" }
    let offRatio = medians[1] / medians[0], oneKRatio = medians[2] / medians[1]
    print("  linked, off ≤ 1% over not linked:  ×\(format(offRatio, 3))  \(verdict(offRatio <= 1.01))")
    print("  1 kHz ≤ 3% over off:               ×\(format(oneKRatio, 3))  \(verdict(oneKRatio <= 1.03))")

}

// ---- 3. a short command-line tool ----

if options.sections.contains("tool") {
    benchTool(options.tool, before: options.toolBefore.isEmpty ? nil : options.toolBefore, runs: options.runs, quietRuns: options.quietRuns)
}

// ---- 4. lone launches of the tool, keep-warm ----

if options.sections.contains("lone") {
    benchLone(tool: options.tool, coldstart: options.coldstart, launches: options.loneLaunches, pingPongPairs: 10)
}

extension String {
    func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
