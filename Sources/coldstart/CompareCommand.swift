import ColdstartAnalysis
import ColdstartExport
import ColdstartText
import Foundation

/// `coldstart compare BASE NEW`: is NEW's launch slower than BASE's, beyond noise?
enum CompareCommand: Command {
    static let name = "compare"
    static let summary = "Compare two sets of launches: a regression gate for CI"
    static let help = """
    Usage: coldstart compare BASE NEW [--fail-if-slower PCT [--min-effect-ms MS]
                             [--phase NAME]] [--alpha A] [--functions] [--json]

    BASE and NEW are each a timeline file or a directory of them (what
    `coldstart run --out DIR` writes), one build of the app per side. For the
    whole launch, each phase and each span: both medians over the completed
    launches (ready(), or a normal exit for a tool that never calls it), the
    difference (ms and %), and a two-sided Mann–Whitney U test (exact without
    ties, else the normal approximation with tie correction). A row's verdict
    is "slower" or "faster" only when its p-value, Holm-adjusted over all the
    rows, is below α (0.05); otherwise "no change".

    Options:
      --fail-if-slower PCT  the gate: exit 1 when the whole launch or any phase
                            or span both sides have is slower by more than PCT
                            percent and at least --min-effect-ms, and that is
                            significant (Holm-adjusted p below α); says which
      --min-effect-ms MS    the least slow-down in ms that can fail the gate
                            (default 1), so short phases do not flap
      --phase NAME          gate on this phase or span alone, with its own
                            p-value: its name as listed, with -> for →
                            ('decoded -> warmed'), or the mark ending the phase
                            ('warmed')
      --alpha A             significance level (default 0.05)
      --functions           also the 10 functions whose sampled self time per
                            launch moved most, with sample counts (reads each
                            sampled launch's profile; informational, not gated)
      --json                the comparison as JSON
      -h, --help            show this text

    A side needs at least 2 completed launches, and enough for a difference to
    be able to reach significance (4 against 4 at α = 0.05); 10 each is a good
    start. Sides whose process starts come from different sources (exact
    under `coldstart run`, /proc's 10 ms ticks otherwise) are compared; the
    text says how much of a difference that can make.

    Exit status: 0 no regression (or no gate), 1 the gate failed, 2 cannot
    compare (a side unreadable, mixed programs, too few completed launches;
    the reason on stderr).
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let threshold: Double? = try arguments.number("--fail-if-slower", in: 0...10_000.0)
        let minimumEffect: Double? = try arguments.number("--min-effect-ms", in: 0...1e9)
        let phase = try arguments.option("--phase")
        let alpha: Double = try arguments.number("--alpha", in: 0.000_001...0.5) ?? Comparison.defaultAlpha
        let functions = arguments.flag("--functions")
        let json = arguments.flag("--json")
        let basePath = try arguments.positional("BASE (a timeline file or a directory of runs)")
        let newPath = try arguments.positional("NEW (a timeline file or a directory of runs)")
        try arguments.finish()
        if threshold == nil {
            if phase != nil { throw UsageError(message: "--phase names what --fail-if-slower gates; give --fail-if-slower PCT too") }
            if minimumEffect != nil { throw UsageError(message: "--min-effect-ms is part of the --fail-if-slower gate; give --fail-if-slower PCT too") }
        }

        let comparison: Comparison
        let gate: Comparison.Gate?
        var movers: FunctionComparison?
        do {
            let base = try RunSet(path: basePath, exportSuffixes: Exporters.suffixes),
                new = try RunSet(path: newPath, exportSuffixes: Exporters.suffixes)
            comparison = try Comparison(base: base, new: new, alpha: alpha)
            if functions { movers = try FunctionComparison(base: base, new: new) }
            gate = try threshold.map {
                try comparison.gate(slowerThanPercent: $0, minimumEffectMs: minimumEffect ?? Comparison.defaultMinimumEffectMs, measure: phase)
            }
        } catch let error as RunSetError {
            throw CommandError(message: error.description, status: ExitStatus.usage)
        } catch let error as ComparisonError {
            throw CommandError(message: error.description, status: ExitStatus.usage)
        } catch let error as TimelineErrorDescribing {
            throw CommandError(message: error.lineDescription, status: ExitStatus.usage)
        }
        if json {
            try StandardOutput.print(try jsonText(comparison, gate: gate, functions: movers))
        } else {
            try StandardOutput.print(text(comparison, gate: gate, functions: movers))
        }
        return gate?.failed == true ? ExitStatus.failure : ExitStatus.success
    }

    static func text(_ comparison: Comparison, gate: Comparison.Gate?, functions: FunctionComparison? = nil) -> String {
        var lines = ["coldstart compare"]
        for (label, side) in [("BASE", comparison.base), ("NEW ", comparison.new)] {
            let left = side.runs - side.completed
            let runs = "\(side.runs) timeline\(side.runs == 1 ? "" : "s"), \(side.completed) completed"
                + (left > 0 ? " (\(left) did not complete: left out)" : "")
            lines.append("  \(label)  \(side.path): \(runs)")
            lines.append("        \(side.executable); start: \(side.startPrecision)")
        }
        let tested = comparison.rows.filter { $0.p != nil }.count
        lines.append("times: CLOCK_MONOTONIC, medians in ms; Δ = NEW − BASE. p: two-sided Mann–Whitney U; verdicts at α = \(String(format: "%g", comparison.alpha)) on p Holm-adjusted over the \(tested) tested rows")
        if comparison.base.startSource != comparison.new.startSource {
            lines.append("note: the sides' starts come from different sources (BASE \(comparison.base.startSource), NEW \(comparison.new.startSource)): the first phase and the whole launch carry up to \(String(format: "%.0f", max(comparison.base.startPrecisionMs, comparison.new.startPrecisionMs))) ms of that difference")
        }
        lines.append("")
        var table = Table(columns: [
            .init("", .left), .init("BASE", .right), .init("NEW", .right), .init("Δ ms", .right), .init("Δ %", .right),
            .init("p", .right), .init("p(Holm)", .right), .init("verdict", .left),
        ])
        func ms(_ v: Double?) -> String { v.map { String(format: "%.2f", $0) } ?? "–" }
        var lastKind: Measure.Kind?
        for row in comparison.rows {
            if row.kind != lastKind && row.kind != .launch {
                table.add([row.kind == .phase ? "phases" : "spans (total per launch)"] + Array(repeating: "", count: 7))
            }
            lastKind = row.kind
            var verdict = row.verdict.rawValue
            if let presence = presence(row, comparison) { verdict += " (\(presence))" }
            if gate?.failing.contains(row.name) == true { verdict += "  ← fails the gate" }
            table.add([
                row.kind == .launch ? row.name : "  " + row.name, ms(row.baseMedianMs), ms(row.newMedianMs),
                row.deltaMs.map { String(format: "%+.2f", $0) } ?? "–", row.deltaPercent.map { String(format: "%+.1f%%", $0) } ?? "–",
                row.p.map(Comparison.format(p:)) ?? "–", row.adjustedP.map(Comparison.format(p:)) ?? "–", verdict,
            ])
        }
        // In a terminal the sentences wrap to its width; the table keeps its rows whole.
        let width = Terminal.style().width
        func fitted(_ sentences: [String]) -> [String] { width.map { Finding.wrapped(sentences, width: $0) } ?? sentences }
        lines = fitted(lines)
        // The table's own two-space margin is not wanted here: rows start at the left edge.
        lines += table.render().map { String($0.dropFirst(2)) }
        if let functions { lines += ["", "functions: " + functionsHeading(functions)] + functionLines(functions) }
        lines.append("")
        var verdict = ["verdict: \(verdictText(comparison))"]
        if let gate {
            let scope = gate.checked.count == 1 && gate.adjustment == "none" ? " --phase '\(gate.checked[0])'" : ""
            verdict.append("gate (--fail-if-slower \(String(format: "%g", gate.thresholdPercent)) --min-effect-ms \(String(format: "%g", gate.minimumEffectMs))\(scope)): \(gate.explanation)")
        }
        lines += fitted(verdict)
        return lines.joined(separator: "\n")
    }

    static func functionsHeading(_ functions: FunctionComparison) -> String {
        "the \(functions.rows.count) largest changes of median self time per launch (sampled CPU time, ms; "
            + "\(functions.baseSampledRuns) BASE and \(functions.newSampledRuns) NEW sampled launches; p unadjusted, not gated)"
    }

    static func functionLines(_ functions: FunctionComparison) -> [String] {
        var table = Table(columns: [
            .init("BASE", .right), .init("NEW", .right), .init("Δ ms", .right), .init("samples B/N", .right), .init("p", .right),
            .init("function", .left), .init("module", .left),
        ])
        for row in functions.rows {
            table.add([
                String(format: "%.2f", row.baseMedianMs), String(format: "%.2f", row.newMedianMs), String(format: "%+.2f", row.deltaMs),
                "\(row.baseSamples)/\(row.newSamples)", row.p.map(Comparison.format(p:)) ?? "–", row.function, row.module,
            ])
        }
        return table.render(width: Terminal.style().width)
    }

    /// In how many launches of each side a row's measure appears, when not
    /// in all of them: "NEW: in 3 of 10 launches".
    static func presence(_ row: Comparison.Row, _ comparison: Comparison) -> String? {
        var parts: [String] = []
        if row.verdict != .onlyInNew, row.baseRuns < comparison.base.completed {
            parts.append("BASE: in \(row.baseRuns) of \(comparison.base.completed) launches")
        }
        if row.verdict != .onlyInBase, row.newRuns < comparison.new.completed {
            parts.append("NEW: in \(row.newRuns) of \(comparison.new.completed) launches")
        }
        if parts.isEmpty, row.verdict == .onlyInNew || row.verdict == .onlyInBase {
            let (count, total) = row.verdict == .onlyInNew ? (row.newRuns, comparison.new.completed) : (row.baseRuns, comparison.base.completed)
            parts.append("in \(count) of \(total) launches")
        }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
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
        /// With --functions.
        var functions: FunctionComparison?
        /// "slower", "faster" or "no change": the whole launch's row.
        var verdict: String
        var significantlySlower: [String]
        var gate: Comparison.Gate?
    }

    static func jsonText(_ comparison: Comparison, gate: Comparison.Gate?, functions: FunctionComparison? = nil) throws -> String {
        let value = JSONComparison(
            base: comparison.base, new: comparison.new, alpha: comparison.alpha, rows: comparison.rows, functions: functions,
            verdict: comparison.launch.verdict.rawValue,
            significantlySlower: comparison.significantlySlower.map(\.name), gate: gate)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
