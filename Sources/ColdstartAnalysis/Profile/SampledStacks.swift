import Foundation

/// The selected samples of a launch as stacks of functions: what the exporters
/// and the HTML report draw, with the few facts of the launch they label them
/// with. `LaunchAnalysis` builds it in the same pass as `ProfileReport` (the
/// same function names, the same `--phase`/`--thread` selection, the same
/// time per sample), so a flame graph, a pprof profile and the text report
/// agree on every figure.
package struct SampledStacks: Sendable {
    package struct Function: Sendable, Hashable {
        /// Demangled.
        package var name: String
        /// The linkage (mangled) name; `name` when it was not mangled.
        package var systemName: String
        /// Index into `modules`, or -1 when no module held the address.
        package var module: Int
    }

    package struct Sample: Sendable {
        /// Offset from the process start, `CLOCK_MONOTONIC`.
        package var ns: Int64
        package var tid: Int
        /// Index into `phaseNames`.
        package var phase: Int
        /// Ids into `functions`, leaf first.
        package var functions: [Int]
        /// The recorded frames, leaf first, one per function id.
        package var frames: [Timeline.Frame]
        /// The same for the samples with the same `frames`: an exporter's
        /// work per distinct stack is keyed by it.
        package var shape: Int
    }

    /// One distinct stack and how many selected samples had it.
    package struct StackTotal: Sendable, Equatable {
        /// Ids into `functions`, root (outermost) first.
        package var functions: [Int]
        package var samples: Int
    }

    package let functions: [Function]
    package let modules: [Timeline.Module]
    /// The selected samples, in time order.
    package let samples: [Sample]
    /// The launch's phases, then the bucket for samples after its end.
    package let phaseNames: [String]
    /// The name of every thread that has a selected sample.
    package let threadNames: [Int: String]
    /// The process's first thread.
    package let mainThread: Int
    package let sampling: Timeline.Sampling
    /// The time one sample stands for (`Timeline.Sampling.nsPerSample`).
    package let nsPerSample: Double
    /// Lines about names that could not be found (missing or rebuilt binaries).
    package let warnings: [String]
    /// The process that launched, for titles.
    package let process: Timeline.Process
    /// The launch's phases (the wall-clock track of speedscope).
    package let phases: [Timeline.Phase]
    /// The launch's end, ns from the process start.
    package let launchEndNs: Int64
    /// Wall clock (`CLOCK_REALTIME`) of the process start, µs since the epoch.
    package let startRealtimeUs: UInt64?
    /// The thread that carried the launch's work at each moment.
    package let criticalPath: CriticalPath
    private let analysis: ProfileAnalysis
    private let selected: [Int]
    /// The selected samples' merged call tree when the report built it
    /// (`LaunchAnalysis`); an export merges only if it draws a flame graph.
    private let merged: MergedCallTree?

    /// The selected samples `selected` (indices into `analysis.stacks`) in
    /// time order; `merged`, if given, their `mergedCallTree`.
    init(_ analysis: ProfileAnalysis, selected: [Int], merged: MergedCallTree? = nil, warnings: [String]) {
        let stacks = analysis.stacks
        let timeline = analysis.timeline
        let selected = analysis.inTimeOrder(selected)
        self.analysis = analysis
        self.selected = selected
        self.merged = merged
        self.warnings = warnings
        sampling = analysis.sampling
        functions = analysis.functions.map { Function(name: $0.name, systemName: $0.linkageName, module: $0.module) }
        modules = timeline.modules
        phaseNames = analysis.phaseNames
        nsPerSample = analysis.nsPerSample
        mainThread = timeline.process.pid
        process = timeline.process
        phases = timeline.phases
        launchEndNs = timeline.launch.endNs
        startRealtimeUs = timeline.launch.startRealtimeUs
        criticalPath = CriticalPath(timeline)
        samples = selected.map { index in
            Sample(ns: stacks[index].ns, tid: stacks[index].tid, phase: stacks[index].phase,
                   functions: stacks[index].functions, frames: timeline.samples[index].frames, shape: stacks[index].shape)
        }
        var names: [Int: String] = [:]
        let recorded = timeline.recordedThreadNames
        for sample in samples where names[sample.tid] == nil { names[sample.tid] = timeline.threadName(sample.tid, recorded: recorded) }
        threadNames = names
    }

    /// The file name of a function's module ("" outside every module).
    package func moduleName(of function: Int) -> String {
        analysis.moduleName(functions[function].module)
    }

    /// Sampled threads, most samples first (ties by tid).
    package var threads: [Int] {
        var counts: [Int: Int] = [:]
        for sample in samples { counts[sample.tid, default: 0] += 1 }
        return counts.keys.sorted { counts[$0]! != counts[$1]! ? counts[$0]! > counts[$1]! : $0 < $1 }
    }

    /// Every distinct stack (by function) of the selected samples, or of one
    /// thread's, with its sample count, in order of first sighting.
    package func totals(thread: Int? = nil) -> [StackTotal] {
        // Counted in a table by shape, not hashed per sample; a folded
        // file sorts its own lines, so these are not sorted (a sort of
        // 180,000 stacks for nothing at 1,000,000 samples).
        var byShape = [Int](repeating: 0, count: analysis.shapes.count)
        for index in samples.indices where thread == nil || samples[index].tid == thread { byShape[samples[index].shape] += 1 }
        // Stacks of different frames can be the same functions.
        var position: [[Int]: Int] = [:]
        var totals: [StackTotal] = []
        for (shape, count) in byShape.enumerated() where count > 0 {
            let functions = Array(analysis.shapes[shape].reversed())
            if let at = position[functions] {
                totals[at].samples += count
            } else {
                position[functions] = totals.count
                totals.append(StackTotal(functions: functions, samples: count))
            }
        }
        return totals
    }

    /// One thread's selected samples as a flame chart in time order: nested
    /// runs of the same function at the same depth, sorted by start then depth.
    package func runs(thread: Int) -> [StackRun] {
        analysis.runs(selected.filter { analysis.stacks[$0].tid == thread })
    }

    /// The selected samples taken on the launch's critical path (the main
    /// thread before `main`, then whichever thread carried the launch) as one
    /// flame chart in time order: an async main's work after its first await
    /// is on the dispatch workers that ran the main actor.
    package func runsOnCriticalPath() -> [StackRun] {
        let start = criticalPath.pieces.first?.startNs ?? .max
        return analysis.runs(selected.filter { index in
            let sample = analysis.stacks[index]
            return sample.ns < start ? sample.tid == mainThread : criticalPath.thread(at: sample.ns) == sample.tid
        })
    }

    /// Each node of the selected samples' call tree — the text report's,
    /// but whole: nothing pruned — in pre-order, by function id (into
    /// `functions`; depth 0 for the outermost): the flame graph's input.
    /// Returns the distinct stacks this call merged: 0 when it walked the
    /// tree the report was built from.
    @discardableResult
    package func visitCallTree(_ visit: (_ function: Int, _ depth: Int, _ samples: Int, _ selfSamples: Int) -> Void) -> Int {
        if let merged {
            merged.visit(visit)
            return 0
        }
        let tree = analysis.mergedCallTree(selected)
        tree.visit(visit)
        return tree.merged
    }

    /// The time `samples` samples stand for, in milliseconds.
    package func milliseconds(_ samples: Int) -> Double { analysis.ms(samples) }
}
