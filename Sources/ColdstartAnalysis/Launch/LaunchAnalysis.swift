import Foundation

/// One launch, analysed once: what every output of `coldstart report` and
/// `coldstart export` renders.
///
/// The pass names every frame once, the samples' and the blocked threads'
/// together: from the file when `coldstart symbolize` wrote names into it,
/// else with one `Symbolizer` pass over the modules on disk. From those names
/// it builds the report (launch, sampled stacks, blocked time) and the
/// selected samples as stacks; the text, the JSON, the HTML page and the
/// exporters only render them, so they agree on every name and figure.
package struct LaunchAnalysis {
    /// The launch sections, the sampled-stacks sections when the launch was
    /// sampled, and the blocked time when the off-CPU watcher ran.
    package let report: LaunchReport
    /// The samples as the report's selection, in time order; nil when the
    /// launch was not sampled.
    package let stacks: SampledStacks?
    /// What the findings were made from (`report.findings`): a pool of
    /// launches adds these up (`PooledFindings`).
    let findingInputs: FindingInputs
    /// The sampled stacks' working state and the samples `options` select;
    /// nil when the launch was not sampled.
    let profile: (analysis: ProfileAnalysis, selected: [Int])?

    /// Analyses `timeline` with `options` (the selection and thresholds of
    /// the sampled sections). `symbolizer` names the frames when the file
    /// has no names (by default one over the modules' files on this
    /// machine). Throws `ProfileError` when `options` select a phase or
    /// thread the launch does not have, or the sampling rate is unusable.
    package init(timeline: Timeline, options: ProfileOptions = ProfileOptions(), path: String = "<timeline>",
                symbolizer: Symbolizer? = nil) throws {
        let symbolizer = symbolizer ?? Symbolizer(modules: timeline.modules)
        let naming = timeline.frameNames(symbolizer)
        let profile: ProfileReport?
        let analysis = try ProfileAnalysis.make(timeline: timeline, symbols: naming.symbols, path: path)
        if let analysis {
            let selected = try analysis.select(options, path: path)
            // One merge for the text report's tree and the HTML page's flame graph.
            let merged = analysis.mergedCallTree(selected)
            profile = analysis.report(selected, merged: merged, options: options, warnings: naming.warnings)
            stacks = SampledStacks(analysis, selected: selected, merged: merged, warnings: naming.warnings)
            self.profile = (analysis, selected)
        } else {
            profile = nil
            stacks = nil
            self.profile = nil
        }
        var inputs = FindingInputs(launchMs: 0)
        report = LaunchReport(timeline, profile: profile, analysis: analysis, symbols: naming.symbols, symbolizer: symbolizer,
                              findingInputs: &inputs)
        findingInputs = inputs
        warnings = naming.warnings
    }

    /// Lines about names that could not be found (missing or rebuilt binaries).
    let warnings: [String]
}

extension SampledStacks {
    /// The selected samples of `timeline` as `LaunchAnalysis` makes them (the
    /// same names, selection and warnings), without the report: what
    /// `coldstart export` writes. The report's findings and tables were a
    /// third of an export's CPU, for nothing the exporters read. nil when
    /// the launch was not sampled; throws as `LaunchAnalysis` does.
    package init?(timeline: Timeline, options: ProfileOptions = ProfileOptions(), path: String = "<timeline>",
                  symbolizer: Symbolizer? = nil) throws {
        let naming = timeline.frameNames(symbolizer ?? Symbolizer(modules: timeline.modules))
        guard let analysis = try ProfileAnalysis.make(timeline: timeline, symbols: naming.symbols, path: path) else { return nil }
        self.init(analysis, selected: try analysis.select(options, path: path), warnings: naming.warnings)
    }
}

extension Timeline {
    /// Why the app's own sampler recorded nothing of this launch, with the
    /// numbers, or nil when it took samples: its clock refused, never opened
    /// before the launch ended (a quiet kernel's first perf event waits
    /// 10–18 ms), opened too late, or the launch's user CPU while it ran
    /// was under one period. A launch `coldstart run` sampled from exec has
    /// the loader's samples too: it is still unsampled when the app's clock
    /// never ran.
    package var unsampledReason: String? {
        guard let sampling else { return "sampling was off" }
        let endMs = Figure.format(Double(launch.endNs) / 1e6, decimals: 1)
        if sampling.clock == "none" {
            // The writer says "none" for a clock refused and for one not
            // opened yet; only a refusal leaves its errno in the file.
            let section = (parsedDocument["coldstart"] as? [String: Any])?["sampling"] as? [String: Any]
            if section?["perfRefused"] is [String: Any] { return "no sampling clock could be opened (perf_event_open and the POSIX timers refused)" }
            return "the sampling clock was not open yet when the launch ended at \(endMs) ms: Coldstart's scan thread opens it, and had not "
                + "(on a busy machine it waits for a CPU; on a quiet kernel its first perf event waits 10–18 ms)"
        }
        // Only an app linked with Coldstart has a clock of its own to arm
        // (an unmodified one's samples are all the launcher's); a file old
        // enough to have no `kernelStacks` may have samples without saying
        // when its clock ran.
        if sampling.clock == "perf-task-clock", sampling.sampledFromNs == nil, LaunchMode(self) == .linked,
           samples.isEmpty || sampling.kernelStacks != nil {
            return "the sampling clock never ran: the launch ended at \(endMs) ms, before its first perf event was open "
                + "(a quiet kernel's first waits 10–18 ms)"
        }
        guard samples.isEmpty else { return nil }
        let period = sampling.nsPerSample ?? 1e9 / max(sampling.requestedHz, 1)
        let hz = Figure.format(sampling.requestedHz, decimals: 0)
        if let user = sampling.userNs, Double(user) < period {
            return "the launch's user CPU while sampled, \(Figure.format(Double(user) / 1e6, decimals: 2)) ms, "
                + "was under one sampling period (\(Figure.format(period / 1e6, decimals: 2)) ms at \(hz) Hz)"
        }
        let armed = sampling.sampledFromNs ?? sampling.startNs
        return "the clock ran from \(Figure.format(Double(armed) / 1e6, decimals: 1)) ms, "
            + "\(Figure.format(Double(armed - sampling.startNs) / 1e6, decimals: 1)) ms after sampling started; the launch ended at \(endMs) ms"
    }
}

extension Timeline {
    /// The name of every distinct frame of the samples and the blocked
    /// stacks: from the file when it was symbolized, otherwise from one pass
    /// of `symbolizer`. Nothing is read when there is nothing to name.
    func frameNames(_ symbolizer: Symbolizer) -> Symbolization {
        var naming = namesOfFrames(symbolizer)
        // Frames the reader could not unwind: said where missing files are.
        if let note = offlineUnwinding?.note { naming.warnings.insert(note, at: 0) }
        return naming
    }

    private func namesOfFrames(_ symbolizer: Symbolizer) -> Symbolization {
        let sampled = sampling != nil ? samples : []
        let blocked = watch?.stacksAsSamples ?? []
        if isSymbolized {
            var symbols = self.symbols
            var unnamed = 0
            // Each distinct frame once: its key is built by interpolation.
            // The reader shares one array among consecutive samples of the
            // same stack, so comparing with the previous one costs nothing.
            var seen: Set<Frame> = []
            var previous: [Frame] = []
            for sample in sampled where sample.frames != previous {
                previous = sample.frames
                for frame in sample.frames where seen.insert(frame).inserted && symbols[frame.key] == nil {
                    symbols[frame.key] = Symbol(name: Symbolizer.fallbackName(for: frame, modules: modules))
                    unnamed += 1
                }
            }
            return Symbolization(symbols: symbols, warnings: [], mismatchedFrames: 0, unnamedFrames: unnamed)
        }
        if sampled.isEmpty && blocked.isEmpty {
            return Symbolization(symbols: [:], warnings: [], mismatchedFrames: 0, unnamedFrames: 0)
        }
        return symbolizer.symbolize(sampled + blocked)
    }
}
