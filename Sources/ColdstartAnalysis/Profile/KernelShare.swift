import Foundation

/// A phase's CPU time split into the host's user mode, the host's kernel
/// mode and Coldstart's own, so that they add up to the phase's CPU
/// (docs/before-main.md, "Kernel share").
///
/// Coldstart's stacks are user-mode samples of a perf task clock: samples ×
/// its period is the user time, to about ± √samples periods. Coldstart's own
/// CPU is counted apart: its threads' (the sampler's scan thread, the
/// watcher: their CPU clocks at points of the launch, `ownThreads`) and,
/// under `coldstart run`, the launcher's fork child before `exec` (the CPU of
/// the first phase that no sample saw), the kernel-mode samples the launcher
/// marked its own, and every sample of the audit module's work
/// (`AuditModuleWork`: ld.so loading it, its callbacks). The host's kernel
/// part (exec, page faults, `mmap`, `read`) is then either the phase's
/// kernel-mode samples × the period, where `coldstart run`'s launcher
/// sampled kernel mode there (a program that does not link Coldstart, and a
/// linked app before its earliest init), or else the phase's CPU from `getrusage` less the user
/// time and Coldstart's. A program without Coldstart's last phase ends at
/// `wait4`, whose CPU includes the kernel's exit after the last sample
/// (unmapping the process, ~1.1 ms for `swift-format`), which no task-clock
/// sample sees, perf's neither: it is `exitMs`, apart. `getrusage`'s own
/// user/system split is not used: the kernel makes it from 4 ms ticks, too
/// coarse for a phase of a few milliseconds. A launch whose sampler lost
/// records to a full ring (`kernelStacks.lost`) has no split after its
/// earliest init: where the lost user time fell is not known.
package struct KernelShare: Codable, Sendable, Equatable {
    /// User-mode CPU of the host: user samples × period.
    package var userMs: Double
    /// Kernel-mode CPU of the host.
    package var kernelMs: Double
    /// Of `userMs + kernelMs`, in percent: Coldstart's own and the exit left out.
    package var kernelPercent: Double
    /// User-mode samples behind `userMs`: its precision is ± √ of this, in periods.
    package var userSamples: Int
    /// "rusage" (CPU time from getrusage less the sampled user time and
    /// Coldstart's) or "kernel samples" (the launcher's kernel-mode samples
    /// × period).
    package var source: String
    /// Coldstart's own CPU in the phase, in neither figure above: its
    /// threads', and in the first phase under `coldstart run` the
    /// launcher's fork child, its marked kernel samples and the audit
    /// module's loading. Absent in reports written before it (nil: none).
    package var coldstartMs: Double?
    /// The last phase of a program without Coldstart: the CPU `wait4`
    /// counts after its last sample, the kernel's exit (nil: none).
    package var exitMs: Double?

    /// A phase needs at least this many periods of CPU time: below it one
    /// sample more or less would swing the split by more than 10 points
    /// (1 ms at 10 kHz, 10 ms at the in-process default of 1 kHz).
    static let minimumPeriods = 10.0

    /// One entry per phase of `timeline`, nil where the phase's user time is
    /// not known from a user-mode perf clock that covered it, its CPU time is
    /// unknown or under `minimumPeriods` periods, and for Coldstart's own
    /// set-up phase.
    /// `minimumPeriods`: lower for a pool of launches, which sums each
    /// launch's split and applies the floor to the sum (`PooledProfile`).
    package static func phases(_ timeline: Timeline, minimumPeriods: Double = minimumPeriods) -> [KernelShare?] {
        guard let sampling = timeline.sampling, sampling.clock == "perf-task-clock" else {
            return timeline.phases.map { _ in nil }
        }
        guard let periodNs = sampling.nsPerSample else { return timeline.phases.map { _ in nil } }
        let launcher = (timeline.parsedDocument["coldstart"] as? [String: Any])?["launcher"] as? [String: Any]
        let launcherMode = launcher?["mode"] as? String
        let kernelRows = launcher?["kernelSamples"] as? [[NSNumber]]
        let kernelTimes = kernelRows?.compactMap { $0.first?.int64Value }.sorted()
        let coldstarts = coldstartsSampleTimes(timeline, launcher: launcher, kernelRows: kernelRows ?? [])
        // The launcher's kernel-mode samples cover the whole launch of a
        // program without Coldstart, a linked app's until its earliest init.
        let kernelSampledUntil: Int64 = kernelTimes == nil ? .min
            : launcherMode == "not linked" ? .max : (timeline.launch.earliestInitNs ?? .min)
        let userTimes = timeline.samples.map(\.ns).sorted()
        func count(_ times: [Int64], from start: Int64, to end: Int64) -> Int {
            times.partitionPoint { $0 < end } - times.partitionPoint { $0 < start }
        }
        // The CPU before `main` that no sample saw — the launcher's fork
        // child and the start of exec, before the events switched on (about
        // 1.5 ms, docs/before-main.md) — is Coldstart's, in the first phase,
        // so the phases before `main` add up to getrusage's CPU there.
        var unsampledBeforeMainNs = 0.0
        if let kernelTimes, launcherMode == "not linked", let main = timeline.rusage.first(where: { $0.at == "main" }) {
            let sampled = Double(count(userTimes, from: .min, to: main.ns) + count(kernelTimes, from: .min, to: main.ns)) * periodNs
            unsampledBeforeMainNs = max(Double(main.usage.cpuNs) - sampled, 0)
        }
        let windows = sampledWindows(timeline, sampling: sampling, launcherMode: launcherMode, sortedSamples: userTimes)
        let ringLost = sampling.kernelStacks?.lost ?? 0
        let lastPhase = timeline.phases.indices.last
        return timeline.phases.enumerated().map { index, phase -> KernelShare? in
            // The set-up phase's sampler starts inside it: its user time is not all sampled.
            guard phase.kind != "profiler", phase.endNs > phase.startNs else { return nil }
            // In Double: a hostile file's times must not overflow Int64.
            let covered = windows.reduce(0.0) { sum, window in
                sum + max(0, Double(min(phase.endNs, window.to)) - Double(max(phase.startNs, window.from)))
            }
            guard covered >= 0.95 * (Double(phase.endNs) - Double(phase.startNs)) else { return nil }
            let samples = count(userTimes, from: phase.startNs, to: phase.endNs)
            let ownNs = timeline.ownCpuNs(from: phase.startNs, to: phase.endNs)
            let cpu = phase.rusage.map { Double($0.cpuNs) }
            if let kernelTimes, phase.endNs <= kernelSampledUntil {
                let kernelSamples = count(kernelTimes, from: phase.startNs, to: phase.endNs)
                guard Double(samples + kernelSamples) >= minimumPeriods else { return nil }
                // Where getrusage knows the CPU the parts add up to it: a
                // sample or two more than the CPU (± √samples) come off the
                // kernel's part first.
                let ownKernel = count(coldstarts.kernel, from: phase.startNs, to: phase.endNs)
                let ownUser = count(coldstarts.user, from: phase.startNs, to: phase.endNs)
                let ownSampledNs = Double(ownKernel + ownUser) * periodNs
                let host = cpu.map { max($0 - ownNs - ownSampledNs, 0) } ?? .infinity
                let user = min(Double(samples - ownUser) * periodNs, host)
                let kernelNs = min(Double(kernelSamples - ownKernel) * periodNs, host - user)
                let own = cpu.map { $0 - host } ?? ownNs + ownSampledNs
                // What getrusage counts beyond the samples: before exec the
                // launcher's, after the last sample the kernel's exit.
                let unsampled = cpu != nil ? host - user - kernelNs : (phase.startNs == 0 ? unsampledBeforeMainNs : 0)
                let first = phase.startNs == 0
                let exit = !first && index == lastPhase && launcherMode == "not linked" ? unsampled : 0
                return KernelShare(userNs: user, kernelNs: kernelNs + (first || exit > 0 ? 0 : unsampled), samples: samples - ownUser,
                                   source: "kernel samples", coldstartNs: own + (first ? unsampled : 0), exitNs: exit)
            }
            if let cpu, cpu > 0 {
                // Samples the kernel dropped from a full ring are user time
                // that no phase can be given: the rest would read as kernel.
                guard cpu >= minimumPeriods * periodNs, ringLost == 0 else { return nil }
                let host = max(cpu - ownNs, 0), userNs = Double(samples) * periodNs
                return KernelShare(userNs: min(userNs, host), kernelNs: max(host - userNs, 0), samples: samples, source: "rusage",
                                   coldstartNs: cpu - host)
            }
            return nil
        }
    }

    /// The times of the samples that are Coldstart's, in kernel mode (those
    /// the launcher marked: its records being written on the program's
    /// thread, the audit module's system calls) and user mode, sorted; and
    /// in both modes the audit module's work (`AuditModuleWork`: ld.so
    /// loading it, its callbacks), which perf's own launch of the program
    /// does not have. In the phase's time by their clock, and counted apart.
    private static func coldstartsSampleTimes(_ timeline: Timeline, launcher: [String: Any]?,
                                              kernelRows: [[NSNumber]]) -> (kernel: [Int64], user: [Int64]) {
        let audit = AuditModuleWork(timeline, launcher: launcher)
        let kernel = kernelRows.compactMap { row -> Int64? in
            guard row.count > 1 else { return nil }
            return (row.count > 2 && row[2].intValue == 1) || audit.isLoading(ns: row[0].int64Value, tid: row[1].intValue) ? row[0].int64Value : nil
        }
        return (kernel.sorted(), timeline.samples.filter(audit.contains).map(\.ns).sorted())
    }

    /// Everything before `main` together, from the `getrusage` reading at
    /// `main` (la_preinit, or a linked app's first constructor) less the
    /// user samples before it: the split the phases before `main` cannot
    /// have on their own when the kernel refused kernel-mode samples. Only
    /// for a program without Coldstart, whose launcher samples from exec
    /// without a gap (a linked app's own clocks start a little after its
    /// earliest init: `sampledWindows`). The audit module's work is
    /// Coldstart's, as in `phases`: its user samples, and ld.so loading it
    /// in kernel mode, which no sample sees here, as the window's wall time
    /// less its user samples (the program's only thread, on the CPU: within
    /// a period of its samples of both modes where the kernel allowed them).
    /// Nil without that reading, a user-mode perf clock from the start, or
    /// 10 periods of CPU.
    package static func beforeMain(_ timeline: Timeline) -> KernelShare? {
        let launcher = (timeline.parsedDocument["coldstart"] as? [String: Any])?["launcher"] as? [String: Any]
        guard launcher?["mode"] as? String == "not linked", let sampling = timeline.sampling, sampling.clock == "perf-task-clock",
              sampling.startNs <= 0, let main = timeline.rusage.first(where: { $0.at == "main" }),
              let periodNs = sampling.nsPerSample else { return nil }
        let cpu = Double(main.usage.cpuNs)
        guard cpu >= minimumPeriods * periodNs else { return nil }
        let audit = AuditModuleWork(timeline, launcher: launcher)
        let early = timeline.samples.filter { $0.ns < main.ns }
        let own = early.filter(audit.contains)
        let loadingSamples = own.filter { audit.isLoading(ns: $0.ns, tid: $0.tid) }.count
        let loadingKernelNs = audit.loading.map { window in
            max(Double(min(window.upperBound, main.ns)) - Double(window.lowerBound) - Double(loadingSamples) * periodNs, 0)
        } ?? 0
        let userNs = min(Double(early.count - own.count) * periodNs, cpu)
        let ownNs = min(Double(own.count) * periodNs + loadingKernelNs, cpu - userNs)
        return KernelShare(userNs: userNs, kernelNs: cpu - userNs - ownNs, samples: early.count - own.count, source: "rusage",
                           coldstartNs: ownNs)
    }

    /// Where a user-mode clock was sampling. A program without Coldstart:
    /// the launcher's, from exec to the end. An app linked with Coldstart:
    /// its own sampler from its first sample (the clocks are opened by its
    /// scan thread some time after `sampling.startNs`, so a phase right
    /// after the earliest init may have run unsampled), and under
    /// `coldstart run` the launcher's before the earliest init too.
    private static func sampledWindows(_ timeline: Timeline, sampling: Timeline.Sampling, launcherMode: String?,
                                       sortedSamples: [Int64]) -> [(from: Int64, to: Int64)] {
        if launcherMode == "not linked" { return [(sampling.startNs, sampling.stopNs)] }
        let cut = launcherMode == nil ? sampling.startNs : (timeline.launch.earliestInitNs ?? 0)
        // Not before the main thread's clock ran (`clockArmedNs`): on a busy
        // machine the scan thread armed it 5 ms into `main` while a launcher
        // sample after the earliest init made the window look whole, and the
        // unsampled start read as kernel time (46% against perf's 10%).
        let from = max(cut, sampling.startNs, sampling.sampledFromNs ?? .min)
        let first = sortedSamples.partitionPoint { $0 < from }
        let own: (from: Int64, to: Int64) = (first < sortedSamples.count ? sortedSamples[first] : sampling.stopNs, sampling.stopNs)
        let launcher: [(from: Int64, to: Int64)] = launcherMode == nil ? [] : [(Int64(0), cut)]
        return launcher + [own]
    }

    init(userNs: Double, kernelNs: Double, samples: Int, source: String, coldstartNs: Double = 0, exitNs: Double = 0) {
        userMs = userNs / 1e6
        kernelMs = kernelNs / 1e6
        kernelPercent = userNs + kernelNs > 0 ? kernelNs / (userNs + kernelNs) * 100 : 0
        userSamples = samples
        self.source = source
        coldstartMs = coldstartNs > 0 ? coldstartNs / 1e6 : nil
        exitMs = exitNs > 0 ? exitNs / 1e6 : nil
    }
}
