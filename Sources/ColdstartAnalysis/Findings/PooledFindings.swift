import Foundation

/// The findings' inputs of many launches of one program, pooled: each
/// launch's own (`LaunchAnalysis.findingInputs`: its critical path, its
/// phases, its names) added up by name, and given per launch, so
/// `Finding.ranked` makes the pool's findings as it makes one launch's. A
/// sampled figure is then the pooled samples × each launch's period ÷ the
/// launches, and its certainty the pooled count: its interval is the
/// pool's, a launch's figure known as well as twenty launches' samples say.
package struct PooledFindings: Sendable {
    package private(set) var launches = 0
    private var launchMs = 0.0
    private var endsAtReady = true
    private var functions: [Key: FindingInputs.NamedCost] = [:]
    private var libraryCalls: [Key: FindingInputs.NamedCost] = [:]
    private var lazyGlobals: [Key: FindingInputs.NamedCost] = [:]
    private var initializers: [String: FindingInputs.Initializer] = [:]
    private var waits: [Key: FindingInputs.BlockingWait] = [:]
    private var loader: FindingInputs.Loader?
    private var loaderMs = 0.0
    private var faults: FindingInputs.PageFaults?
    private var faultCounts: (minor: Double, major: Double, ms: Double, majorMs: Double) = (0, 0, 0, 0)
    private var profiler: FindingInputs.ProfilerCost?
    private var profilerMs: (setup: Double, sampling: Double) = (0, 0)
    private var runtime = RuntimeTally()

    package init() {}

    private struct Key: Hashable {
        var name: String
        var module: String
    }

    /// Runtime costs by kind: samples, their time, on-the-stack samples and
    /// the app callers, over the launches.
    private struct RuntimeTally: Sendable {
        var samples: [RuntimeCostKind: Int] = [:]
        var onStack: [RuntimeCostKind: Int] = [:]
        var callers: [RuntimeCostKind: [String: Int]] = [:]
        var total = 0
        var ns = 0.0
        var scopes: Set<String> = []
    }

    /// Adds one launch's inputs.
    package mutating func add(_ inputs: FindingInputs) {
        launches += 1
        launchMs += inputs.launchMs
        endsAtReady = endsAtReady && inputs.endsAtReady
        Self.add(inputs.functions, to: &functions)
        Self.add(inputs.libraryCalls, to: &libraryCalls)
        Self.add(inputs.lazyGlobals, to: &lazyGlobals)
        for initializer in inputs.initializers {
            var pooled = initializers[initializer.module] ?? initializer
            if initializers[initializer.module] != nil {
                pooled.ms += initializer.ms
                pooled.samples += initializer.samples
            }
            initializers[initializer.module] = pooled
        }
        for wait in inputs.blockingWaits {
            let key = Key(name: wait.cause, module: wait.what)
            var pooled = waits[key] ?? wait
            if waits[key] != nil { pooled.ms += wait.ms }
            waits[key] = pooled
        }
        if let launchLoader = inputs.loader {
            loader = loader ?? launchLoader
            loaderMs += launchLoader.ms
        }
        if let launchFaults = inputs.pageFaults {
            faults = faults ?? launchFaults
            faultCounts.minor += Double(launchFaults.minor)
            faultCounts.major += Double(launchFaults.major)
            faultCounts.ms += launchFaults.ms
            faultCounts.majorMs += launchFaults.majorMs
        }
        if let cost = inputs.profilerCost {
            profiler = profiler ?? cost
            profilerMs.setup += cost.setupMs ?? 0
            profilerMs.sampling += cost.samplingMs
        }
        if let costs = inputs.runtimeCosts {
            runtime.total += costs.totalSamples
            runtime.scopes.insert(costs.scope)
            for row in costs.rows {
                runtime.samples[row.kind, default: 0] += row.samples
                runtime.onStack[row.kind, default: 0] += row.onStackSamples
                runtime.ns += row.ms * 1e6
                // A launch keeps its five largest callers: the rest of the kind's samples stay counted.
                var named = 0
                for caller in row.callers {
                    runtime.callers[row.kind, default: [:]][caller.function, default: 0] += caller.samples
                    named += caller.samples
                }
                if row.samples > named { runtime.callers[row.kind, default: [:]]["(other callers)", default: 0] += row.samples - named }
            }
        }
    }

    /// Named costs by name and module: their samples and times summed; the
    /// callers, call site and phase of the launch that had most of them.
    private static func add(_ costs: [FindingInputs.NamedCost], to pool: inout [Key: FindingInputs.NamedCost]) {
        for cost in costs {
            let key = Key(name: cost.name, module: cost.module)
            guard var pooled = pool[key] else {
                pool[key] = cost
                continue
            }
            if cost.samples > pooled.samples { (pooled.callers, pooled.callSite, pooled.phase) = (cost.callers, cost.callSite, cost.phase) }
            pooled.ms += cost.ms
            pooled.samples += cost.samples
            func sum(_ a: Int?, _ b: Int?) -> Int? { a.map { $0 + (b ?? 0) } ?? b }
            func sum(_ a: Double?, _ b: Double?) -> Double? { a.map { $0 + (b ?? 0) } ?? b }
            (pooled.selfSamples, pooled.totalSamples) = (sum(pooled.selfSamples, cost.selfSamples), sum(pooled.totalSamples, cost.totalSamples))
            (pooled.selfMs, pooled.totalMs) = (sum(pooled.selfMs, cost.selfMs), sum(pooled.totalMs, cost.totalMs))
            pool[key] = pooled
        }
    }

    /// The pool as one launch's inputs: every time per launch (a cost seen
    /// in some launches only is divided by all of them, as `report DIR`'s
    /// ms/launch is), every sample count the pool's.
    package var inputs: FindingInputs {
        let count = Double(max(launches, 1))
        var inputs = FindingInputs(launchMs: launchMs / count)
        inputs.endsAtReady = endsAtReady
        func perLaunch(_ costs: [Key: FindingInputs.NamedCost]) -> [FindingInputs.NamedCost] {
            costs.values.map { cost in
                var cost = cost
                cost.ms /= count
                cost.selfMs = cost.selfMs.map { $0 / count }
                cost.totalMs = cost.totalMs.map { $0 / count }
                return cost
            }.sorted { ($0.samples, $1.name) > ($1.samples, $0.name) }
        }
        inputs.functions = perLaunch(functions)
        inputs.libraryCalls = perLaunch(libraryCalls)
        inputs.lazyGlobals = perLaunch(lazyGlobals)
        inputs.initializers = initializers.values.map { var pooled = $0; pooled.ms /= count; return pooled }
            .sorted { ($0.samples, $1.module) > ($1.samples, $0.module) }
        inputs.blockingWaits = waits.values.map { var pooled = $0; pooled.ms /= count; return pooled }.sorted { $0.ms > $1.ms }
        if var loader {
            loader.ms = loaderMs / count
            inputs.loader = loader
        }
        if let faults {
            inputs.pageFaults = FindingInputs.PageFaults(
                minor: UInt64((faultCounts.minor / count).rounded()), major: UInt64((faultCounts.major / count).rounded()),
                ms: faultCounts.ms / count, majorMs: faultCounts.majorMs / count, certainty: faults.certainty,
                detail: "per launch, over \(launches) launch\(launches == 1 ? "" : "es")")
        }
        if var profiler {
            profiler.setupMs = profiler.setupMs.map { _ in profilerMs.setup / count }
            profiler.samplingMs = profilerMs.sampling / count
            inputs.profilerCost = profiler
        }
        let sampled = runtime.samples.values.reduce(0, +)
        if runtime.total > 0 {
            let nsPerSample = sampled > 0 ? runtime.ns / Double(sampled) / count : 0
            var costs = RuntimeCostSummary(
                classified: runtime.callers.flatMap { kind, callers in callers.map { (kind, Optional($0.key), $0.value) } },
                onStack: runtime.onStack, totalSamples: runtime.total, nsPerSample: nsPerSample)
            costs.scope = runtime.scopes.count == 1 ? runtime.scopes.first! : runtime.scopes.sorted().joined(separator: "; or ")
            inputs.runtimeCosts = costs
        }
        return inputs
    }
}
