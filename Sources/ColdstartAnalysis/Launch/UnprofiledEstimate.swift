import Foundation

/// The launch as it would have taken without Coldstart: its wall time less
/// what Coldstart cost the launch's critical path (`launch.withoutProfiling`
/// in the JSON).
///
/// What is subtracted, and how well each part is known:
/// - **set-up**: the "Coldstart set-up" phase, on the main thread before any
///   library initializer (exact).
/// - **sampling**: every sample the critical path's threads took before the
///   launch's end interrupted them. One a signal took costs the handler's own
///   time (measured: its mean, `handlerNs.totalNs` ÷ the signal samples) plus
///   the kernel's part of the signal — the timer interrupt, the delivery and
///   `sigreturn`, and the caches the interrupted start-up code finds cold
///   afterwards — which the process cannot time: `kernelNsPerSample` ±
///   `kernelNsUncertainty`. One the kernel recorded itself (the first 50 ms,
///   `sampling.kernelStacks`) costs the interrupt and the kernel's walk of
///   the stack: `recordNsPerSample` ± `recordNsUncertainty`. Both measured
///   on the reference machine (docs/performance.md).
/// - **Coldstart's threads** (the watcher, the sampler's scanner): their CPU
///   time delayed the path only where the path waited for a CPU. At most
///   the smaller of their CPU time and the path's run-queue wait; at least
///   that wait × their share of the CPUs' time in the window (every CPU
///   busy, the wait shared out by use). The estimate takes the middle, ±
///   half the range: on a contended machine a fair share of their CPU time
///   comes out of the path's (about 1 / CPUs of it), which lies between.
/// - **loader sampling** (`coldstart run`): the median time before the
///   app's first code in the run's sampled launches less that of its
///   launches without loader sampling (`LoaderReference`), ± half the
///   latter's interquartile range.
///
/// When the uncertainty is over a tenth of the estimate, or a cost cannot
/// be known at all (the start known to a clock tick only, the loader sampled
/// by `coldstart run` without reference launches to compare with, figures
/// missing), there is no number: `unknown` says why.
package struct UnprofiledEstimate: Codable, Sendable, Equatable {
    /// The estimate, wall ms; absent when it cannot be known well enough.
    package var ms: Double?
    /// ± around `ms`, or around the range's middle when `ms` is absent.
    package var uncertaintyMs: Double
    /// The range the launch lies in, when the parts are known at all.
    package var lowMs: Double?
    package var highMs: Double?
    /// What Coldstart cost the launch, the parts added up.
    package var subtractedMs: Double
    package var parts: [Part]
    /// Why there is no number.
    package var unknown: String?

    package struct Part: Codable, Sendable, Equatable {
        /// "set-up", "sampling", "Coldstart's threads", "start time", "loader sampling".
        package var name: String
        package var ms: Double
        package var uncertaintyMs: Double
        /// How it was obtained, in a few words.
        var basis: String
    }

    /// The kernel's part of one sample during a launch, and how far off it
    /// may be: 45–60 µs per sample on the reference VM (docs/performance.md:
    /// 1 kHz against 10 Hz with frame pointers; ~24 µs in a steady loop, the
    /// rest cold caches after each interrupt), single-digit µs on bare metal.
    static let kernelNsPerSample = 40_000.0
    static let kernelNsUncertainty = 30_000.0
    /// The same for a sample the kernel recorded without a signal: 13–22 µs
    /// per sample on the reference VM, nearly all of it the timer interrupt
    /// (docs/performance.md: the main phase of a ~12 ms tool at 10 kHz
    /// against 10 Hz; no call chain costs the same), against 22–34 µs for a
    /// signal there.
    static let recordNsPerSample = 17_000.0
    static let recordNsUncertainty = 9_000.0

    /// An estimate is given when its uncertainty is at most this share of it.
    static let tolerance = 0.10

    /// The estimate for `timeline` alone (`coldstart run`'s summary).
    package init(_ timeline: Timeline) {
        self.init(timeline, blocked: LaunchReport.BlockedTime(timeline, frameName: nil))
    }

    /// The estimate for `timeline`; `blocked` is its blocked-time section
    /// (the path's run-queue wait), when the watcher ran.
    init(_ timeline: Timeline, blocked: LaunchReport.BlockedTime?) {
        let launchMs = Double(timeline.launch.endNs) / 1e6
        var parts: [Part] = []
        var unknown: [String] = []

        // A program without Coldstart was sampled by the launcher's perf
        // events alone: no signal, handler or thread of ours ran in it, and
        // what the events cost it is not timed.
        let linked = LaunchMode(timeline) != .runUnlinked
        if let setup = timeline.phases.first(where: { $0.kind == "profiler" }) {
            parts.append(Part(name: "set-up", ms: Double(setup.durationNs) / 1e6, uncertaintyMs: 0,
                              basis: "the 'Coldstart set-up' phase, exact"))
        } else if linked {
            unknown.append("the timeline has no 'Coldstart set-up' phase (written before it was recorded)")
        }
        if linked, let sampling = timeline.sampling {
            parts.append(Self.sampling(timeline, sampling))
        }
        if linked, let threads = Self.ownThreads(timeline, blocked: blocked) { parts.append(threads) }

        let launch = timeline.launch
        if launch.startSource != "spawn-env" && launch.startPrecisionNs > 0 {
            let precision = Double(launch.startPrecisionNs) / 1e6
            if launch.startSource == "proc-stat" {
                // Truncated to the tick: early by up to the precision, so
                // the launch may be up to that much shorter.
                parts.append(Part(name: "start time", ms: precision / 2, uncertaintyMs: precision / 2,
                                  basis: "/proc starttime in clock ticks: up to \(Figure.format(precision, decimals: 0)) ms early"))
            } else {
                // Estimated from the main thread's clocks: late, if anything
                // (0.05–0.08 ms median, docs/timeline-format.md), never early.
                parts.append(Part(name: "start time", ms: 0, uncertaintyMs: precision,
                                  basis: "estimated start (\(launch.startSource)), ±\(Figure.format(precision, decimals: 2)) ms"))
            }
        }
        if !linked {
            unknown.append("the program ran under coldstart run's perf events (or ptrace, where perf is refused) and LD_AUDIT module, whose cost the launch "
                + "cannot time; time it without coldstart run to know")
        } else if Self.loaderWasSampled(timeline), timeline.sampling?.clock != "ptrace", let reference = LoaderReference(timeline) {
            // The run also launched the app without loader sampling: what the
            // sampling added is the medians' difference, as well known as
            // the reference launches' spread.
            parts.append(Part(name: "loader sampling", ms: Double(max(reference.addedNs, 0)) / 1e6,
                              uncertaintyMs: Double(reference.p75Ns - reference.p25Ns) / 2e6,
                              basis: "median exec → earliest init of \(reference.sampledLaunches) sampled launches less "
                                  + (reference.end == .earliestInit ? "that" : reference.spanPhrase)
                                  + " of \(reference.launches) without loader sampling, ± half their interquartile range"))
        } else if Self.loaderWasSampled(timeline) {
            unknown.append("coldstart run sampled the loader (an LD_AUDIT module and perf events, or ptrace where perf is refused, from exec), "
                + "which slows the time before main by an amount the launch cannot time; run with --no-sample-loader")
        }

        self.parts = parts
        subtractedMs = parts.map(\.ms).reduce(0, +)
        uncertaintyMs = parts.map(\.uncertaintyMs).reduce(0, +)
        let estimate = launchMs - subtractedMs
        if unknown.isEmpty {
            lowMs = max(estimate - uncertaintyMs, 0)
            highMs = estimate + uncertaintyMs
        }
        if unknown.isEmpty, estimate > 0, uncertaintyMs <= Self.tolerance * estimate {
            ms = estimate
        } else if unknown.isEmpty {
            let widest = parts.max { $0.uncertaintyMs < $1.uncertaintyMs }
            unknown.append("not known to \(Int(Self.tolerance * 100))%: ±\(Figure.format(uncertaintyMs, decimals: 2)) ms, "
                + "mostly \(widest.map { "\($0.name) (\($0.basis))" } ?? "?")")
        }
        self.unknown = unknown.isEmpty ? nil : unknown.joined(separator: "; ")
    }

    /// The samples that interrupted the critical path: the main thread's
    /// before `main`, then the path's threads', up to the launch's end. The
    /// launcher's samples before the earliest init are perf records, not
    /// signals: they are not counted.
    static func sampling(_ timeline: Timeline, _ sampling: Timeline.Sampling) -> Part {
        let path = CriticalPath(timeline)
        let from = timeline.launch.earliestInitNs ?? sampling.startNs
        let main = timeline.process.pid
        // A thinned boost kept one boosted sample in hz / afterHz: each kept
        // one stands for that many interruptions of the host.
        let boosted = sampling.boost.flatMap { boost -> (untilNs: Int64, signals: Double)? in
            guard boost.thinned, boost.afterHz > 0, boost.hz > boost.afterHz else { return nil }
            return (boost.untilNs, (boost.hz / boost.afterHz).rounded())
        }
        let onPath = timeline.samples.filter { sample in
            guard sample.ns >= from, sample.ns <= timeline.launch.endNs else { return false }
            if sample.ns < timeline.launch.mainNs { return sample.tid == main }
            return path.thread(at: sample.ns) == sample.tid || (sample.ns == timeline.launch.endNs && sample.tid == main)
        }
        // Interruptions: the kernel's records, then the signals.
        var records = 0, signals = 0
        for sample in onPath {
            let weight = boosted.map { sample.ns < $0.untilNs ? Int($0.signals) : 1 } ?? 1
            if sampling.kernelRecorded(at: sample.ns) { records += weight } else { signals += weight }
        }
        let signalSamples = sampling.samples - (sampling.kernelStacks?.samples ?? 0)
        let handler: Double
        let handlerBasis: String
        if let total = sampling.handlerNs?.totalNs, signalSamples > 0 {
            handler = total / Double(signalSamples)
            handlerBasis = "handler \(Figure.format(handler / 1000, decimals: 1)) µs (mean, measured)"
        } else if let median = sampling.handlerNs?.median {
            handler = median
            handlerBasis = "handler \(Figure.format(handler / 1000, decimals: 1)) µs (median: no total recorded)"
        } else {
            handler = 0
            handlerBasis = "handler time not recorded"
        }
        let perSignal = handler + kernelNsPerSample
        var terms: [String] = []
        if records > 0 || signals == 0 {
            terms.append("\(records) recorded by the kernel × ~\(Figure.format(recordNsPerSample / 1000, decimals: 0))±"
                + "\(Figure.format(recordNsUncertainty / 1000, decimals: 0)) µs")
        }
        if signals > 0 {
            terms.append("\(signals) signal\(signals == 1 ? "" : "s") × \(Figure.format(perSignal / 1000, decimals: 0)) µs ("
                + handlerBasis + " + the kernel's ~\(Figure.format(kernelNsPerSample / 1000, decimals: 0))±"
                + "\(Figure.format(kernelNsUncertainty / 1000, decimals: 0)) µs)")
        }
        return Part(
            name: "sampling",
            ms: (Double(records) * recordNsPerSample + Double(signals) * perSignal) / 1e6,
            uncertaintyMs: (Double(records) * recordNsUncertainty + Double(signals) * kernelNsUncertainty) / 1e6,
            basis: "samples on the critical path"
                + (boosted == nil ? "" : " (the boost's kept samples × their thinning)") + ": "
                + terms.joined(separator: " + ") + "; the kernel's part is not timed in the launch")
    }

    /// The watcher's and the scanner's CPU time where it delayed the path;
    /// nil when neither ran.
    static func ownThreads(_ timeline: Timeline, blocked: LaunchReport.BlockedTime?) -> Part? {
        let cpuMs: Double
        if let own = timeline.sampling?.coldstartCpuNs {
            cpuMs = Double(own) / 1e6
        } else if let watch = timeline.watch, watch.stopNs > watch.startNs {
            // The watcher's CPU over its window, the launch's part of it.
            let share = min(max(Double(timeline.launch.endNs - watch.startNs) / Double(watch.stopNs - watch.startNs), 0), 1)
            cpuMs = Double(watch.cpuNs) / 1e6 * share
        } else {
            return nil
        }
        guard cpuMs > 0 else { return nil }
        let cpus = Double(blocked?.watcher.cpus ?? 0)
        guard let blocked, blocked.watcher.watchedTheLaunch, cpus > 0, blocked.launch.wallMs > 0 else {
            // No run-queue figures: anywhere from nothing to all of it.
            return Part(name: "Coldstart's threads", ms: cpuMs / 2, uncertaintyMs: cpuMs / 2,
                        basis: "\(Figure.format(cpuMs, decimals: 2)) ms of CPU; the path's waits for a CPU unknown (no watcher)")
        }
        let wait = blocked.launch.runQueueMs
        let delay = competition(cpuMs: cpuMs, waitMs: wait, cpus: cpus, wallMs: blocked.launch.wallMs)
        return Part(name: "Coldstart's threads", ms: delay.ms, uncertaintyMs: delay.uncertaintyMs,
                    basis: "\(Figure.format(cpuMs, decimals: 2)) ms of CPU; the path waited \(Figure.format(wait, decimals: 2)) ms "
                        + "for one of \(Int(cpus)) CPUs")
    }

    /// How much `cpuMs` of Coldstart's threads delayed a path that waited
    /// `waitMs` for one of `cpus` CPUs in a `wallMs` window: at most the
    /// smaller of the two; at least the wait × their share of the CPUs'
    /// time. The middle, ± half the range.
    static func competition(cpuMs: Double, waitMs: Double, cpus: Double, wallMs: Double) -> (ms: Double, uncertaintyMs: Double) {
        let high = max(min(waitMs, cpuMs), 0)
        let low = min(waitMs * cpuMs / (cpus * wallMs), high)
        return ((low + high) / 2, (high - low) / 2)
    }

    /// `coldstart run` sampled the time before main from exec (its launcher
    /// section with samples or the LD_AUDIT module's times).
    static func loaderWasSampled(_ timeline: Timeline) -> Bool {
        guard let launcher = (timeline.parsedDocument["coldstart"] as? [String: Any])?["launcher"] as? [String: Any] else { return false }
        return launcher["audit"] != nil || ((launcher["samples"] as? NSNumber)?.intValue ?? 0) > 0
            || !((launcher["faults"] as? [Any]) ?? []).isEmpty
    }
}
