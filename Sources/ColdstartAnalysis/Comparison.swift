import Foundation

/// Two sets of launches of an app, BASE and NEW, compared measure by measure:
/// medians, their difference, and a Mann–Whitney U test so that noise is not
/// called a regression.
package struct Comparison: Sendable {
    package var base: Side
    package var new: Side
    /// The significance level of every verdict.
    package var alpha: Double
    /// The whole launch, then phases, then spans.
    package var rows: [Row]

    /// What one side held, for the reader to judge the comparison.
    package struct Side: Codable, Sendable {
        package var path: String
        package var executable: String
        package var runs: Int
        /// The runs compared: those that reached ready().
        package var completed: Int
        /// "spawn-env", "proc-stat", or "mixed".
        package var startSource: String
        /// How early a recorded start may be, worst over the runs, in ms.
        package var startPrecisionMs: Double
        /// The same in words.
        package var startPrecision: String
    }

    package struct Row: Codable, Sendable {
        package var name: String
        package var kind: Measure.Kind
        package var baseRuns: Int
        package var newRuns: Int
        package var baseMedianMs: Double?
        package var newMedianMs: Double?
        /// NEW − BASE, of the medians.
        package var deltaMs: Double?
        /// `deltaMs` as a percentage of BASE's median.
        package var deltaPercent: Double?
        /// Two-sided Mann–Whitney p-value of this row alone.
        package var p: Double?
        /// `p` after Holm's adjustment over every tested row: the table's
        /// verdicts use it, so that looking at many rows does not multiply
        /// false alarms.
        package var adjustedP: Double?
        package var test: MannWhitneyTest.Method?
        package var verdict: Verdict
    }

    package enum Verdict: String, Codable, Sendable {
        case slower
        case faster
        /// Not significant: within noise.
        case unchanged = "no change"
        case onlyInBase = "only in BASE"
        case onlyInNew = "only in NEW"
        /// Too few runs have this measure for any difference to be significant.
        case tooFewRuns = "too few runs"
    }

    /// The significance level used unless another is asked for.
    package static let defaultAlpha = 0.05

    /// Checks that the two sides can be compared and compares them. Throws
    /// when a side has too few completed runs for any difference to be
    /// significant, or (unless `allowMixedStart`) when the sides' process
    /// starts come from different sources.
    package init(base: RunSet, new: RunSet, alpha: Double = Comparison.defaultAlpha, allowMixedStart: Bool = false) throws {
        self.alpha = alpha
        self.base = Self.side(base)
        self.new = Self.side(new)
        for (name, set) in [("BASE", base), ("NEW", new)] {
            let sources = set.startSources
            if sources.count > 1 && !allowMixedStart {
                let list = sources.sorted { $0.key < $1.key }.map { "\($0.value) from \($0.key)" }.joined(separator: ", ")
                throw ComparisonError(
                    "\(name) \(set.path) mixes process-start sources (\(list)): starts from /proc/self/stat are up to one clock tick early, exact ones are not. Record every run with `coldstart run`, or pass --allow-mixed-start")
            }
        }
        if self.base.startSource != self.new.startSource && !allowMixedStart {
            throw ComparisonError(
                "the sides' process starts come from different sources: BASE \(self.base.startSource) (\(self.base.startPrecision)), NEW \(self.new.startSource) (\(self.new.startPrecision)); the first phase and the whole launch would differ by up to \(String(format: "%.0f", max(self.base.startPrecisionMs, self.new.startPrecisionMs))) ms for that reason alone. Record both sides with `coldstart run` (exact starts), or pass --allow-mixed-start to compare anyway")
        }
        for (name, set) in [("BASE", base), ("NEW", new)] {
            let completed = set.completed.count
            if completed == 0 {
                throw ComparisonError("\(name) \(set.path) has no run that reached ready() (\(set.runs.count) timeline\(set.runs.count == 1 ? "" : "s")); nothing to compare")
            }
            if completed == 1 {
                throw ComparisonError(
                    "\(name) \(set.path) has a single completed run: one launch cannot show whether a difference is beyond run-to-run noise. Record several, e.g. `coldstart run -n 10 --out DIR -- APP`, and compare the directories")
            }
        }
        let (m, n) = (base.completed.count, new.completed.count)
        if MannWhitneyTest.smallestPossibleP(m, n) >= alpha {
            throw ComparisonError(
                "too few completed runs: with \(m) (BASE) against \(n) (NEW) no difference can be significant at α = \(alpha). Record at least 5 per side (10 recommended)")
        }

        let baseMeasures = base.measures, newMeasures = new.measures
        var rows: [Row] = []
        for measure in baseMeasures {
            rows.append(Self.row(measure, newMeasures.first { $0.name == measure.name && $0.kind == measure.kind }, alpha: alpha))
        }
        for measure in newMeasures where !baseMeasures.contains(where: { $0.name == measure.name && $0.kind == measure.kind }) {
            rows.append(Self.row(nil, measure, alpha: alpha))
        }
        let tested = rows.indices.filter { rows[$0].p != nil }
        let adjusted = Statistics.holmAdjusted(tested.map { rows[$0].p! })
        for (index, p) in zip(tested, adjusted) {
            rows[index].adjustedP = p
            if p < alpha { rows[index].verdict = rows[index].deltaMs! > 0 ? .slower : .faster }
        }
        // Keep the kinds together: launch, phases, spans.
        let kindOrder: [Measure.Kind] = [.launch, .phase, .span]
        self.rows = kindOrder.flatMap { kind in rows.filter { $0.kind == kind } }
    }

    private static func side(_ set: RunSet) -> Side {
        let sources = set.startSources
        let source = sources.count == 1 ? sources.keys.first! : "mixed"
        let precisionMs = LaunchReport.milliseconds(set.startPrecisionNs)
        return Side(
            path: set.path, executable: set.executable, runs: set.runs.count, completed: set.completed.count,
            startSource: source, startPrecisionMs: precisionMs,
            startPrecision: LaunchReport.Summary.describePrecision(source: source, precisionMs: precisionMs))
    }

    private static func row(_ base: Measure?, _ new: Measure?, alpha: Double) -> Row {
        let measure = (base ?? new)!
        var row = Row(
            name: measure.name, kind: measure.kind, baseRuns: base?.values.count ?? 0, newRuns: new?.values.count ?? 0,
            baseMedianMs: base.flatMap { Statistics.median($0.values) },
            newMedianMs: new.flatMap { Statistics.median($0.values) },
            verdict: base == nil ? .onlyInNew : new == nil ? .onlyInBase : .unchanged)
        guard let base, let new, let b = row.baseMedianMs, let n = row.newMedianMs else { return row }
        row.deltaMs = n - b
        row.deltaPercent = b > 0 ? (n - b) / b * 100 : nil
        guard MannWhitneyTest.smallestPossibleP(base.values.count, new.values.count) < alpha,
              let test = MannWhitneyTest(base.values, new.values)
        else {
            row.verdict = .tooFewRuns
            return row
        }
        row.p = test.p
        row.test = test.method
        return row
    }

    /// The whole launch's row.
    package var launch: Row { rows.first { $0.kind == .launch }! }

    /// Rows whose difference is significant after adjustment.
    package var significantlySlower: [Row] { rows.filter { $0.verdict == .slower } }
}

extension Comparison {
    /// The answer to `--fail-if-slower PCT [--phase NAME]`.
    package struct Gate: Codable, Sendable {
        package var row: String
        package var thresholdPercent: Double
        package var deltaPercent: Double?
        package var p: Double?
        package var alpha: Double
        /// Slower by more than the threshold and significant.
        package var failed: Bool
        /// One line saying why it passed or failed.
        package var explanation: String
    }

    /// Fails when the whole launch, or the phase or span `name`, is slower by
    /// more than `percent` and the difference is significant. The gate tests
    /// one measure chosen in advance, so it uses that row's own p-value, not
    /// the Holm-adjusted one.
    package func gate(slowerThanPercent percent: Double, measure name: String? = nil) throws -> Gate {
        let row: Row
        if let name {
            let matches = rows.filter { $0.name == name && $0.kind != .launch }
            guard let found = matches.first(where: { $0.kind == .phase }) ?? matches.first else {
                let names = rows.filter { $0.kind != .launch }.map { "'\($0.name)'" }.joined(separator: ", ")
                throw ComparisonError("no phase or span named '\(name)'; the runs have \(names)")
            }
            row = found
        } else {
            row = launch
        }
        var gate = Gate(row: row.name, thresholdPercent: percent, deltaPercent: row.deltaPercent, p: row.p, alpha: alpha, failed: false, explanation: "")
        let fmtPct = { (v: Double) in String(format: "%+.1f%%", v) }
        guard let delta = row.deltaPercent, let p = row.p else {
            gate.explanation = "'\(row.name)' cannot be tested (\(row.verdict.rawValue)): not failing"
            return gate
        }
        let significant = p < alpha
        let evidence = "\(Self.phrase(p: p)), α = \(String(format: "%g", alpha))"
        gate.failed = delta > percent && significant
        if gate.failed {
            gate.explanation = "'\(row.name)' is \(fmtPct(delta)) slower, more than \(String(format: "%g", percent))%, and significant (\(evidence)): FAIL"
        } else if delta > percent {
            gate.explanation = "'\(row.name)' changed \(fmtPct(delta)), but that is within noise (\(evidence)): pass"
        } else {
            gate.explanation = "'\(row.name)' changed \(fmtPct(delta)) (\(evidence)), not more than +\(String(format: "%g", percent))%: pass"
        }
        return gate
    }

    /// A p-value with as many digits as it needs, for a table column.
    package static func format(p: Double) -> String {
        p < 0.0001 ? "<0.0001" : p < 0.01 ? String(format: "%.4f", p) : String(format: "%.2f", p)
    }

    /// "p = 0.0123" or "p < 0.0001", for a sentence.
    package static func phrase(p: Double) -> String {
        p < 0.0001 ? "p < 0.0001" : "p = \(format(p: p))"
    }
}

/// Why two sets of runs cannot be compared (one line).
package struct ComparisonError: Error, CustomStringConvertible, Sendable {
    package var description: String
    init(_ description: String) { self.description = description }
}
