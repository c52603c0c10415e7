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
        /// The runs compared: those that completed (ready(), or a normal
        /// exit for a tool that never calls it).
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
    /// significant. Sides whose process starts come from different sources
    /// are compared all the same (`Side.startPrecision` says how far each
    /// may be off; the text says what the difference can hold).
    package init(base: RunSet, new: RunSet, alpha: Double = Comparison.defaultAlpha) throws {
        self.alpha = alpha
        self.base = Self.side(base)
        self.new = Self.side(new)
        for (name, set) in [("BASE", base), ("NEW", new)] {
            let completed = set.completed.count
            if completed == 0 {
                throw ComparisonError("\(name) \(set.path) has no completed launch (none reached ready() or exited normally; \(set.runs.count) timeline\(set.runs.count == 1 ? "" : "s")); nothing to compare")
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
            rows.append(Self.row(measure, newMeasures.first { Self.same($0, measure) }, alpha: alpha))
        }
        for measure in newMeasures where !baseMeasures.contains(where: { Self.same($0, measure) }) {
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

    /// The same quantity on both sides. The whole launch is one row even
    /// when one side's launches end at ready() and the other's at exit.
    private static func same(_ a: Measure, _ b: Measure) -> Bool {
        a.kind == b.kind && (a.kind == .launch || a.name == b.name)
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
        /// The rows checked: every tested row (the whole launch, and each
        /// phase and span both sides have), or the one `--phase` named.
        package var checked: [String]
        package var thresholdPercent: Double
        /// A row fails only when it is slower by at least this many ms too,
        /// so that a short phase does not fail on a fraction of a millisecond.
        package var minimumEffectMs: Double
        package var alpha: Double
        /// "Holm" when many rows were checked, "none" for one row named in advance.
        package var adjustment: String
        /// Slower by more than the threshold and the minimum effect, and significant.
        package var failed: Bool
        /// The rows that failed, worst (largest Δ ms) first.
        package var failing: [String]
        /// Why it passed or failed, naming the rows that decided it.
        package var explanation: String
    }

    /// The default of `--min-effect-ms`.
    package static let defaultMinimumEffectMs = 1.0

    /// Checks every tested row (or only the phase or span `name`): a row
    /// fails when NEW is slower by more than `percent` of BASE's median and by
    /// at least `minimumEffectMs`, and the difference is significant. With
    /// many rows their Holm-adjusted p-values are used, so that checking
    /// every phase does not multiply false alarms; one row chosen in advance
    /// uses its own p-value.
    package func gate(slowerThanPercent percent: Double, minimumEffectMs: Double = Comparison.defaultMinimumEffectMs, measure name: String? = nil) throws -> Gate {
        let candidates: [Row]
        if let name {
            candidates = [try row(named: name)]
        } else {
            candidates = rows.filter { $0.p != nil }
        }
        let single = name != nil
        var gate = Gate(
            checked: candidates.map(\.name), thresholdPercent: percent, minimumEffectMs: minimumEffectMs, alpha: alpha,
            adjustment: single ? "none" : "Holm", failed: false, failing: [], explanation: "")
        let threshold = "+\(String(format: "%g", percent))% and +\(String(format: "%g", minimumEffectMs)) ms"
        if single, let row = candidates.first, row.p == nil {
            gate.explanation = "'\(row.name)' cannot be tested (\(row.verdict.rawValue)): not failing"
            return gate
        }
        func p(_ row: Row) -> Double { (single ? row.p : row.adjustedP) ?? 1 }
        let beyond = candidates.filter { ($0.deltaPercent ?? 0) > percent && ($0.deltaMs ?? 0) >= minimumEffectMs }
        let failing = beyond.filter { p($0) < alpha }.sorted { ($0.deltaMs ?? 0) > ($1.deltaMs ?? 0) }
        gate.failing = failing.map(\.name)
        gate.failed = !failing.isEmpty
        let pName = single ? "p" : "p(Holm)"
        func change(_ row: Row) -> String {
            "'\(row.name)' \(String(format: "%+.2f ms (%+.1f%%)", row.deltaMs ?? 0, row.deltaPercent ?? 0))"
        }
        func evidence(_ row: Row) -> String { "\(pName) \(Self.phrase(p: p(row)).dropFirst(2))" }
        let level = "α = \(String(format: "%g", alpha))"
        if gate.failed {
            gate.explanation = "FAIL: slower by more than \(threshold), significant (\(level)): "
                + failing.map { "\(change($0)), \(evidence($0))" }.joined(separator: "; ")
        } else if let row = beyond.min(by: { p($0) < p($1) }) {
            let rows = beyond.count == 1 ? "1 row is" : "\(beyond.count) rows are"
            gate.explanation = "pass: \(rows) beyond \(threshold) but within noise; the most significant: \(change(row)), \(evidence(row)) (\(level))"
        } else if single, let row = candidates.first {
            gate.explanation = "pass: \(change(row)) (\(evidence(row))), not beyond \(threshold)"
        } else {
            gate.explanation = "pass: none of the \(candidates.count) rows checked is slower by more than \(threshold)"
        }
        return gate
    }

    /// A phase or span by name. A phase may be named as listed, with an
    /// ASCII arrow (`decoded -> warmed`), or by the mark that ends it
    /// (`warmed`); an exact name wins, phases before spans.
    package func row(named name: String) throws -> Row {
        func normalized(_ text: String) -> String {
            text.replacingOccurrences(of: "->", with: "→").split(separator: " ").joined(separator: " ")
        }
        let wanted = normalized(name)
        let named = rows.filter { $0.kind != .launch }
        if let exact = named.first(where: { $0.kind == .phase && normalized($0.name) == wanted })
            ?? named.first(where: { normalized($0.name) == wanted }) {
            return exact
        }
        if let byMark = named.first(where: { $0.kind == .phase && normalized($0.name).hasSuffix("→ " + wanted) }) {
            return byMark
        }
        let names = named.map { "'\($0.name)'" }.joined(separator: ", ")
        throw ComparisonError("no phase or span named '\(name)' (a phase can also be named by the mark that ends it); the runs have \(names)")
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
