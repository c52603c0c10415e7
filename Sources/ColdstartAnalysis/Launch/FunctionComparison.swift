import Foundation

/// The functions whose sampled self time moved most between two sets of
/// launches: where a slower phase spends its extra CPU time. Informational:
/// sampled times are CPU time of the sampling clock (samples × period), a
/// function absent from a launch counts 0 ms there, and the p-values are not
/// adjusted over the functions, so the gate never uses them.
package struct FunctionComparison: Codable, Sendable {
    package var rows: [Row]
    /// Completed launches with samples on each side.
    package var baseSampledRuns: Int
    package var newSampledRuns: Int

    package struct Row: Codable, Sendable {
        package var function: String
        package var module: String
        /// Median over the launches of the self time per launch, in ms.
        package var baseMedianMs: Double
        package var newMedianMs: Double
        package var deltaMs: Double
        /// Self samples over all the side's launches.
        package var baseSamples: Int
        package var newSamples: Int
        /// Two-sided Mann–Whitney p of the per-launch self times, unadjusted.
        package var p: Double?
    }

    /// The `limit` functions with the largest change of median self time
    /// (functions whose median did not move are left out).
    /// Throws when a side has no sampled launch.
    package init(base: RunSet, new: RunSet, limit: Int = 10, debugDirectory: String? = "/usr/lib/debug") throws {
        let baseTimes = try Self.selfTimes(base, debugDirectory: debugDirectory)
        let newTimes = try Self.selfTimes(new, debugDirectory: debugDirectory)
        for (name, set, times) in [("BASE", base, baseTimes), ("NEW", new, newTimes)] where times.isEmpty {
            throw ComparisonError("\(name) \(set.path) has no sampled launch to compare functions with (record with COLDSTART_HZ set, or `coldstart run --hz HZ`)")
        }
        baseSampledRuns = baseTimes.count
        newSampledRuns = newTimes.count
        let keys = Set(baseTimes.flatMap(\.keys)).union(newTimes.flatMap(\.keys))
        var rows: [Row] = []
        for key in keys {
            let b: [Double] = baseTimes.map { $0[key]?.ms ?? 0 }
            let n: [Double] = newTimes.map { $0[key]?.ms ?? 0 }
            let baseMedian = Statistics.median(b) ?? 0
            let newMedian = Statistics.median(n) ?? 0
            let baseSamples = baseTimes.reduce(0) { $0 + ($1[key]?.samples ?? 0) }
            let newSamples = newTimes.reduce(0) { $0 + ($1[key]?.samples ?? 0) }
            guard newMedian != baseMedian else { continue }
            rows.append(Row(
                function: key.name, module: key.module, baseMedianMs: baseMedian, newMedianMs: newMedian,
                deltaMs: newMedian - baseMedian, baseSamples: baseSamples, newSamples: newSamples, p: MannWhitneyTest(b, n)?.p))
        }
        rows.sort { abs($0.deltaMs) != abs($1.deltaMs) ? abs($0.deltaMs) > abs($1.deltaMs) : $0.function < $1.function }
        self.rows = Array(rows.prefix(limit))
    }

    private struct Key: Hashable {
        var name: String
        var module: String
    }

    /// Per completed, sampled launch: each function's self time and samples.
    private static func selfTimes(_ set: RunSet, debugDirectory: String?) throws -> [[Key: (ms: Double, samples: Int)]] {
        try set.completed.filter { $0.timeline.sampling != nil && !$0.timeline.samples.isEmpty }.map { run in
            let analysis = try LaunchAnalysis(
                timeline: run.timeline, options: ProfileOptions(top: 100_000), path: run.label,
                symbolizer: Symbolizer(modules: run.timeline.modules, debugDirectory: debugDirectory))
            var times: [Key: (ms: Double, samples: Int)] = [:]
            for row in analysis.report.profile?.overall.bySelf ?? [] where row.selfSamples > 0 {
                times[Key(name: row.name, module: row.module), default: (0, 0)].ms += row.selfMs
                times[Key(name: row.name, module: row.module), default: (0, 0)].samples += row.selfSamples
            }
            return times
        }
    }
}
