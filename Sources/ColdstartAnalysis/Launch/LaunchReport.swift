import Foundation

/// Where the time of one launch went: what `coldstart report` prints, and with
/// `--json` encodes directly (keys documented in docs/report.md).
///
/// Times are milliseconds of `CLOCK_MONOTONIC` from the process start, as
/// `Double`; the timeline's nanoseconds are converted only here, at the edge.
/// Sections added later (sampled functions, slow initializers, lazy globals,
/// blocked time) are optional members: absent from the JSON when the timeline
/// has no data for them, and skipped by the text renderer.
package struct LaunchReport: Codable, Sendable {
    /// The layout of this report; raised only when a key changes meaning or goes.
    var reportVersion: Int
    package var launch: Summary
    /// What made the launch slow and what to try, most time first (3–7);
    /// everything after is the evidence.
    package var findings: [Finding]?
    /// Sampled CPU time of the critical path by Swift-runtime (and loader,
    /// kernel) kind; absent when the launch was not sampled.
    package var runtimeCosts: RuntimeCostSummary?
    /// In the timeline's order, which is time order: contiguous, covering the launch.
    package var phases: [PhaseRow]
    /// In time order.
    package var marks: [MarkRow]
    /// Every span, slowest first.
    package var spans: [SpanRow]
    /// Where the sampled CPU time went (functions, initializers, lazy
    /// globals, threads, call tree); absent when the launch was not sampled.
    package var profile: ProfileReport?
    /// Why the main thread was not running; absent without the off-CPU watch.
    package var blockedTime: BlockedTime?
    /// What `coldstart run`'s launcher saw before `main` (loader samples,
    /// libraries mapped, page faults, kernel share); absent without it.
    package var beforeMain: BeforeMain?
    /// Relocations of every object loaded before `main`, read from the
    /// files; absent when none could be read.
    package var loaderStatistics: LoaderStatistics?
    /// Why perf events were refused, how the launch was sampled instead and
    /// the remedy for the machine; absent when perf was not refused.
    package var perfAdvice: PerfAdvice?
    /// Why a launch that was to be sampled has no sample, and what to do;
    /// absent when it has samples or was not to be sampled.
    package var noSamples: String?

    /// The launch as a whole: how long, how exactly it is known, how it ended.
    package struct Summary: Codable, Sendable {
        /// How the launch was profiled (`LaunchMode`); decides what is
        /// known before `main`.
        package var mode: LaunchMode
        /// One line saying so.
        package var modeDescription: String
        package var executable: String
        package var pid: Int
        package var kernelRelease: String
        package var swiftVersion: String
        /// Always "CLOCK_MONOTONIC".
        package var clock: String
        /// Process start → end of the launch (ready, exit or signal).
        package var totalMs: Double
        /// The part of `totalMs` that was Coldstart's own set-up (the
        /// "Coldstart set-up" phase). Absent in timelines that predate the phase.
        package var profilerSetupMs: Double?
        /// The launch without Coldstart: `totalMs` less what Coldstart cost
        /// the critical path, or why that is not known (UnprofiledEstimate).
        package var withoutProfiling: UnprofiledEstimate?
        /// The earliest user code ran (`.preinit_array`); absent when it did not.
        package var earliestInitMs: Double?
        /// The executable's first constructor ran, just before `main`.
        package var mainMs: Double
        package var readyMs: Double?
        /// "spawn-env" (launcher timestamp), "thread-cpu" (estimated from the main
        /// thread's CPU and run-queue time) or "proc-stat" (clock ticks).
        package var startSource: String
        /// How early the recorded start may be; 0 when exact.
        package var startPrecisionMs: Double
        /// One line saying how exactly the start (and so the first phase) is known.
        package var startPrecision: String
        package var completed: Bool
        /// "ready", "exit", "error-exit", "signal" or "stepped-aside".
        package var endReason: String
        package var exitStatus: Int?
        package var signal: Int?
        package var signalName: String?
        /// The phase the launch ended in.
        package var endPhase: String?
        /// One line saying whether and how the launch completed.
        package var completion: String
        /// The window after `ready()` in which marks were still recorded, when set.
        package var extensionMs: Double?
        /// Events and name bytes the recorder had no room for.
        package var droppedEvents: UInt64
        package var droppedNameBytes: UInt64
        /// Bytes of the file's strings that were not UTF-8, shown as U+FFFD
        /// (recorded by the writer or replaced by the reader).
        package var notUtf8Bytes: UInt64
        /// Figures the reader set aside as out of range (Timeline.setAside).
        package var setAside: [String]
    }

    /// Resource use over an interval, process-wide (every thread).
    package struct Usage: Codable, Sendable, Equatable {
        package var minorFaults: UInt64
        package var majorFaults: UInt64
        package var voluntarySwitches: UInt64
        package var involuntarySwitches: UInt64
        /// User plus system CPU time of all threads; compare with the wall time.
        package var cpuMs: Double
    }

    package struct PhaseRow: Codable, Sendable {
        package var name: String
        /// "loader", "profiler" (Coldstart's own set-up), "initializers" or "app".
        package var kind: String
        package var startMs: Double
        /// Wall time.
        package var durationMs: Double
        /// Share of the launch's total, in percent.
        package var sharePercent: Double
        /// Absent when the timeline has no snapshots around this phase.
        package var usage: Usage?
        /// The phase's CPU split into sampled user time and kernel time;
        /// absent when either is unknown (`KernelShare`).
        package var kernel: KernelShare?
    }

    package struct MarkRow: Codable, Sendable {
        package var name: String
        package var offsetMs: Double
        /// The phase the mark fell in. A boundary mark belongs to the phase it
        /// ends; extended marks (after ready) belong to none.
        package var phase: String?
        package var phaseBoundary: Bool
        package var extended: Bool
        package var tid: Int
        package var thread: String?
    }

    package struct SpanRow: Codable, Sendable {
        package var name: String
        package var startMs: Double
        package var durationMs: Double
        /// The phase the span began in.
        package var phase: String?
        package var tid: Int
        package var thread: String?
        /// Set when the span ended on another thread than it began on.
        package var endTid: Int?
        package var endThread: String?
        /// Where the launch's work ran while the span was open (the critical
        /// path's stretches inside it), when that was more than one thread.
        package var ranOn: [BlockedTime.PathPiece]?
        /// Still open when the launch ended; its end is the launch's end.
        package var unfinished: Bool
        package var extended: Bool
        /// Process-wide over the span, not the span's thread alone.
        package var usage: Usage?
    }
}

extension LaunchReport {
    /// The report of one launch, every section computed before it is made
    /// (by `LaunchAnalysis`): `profile` is the sampled-stacks sections of
    /// `analysis`'s selection (nil, with `analysis`, when the launch has no
    /// samples); `symbols` names the frames, those of the blocked stacks and
    /// the loader's. The findings and runtime costs are the whole launch's,
    /// whatever phase or thread `profile` selects for the evidence.
    /// `findingInputs` is set to what the findings were made from;
    /// `symbolizer` names what `symbols` lacks (the loader's fault frames).
    init(_ timeline: Timeline, profile: ProfileReport?, analysis: ProfileAnalysis?, symbols: [String: Timeline.Symbol],
         symbolizer: Symbolizer, findingInputs: inout FindingInputs) {
        let frameName: (Timeline.Frame) -> String? = { symbols[$0.key]?.name }
        let total = Self.milliseconds(timeline.launch.endNs)
        let phases = timeline.phases
        let threadNames = ThreadNames(timeline, frameName: frameName)
        let path = CriticalPath(timeline)

        let kernelShares = KernelShare.phases(timeline)
        let phaseRows = zip(phases, kernelShares).map { phase, kernel in
            let duration = Self.milliseconds(from: phase.startNs, to: phase.endNs)
            return PhaseRow(
                name: phase.name,
                kind: phase.kind,
                startMs: Self.milliseconds(phase.startNs),
                durationMs: duration,
                sharePercent: total > 0 ? duration / total * 100 : 0,
                usage: phase.rusage.map(Usage.init),
                kernel: kernel
            )
        }

        let marks = timeline.marks.enumerated()
            .sorted { ($0.element.ns, $0.offset) < ($1.element.ns, $1.offset) }
            .map(\.element)
            .map { mark in
                MarkRow(
                    name: mark.name,
                    offsetMs: Self.milliseconds(mark.ns),
                    phase: mark.extended ? nil : Self.phase(of: mark.ns, in: phases, boundaryEndsPhase: true)?.name,
                    phaseBoundary: mark.phaseBoundary,
                    extended: mark.extended,
                    tid: mark.tid,
                    thread: threadNames.readable(mark.tid)
                )
            }

        let spans = timeline.spans
            .map { span in
                SpanRow(
                    name: span.name,
                    startMs: Self.milliseconds(span.beginNs),
                    durationMs: Self.milliseconds(from: span.beginNs, to: span.endNs),
                    phase: Self.phase(of: span.beginNs, in: phases, boundaryEndsPhase: false)?.name,
                    tid: span.tid,
                    thread: threadNames.readable(span.tid),
                    endTid: span.endTid == span.tid ? nil : span.endTid,
                    endThread: span.endTid == span.tid ? nil : threadNames.readable(span.endTid),
                    ranOn: path.stretches(from: span.beginNs, to: span.endNs, names: threadNames),
                    unfinished: span.unfinished,
                    extended: span.extended ?? false,
                    usage: span.rusage.map(Usage.init)
                )
            }
            .enumerated()
            .sorted { a, b in
                if a.element.durationMs != b.element.durationMs { return a.element.durationMs > b.element.durationMs }
                return (a.element.startMs, a.offset) < (b.element.startMs, b.offset)
            }
            .map(\.element)

        let blockedTime = BlockedTime(timeline, frameName: frameName)
        let launch = Summary(timeline, totalMs: total, withoutProfiling: UnprofiledEstimate(timeline, blocked: blockedTime))
        let beforeMain = BeforeMain(timeline, symbols: symbols, symbolizer: symbolizer)
        let loaderStatistics = LoaderStatistics(timeline)
        let inputs = FindingInputs(
            launch: launch, phases: phaseRows, profile: profile, blockedTime: blockedTime, beforeMain: beforeMain,
            loaderStatistics: loaderStatistics, timeline: timeline, analysis: analysis)
        findingInputs = inputs
        self.init(
            reportVersion: 1, launch: launch, findings: Finding.ranked(inputs), runtimeCosts: inputs.runtimeCosts,
            phases: phaseRows, marks: marks, spans: spans, profile: profile, blockedTime: blockedTime,
            beforeMain: beforeMain, loaderStatistics: loaderStatistics, perfAdvice: PerfAdvice(timeline),
            noSamples: analysis == nil && timeline.sampling != nil ? Self.noSamples(timeline) : nil)
    }

    /// Why the launch took no sample, with its numbers (`Timeline.unsampledReason`).
    static func noSamples(_ timeline: Timeline) -> String {
        var advice = "profile with coldstart run (it keeps the kernel ready and samples from exec), or pool launches with coldstart run -n N"
        // A perf clock that never ran waited for a quiet kernel's first event.
        if let sampling = timeline.sampling, sampling.clock == "perf-task-clock", sampling.sampledFromNs == nil {
            advice = "run coldstart keep-warm on this machine (it keeps the kernel ready for every launch), or " + advice
        }
        if let sampling = timeline.sampling, sampling.clock == "posix-cpu-timer" {
            // The POSIX timers fire at the kernel tick, whatever the rate asked.
            let cpu = sampling.cpuNs.map { " of its " + Figure.format(Double($0) / 1e6, decimals: 1) + " ms of CPU" } ?? ""
            return "No samples: POSIX CPU-time timers fire at most at the kernel tick (CONFIG_HZ, commonly 250 Hz: one sample per "
                + "4 ms of CPU), not the \(Figure.format(sampling.requestedHz, decimals: 0)) Hz asked, and none fired\(cpu). "
                + "→ profile with coldstart run, which samples by ptrace at ≥ 1 kHz where perf is refused, or pool launches with coldstart run -n N"
        }
        return "No samples: \(timeline.unsampledReason ?? "none recorded"). → \(advice)"
    }

    /// The phase holding `ns`. A time on a boundary belongs to the phase that
    /// ends there when `boundaryEndsPhase` (a mark that closes a phase), else
    /// to the one that starts there (a span that opens it). Nothing before the
    /// start or after the end of the launch is in a phase.
    static func phase(of ns: Int64, in phases: [Timeline.Phase], boundaryEndsPhase: Bool) -> Timeline.Phase? {
        if boundaryEndsPhase {
            if let first = phases.first, ns == first.startNs { return first }
            return phases.first { $0.startNs < ns && ns <= $0.endNs }
        }
        if let last = phases.last, ns == last.endNs { return last }
        return phases.first { $0.startNs <= ns && ns < $0.endNs }
    }

    /// Nanoseconds to milliseconds. Differences are taken in `Double` so a
    /// hostile file cannot overflow `Int64`.
    static func milliseconds(_ ns: Int64) -> Double { Double(ns) / 1_000_000 }
    static func milliseconds(from start: Int64, to end: Int64) -> Double { (Double(end) - Double(start)) / 1_000_000 }
    static func milliseconds(_ ns: UInt64) -> Double { Double(ns) / 1_000_000 }
}

extension LaunchReport.Usage {
    init(_ rusage: Timeline.Rusage) {
        minorFaults = rusage.minorFaults
        majorFaults = rusage.majorFaults
        voluntarySwitches = rusage.voluntarySwitches
        involuntarySwitches = rusage.involuntarySwitches
        cpuMs = (Double(rusage.userNs) + Double(rusage.systemNs)) / 1_000_000
    }
}

extension LaunchReport.Summary {
    init(_ timeline: Timeline, totalMs: Double, withoutProfiling: UnprofiledEstimate?) {
        let launch = timeline.launch
        mode = LaunchMode(timeline)
        let launcher = (timeline.parsedDocument["coldstart"] as? [String: Any])?["launcher"] as? [String: Any]
        modeDescription = mode.description(startSource: launch.startSource, traced: launcher?["threads"] as? String == "ptrace")
        executable = timeline.process.executable
        pid = timeline.process.pid
        kernelRelease = timeline.process.kernelRelease
        swiftVersion = timeline.process.swiftVersion
        clock = "CLOCK_MONOTONIC"
        self.totalMs = totalMs
        self.withoutProfiling = withoutProfiling
        profilerSetupMs = timeline.phases.first { $0.kind == "profiler" }.map { LaunchReport.milliseconds($0.durationNs) }
        earliestInitMs = launch.earliestInitNs.map(LaunchReport.milliseconds)
        mainMs = LaunchReport.milliseconds(launch.mainNs)
        readyMs = launch.readyNs.map(LaunchReport.milliseconds)
        startSource = launch.startSource
        startPrecisionMs = LaunchReport.milliseconds(launch.startPrecisionNs)
        startPrecision = Self.describePrecision(source: launch.startSource, precisionMs: startPrecisionMs)
        completed = launch.completed
        endReason = launch.endReason
        exitStatus = launch.exitStatus
        signal = launch.signal
        signalName = launch.signalName
        endPhase = launch.endPhase ?? timeline.phases.last?.name
        extensionMs = launch.extendNs.flatMap { $0 > 0 ? LaunchReport.milliseconds($0) : nil }
        droppedEvents = timeline.dropped.events
        droppedNameBytes = timeline.dropped.nameBytes
        notUtf8Bytes = timeline.dropped.notUtf8Bytes ?? 0
        setAside = timeline.setAside
        completion = Self.describeCompletion(
            reason: launch.endReason, completed: launch.completed, totalMs: totalMs, exitStatus: launch.exitStatus,
            signal: launch.signalName ?? launch.signal.map { "signal \($0)" }, endPhase: endPhase, asideFor: launch.asideFor
        )
    }

    static func describePrecision(source: String, precisionMs: Double) -> String {
        if source == "spawn-env" { return "exact (launcher timestamp)" }
        let figure = Figure.format(precisionMs, decimals: precisionMs.rounded() == precisionMs ? 0 : 2)
        if source == "thread-cpu" {
            return "±\(figure) ms: estimated from the main thread's CPU and run-queue time (no launcher timestamp)"
        }
        if source == "proc-stat" && precisionMs > 0 {
            return "±\(figure) ms: /proc starttime is in clock ticks, so the start may be up to \(figure) ms early"
        }
        return "\(source), up to \(figure) ms early"
    }

    static func describeCompletion(
        reason: String, completed: Bool, totalMs: Double, exitStatus: Int?, signal: String?, endPhase: String?, asideFor: String? = nil
    ) -> String {
        let after = "\(Figure.format(totalMs, decimals: 1)) ms after start"
        let during = endPhase.map { ", during phase '\($0)'" } ?? ""
        switch reason {
        case "ready":
            return "completed at ready(), \(after)"
        case "exit" where completed:
            return "completed at normal exit (no ready() call — a command-line tool's launch ends at exit), \(after)"
        case "exit", "error-exit":
            return "NOT completed: exit(\(exitStatus.map(String.init) ?? "?")) before ready(), \(after)\(during)"
        case "signal":
            return "NOT completed: abandoned by \(signal ?? "a signal") \(after)\(during)"
        case "stepped-aside":
            return "NOT completed: the program called \(asideFor ?? "a call") \(after)\(during), "
                + "after which Coldstart cannot go on (a namespace switch, a seccomp filter): it stopped there"
        default:
            return (completed ? "completed" : "NOT completed") + " (end: \(reason)), \(after)\(during)"
        }
    }
}

extension LaunchReport {
    /// The report as `coldstart report --json` prints it: stable, sorted keys.
    package func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// `parts` rounded to `decimals` so that the rounded figures add up to
    /// `total` rounded the same way (largest-remainder rounding): a row of
    /// shares prints 100%, a row of times prints its wall time. Parts that
    /// do not add up to `total` within one unit per part, or are not finite,
    /// are rounded one by one.
    package static func roundedParts(_ parts: [Double], total: Double, decimals: Int) -> [Double] {
        let scale = pow(10, Double(decimals))
        let scaled = parts.map { $0 * scale }
        let target = (total * scale).rounded()
        guard !parts.isEmpty, target.isFinite, scaled.allSatisfy({ $0.isFinite && $0 >= 0 }),
              abs(scaled.reduce(0, +) - target) <= Double(parts.count)
        else { return parts.map { ($0 * scale).rounded() / scale } }
        var units = scaled.map { $0.rounded(.down) }
        var missing = Int(target - units.reduce(0, +))
        // Largest remainder first; ties to the larger part, then the earlier.
        let order = scaled.indices.sorted {
            (scaled[$0] - units[$0], scaled[$0], -$0) > (scaled[$1] - units[$1], scaled[$1], -$1)
        }
        for index in order where missing > 0 {
            units[index] += 1
            missing -= 1
        }
        // Parts a little over the total: take from the smallest remainders.
        for index in order.reversed() where missing < 0 && units[index] > 0 {
            units[index] -= 1
            missing += 1
        }
        return units.map { $0 / scale }
    }

    /// Each part's share of `total` in percent, rounded to `decimals` so the
    /// shares add up to 100 (when the parts add up to the total).
    package static func roundedShares(_ parts: [Double], of total: Double, decimals: Int) -> [Double] {
        guard total > 0 else { return parts.map { _ in 0 } }
        return roundedParts(parts.map { $0 / total * 100 }, total: 100, decimals: decimals)
    }
}
