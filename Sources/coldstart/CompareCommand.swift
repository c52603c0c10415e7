import ColdstartAnalysis
import Foundation

/// `coldstart compare BASE NEW`: is NEW's launch slower than BASE's, beyond noise?
enum CompareCommand: Command {
    static let name = "compare"
    static let summary = "Compare two sets of launches: a regression gate for CI"
    static let help = """
    Usage: coldstart compare BASE NEW [--fail-if-slower PCT [--phase NAME]]
                             [--alpha A] [--allow-mixed-start] [--json]

    BASE and NEW are each a timeline file or a directory of them (what
    `coldstart run --out DIR` writes), one build of the app per side. For the
    whole launch, each phase and each span: both medians over the launches that
    reached ready(), the difference (ms and %), and a two-sided Mann–Whitney U
    test (exact without ties, else the normal approximation with tie
    correction). A row's verdict is "slower" or "faster" only when its p-value,
    Holm-adjusted over all the rows, is below α (0.05); otherwise "no change".

    Options:
      --fail-if-slower PCT  exit 1 when the whole launch (or --phase NAME) is
                            slower by more than PCT percent and that difference
                            is significant (its own p-value below α)
      --phase NAME          the phase or span the gate looks at
      --alpha A             significance level (default 0.05)
      --allow-mixed-start   compare even when the sides' process starts come
                            from different sources (exact vs /proc, 10 ms steps)
      --json                the comparison as JSON
      -h, --help            show this text

    A side needs at least 2 completed launches, and enough for a difference to
    be able to reach significance (4 against 4 at α = 0.05); 10 each is a good
    start. Exit status: 0, or 1 when the gate fails or the input is unusable.
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let threshold: Double? = try arguments.number("--fail-if-slower", in: 0...10_000.0)
        let phase = try arguments.option("--phase")
        let alpha: Double = try arguments.number("--alpha", in: 0.000_001...0.5) ?? Comparison.defaultAlpha
        let allowMixedStart = arguments.flag("--allow-mixed-start")
        let json = arguments.flag("--json")
        let basePath = try arguments.positional("BASE (a timeline file or a directory of runs)")
        let newPath = try arguments.positional("NEW (a timeline file or a directory of runs)")
        try arguments.finish()
        if phase != nil && threshold == nil { throw UsageError(message: "--phase names what --fail-if-slower gates; give --fail-if-slower PCT too") }

        let comparison: Comparison
        let gate: Comparison.Gate?
        do {
            comparison = try Comparison(
                base: try RunSet(path: basePath), new: try RunSet(path: newPath), alpha: alpha, allowMixedStart: allowMixedStart)
            gate = try threshold.map { try comparison.gate(slowerThanPercent: $0, measure: phase) }
        } catch let error as RunSetError {
            throw CommandError(message: error.description)
        } catch let error as ComparisonError {
            throw CommandError(message: error.description)
        }
        if json {
            print(try jsonText(comparison, gate: gate))
        } else {
            print(text(comparison, gate: gate))
        }
        return gate?.failed == true ? ExitStatus.failure : ExitStatus.success
    }

    /// Sampled stacks are compared once a profile analysis exists; until
    /// then the output says so rather than leaving it out silently.
    static let functionsNote = "not compared: this coldstart has no profile analysis of sampled stacks yet (phases and spans only)"

    static func text(_ comparison: Comparison, gate: Comparison.Gate?) -> String {
        var lines = ["coldstart compare"]
        for (label, side) in [("BASE", comparison.base), ("NEW ", comparison.new)] {
            let left = side.runs - side.completed
            let runs = "\(side.runs) timeline\(side.runs == 1 ? "" : "s"), \(side.completed) completed"
                + (left > 0 ? " (\(left) did not reach ready(): left out)" : "")
            lines.append("  \(label)  \(side.path): \(runs)")
            lines.append("        \(side.executable); start: \(side.startPrecision)")
        }
        let tested = comparison.rows.filter { $0.p != nil }.count
        lines.append("times: CLOCK_MONOTONIC, medians in ms; Δ = NEW − BASE. p: two-sided Mann–Whitney U; verdicts at α = \(String(format: "%g", comparison.alpha)) on p Holm-adjusted over the \(tested) tested rows")
        if comparison.base.startSource != comparison.new.startSource {
            lines.append("warning: the sides' starts come from different sources (--allow-mixed-start): the first phase and the whole launch carry up to \(String(format: "%.0f", max(comparison.base.startPrecisionMs, comparison.new.startPrecisionMs))) ms of that difference")
        }
        lines.append("")
        let nameWidth = max(24, comparison.rows.map { $0.name.count + ($0.kind == .launch ? 0 : 2) }.max() ?? 0)
        func pad(_ s: String, _ width: Int) -> String { s.count >= width ? s : s + String(repeating: " ", count: width - s.count) }
        func right(_ s: String, _ width: Int) -> String { s.count >= width ? s : String(repeating: " ", count: width - s.count) + s }
        func ms(_ v: Double?) -> String { v.map { String(format: "%.2f", $0) } ?? "–" }
        lines.append(pad("", nameWidth) + right("BASE", 10) + right("NEW", 10) + right("Δ ms", 10) + right("Δ %", 9) + right("p", 9) + right("p(Holm)", 9) + "  verdict")
        var lastKind: Measure.Kind?
        for row in comparison.rows {
            if row.kind != lastKind && row.kind != .launch { lines.append(row.kind == .phase ? "phases" : "spans (total per launch)") }
            lastKind = row.kind
            let name = row.kind == .launch ? row.name : "  " + row.name
            var line = pad(name, nameWidth) + right(ms(row.baseMedianMs), 10) + right(ms(row.newMedianMs), 10)
            line += right(row.deltaMs.map { String(format: "%+.2f", $0) } ?? "–", 10)
            line += right(row.deltaPercent.map { String(format: "%+.1f%%", $0) } ?? "–", 9)
            line += right(row.p.map(Comparison.format(p:)) ?? "–", 9) + right(row.adjustedP.map(Comparison.format(p:)) ?? "–", 9)
            line += "  " + row.verdict.rawValue
            if row.baseRuns < comparison.base.completed || row.newRuns < comparison.new.completed {
                line += " (in \(row.baseRuns)/\(row.newRuns) launches)"
            }
            lines.append(line)
        }
        lines.append("functions: \(functionsNote)")
        lines.append("")
        lines.append("verdict: \(verdictText(comparison))")
        if let gate {
            let scope = gate.row == Measure.launchName ? "" : " --phase '\(gate.row)'"
            lines.append("gate (--fail-if-slower \(String(format: "%g", gate.thresholdPercent))\(scope)): \(gate.explanation)")
        }
        return lines.joined(separator: "\n")
    }

    static func verdictText(_ comparison: Comparison) -> String {
        let launch = comparison.launch
        let delta = String(format: "%+.2f ms (%+.1f%%)", launch.deltaMs ?? 0, launch.deltaPercent ?? 0)
        let p = launch.p.map(Comparison.phrase(p:)) ?? "p: –"
        var text: String
        switch launch.verdict {
        case .slower: text = "the launch is slower: \(delta), significant (\(p))."
        case .faster: text = "the launch is faster: \(delta), significant (\(p))."
        default: text = "no significant change in the whole launch (\(delta), \(p))."
        }
        let others = comparison.rows.filter { $0.kind != .launch && ($0.verdict == .slower || $0.verdict == .faster) }
        if !others.isEmpty {
            text += " Significant: " + others.map {
                "'\($0.name)' \($0.verdict.rawValue) \(String(format: "%+.2f ms (%+.1f%%)", $0.deltaMs ?? 0, $0.deltaPercent ?? 0))"
            }.joined(separator: ", ") + "."
        }
        return text
    }

    private struct JSONComparison: Encodable {
        var base: Comparison.Side
        var new: Comparison.Side
        var clock = "CLOCK_MONOTONIC"
        var unit = "ms"
        var test = "Mann-Whitney U, two-sided"
        var adjustment = "Holm"
        var alpha: Double
        var rows: [Comparison.Row]
        var functions: Functions
        /// "slower", "faster" or "no change": the whole launch's row.
        var verdict: String
        var significantlySlower: [String]
        var gate: Comparison.Gate?
    }

    private struct Functions: Encodable {
        var compared: Bool
        var reason: String
    }

    static func jsonText(_ comparison: Comparison, gate: Comparison.Gate?) throws -> String {
        let value = JSONComparison(
            base: comparison.base, new: comparison.new, alpha: comparison.alpha, rows: comparison.rows,
            functions: Functions(compared: false, reason: functionsNote), verdict: comparison.launch.verdict.rawValue,
            significantlySlower: comparison.significantlySlower.map(\.name), gate: gate)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
