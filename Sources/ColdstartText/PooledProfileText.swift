import ColdstartAnalysis
import Foundation

extension PooledProfileReport {
    /// The pooled profile as text: how many launches and samples it rests
    /// on, then samples per phase, functions by self and total time, slow
    /// initializers, lazy globals and threads; tables narrowed to `width`
    /// when given. `full: false` is the first look: the phases and the top
    /// five functions by self time.
    package func lines(width: Int?, full: Bool = true) -> [String] {
        var lines = ["Pooled profile: \(Self.count(samples)) from \(launches) sampled launch\(launches == 1 ? "" : "es")"
            + " (\(Self.format(samplesPerLaunch, decimals: 1)) per launch)"
            + (unsampledLaunches > 0 ? "; \(unsampledLaunches) launch\(unsampledLaunches == 1 ? "" : "es") not sampled, left out" : "")]
        guard launches > 0 else { return lines }
        let rates = effectiveHz.map {
            $0.min == $0.max ? "\(Self.format($0.min, decimals: 1)) Hz" : "\(Self.format($0.min, decimals: 1))–\(Self.format($0.max, decimals: 1)) Hz"
        } ?? ""
        lines += [
            "  clock: \(clocks.joined(separator: ", ")) at \(rates) effective",
            "  ms/launch = pooled samples × sampling period ÷ \(launches) launch\(launches == 1 ? "" : "es") (CPU time of the sampling clock)",
            "  precision: \(precision.rule); 'in': how many launches it was seen in",
        ]
        lines += warnings.map { "  warning: \($0)" }
        if let advice = precision.advice { lines.append("  " + advice) }

        var phaseTable = Table(columns: [.init("phase", .left), .init("samples", .right), .init("ms/launch", .right), .init("%", .right),
                                         .init("CPU user+kernel ms/launch", .right), .init("kernel", .right),
                                         .init("Coldstart", .right)])
        for phase in phases {
            phaseTable.add([phase.name, String(phase.samples), Self.format(phase.msPerLaunch, decimals: 2), Self.format(phase.percent, decimals: 1),
                            phase.kernel.map {
                                Self.format($0.userMs, decimals: 2) + "+" + Self.format($0.kernelMs, decimals: 2)
                                    + ($0.exitMs.map { " +" + Self.format($0, decimals: 2) + " exit" } ?? "") + population(phase)
                            } ?? "–",
                            phase.kernel.map { Self.format($0.kernelPercent, decimals: 0) + "%" } ?? "–",
                            phase.kernel.map { Self.format($0.coldstartMs ?? 0, decimals: 2) } ?? "–"])
        }
        lines += ["", "Samples by phase (each launch's own phases, ms over every launch; CPU: user samples × period + the kernel's "
            + "(+ the kernel's exit after the last sample), over the launches with both, named when fewer; Coldstart: ms/launch of its own threads' "
            + "and launcher's CPU)"]
            + phaseTable.render(width: width)
        guard full else {
            return lines + [""] + functionLines("Top functions by self time", Array(bySelf.prefix(5)), selfFirst: true, width: width)
        }
        lines += [""] + functionLines("Top functions by self time", bySelf, selfFirst: true, width: width)
        lines += [""] + functionLines("Top functions by total time", byTotal, selfFirst: false, width: width)

        lines += ["", "Slow initializers: \(Self.count(initializers.samples)) inside library or program initializers, "
            + "\(Self.format(initializers.msPerLaunch, decimals: 2)) ms/launch (in \(initializers.launches) of \(launches) launches)"]
        if !initializers.libraries.isEmpty {
            var table = Table(columns: [.init("module", .left), .init("samples", .right), .init("ms/launch", .right), .init("%", .right),
                                        .init("in", .right, droppable: true)])
            for library in initializers.libraries {
                table.add([library.module + (library.isExecutable ? " (the program)" : ""), String(library.samples),
                           Self.format(library.msPerLaunch, decimals: 2), Self.format(library.percent, decimals: 1), String(library.launches)])
            }
            lines += table.render(width: width)
        }
        lines += [""] + rowLines("Slow lazy globals", lazyGlobals, column: "global", width: width)
        return lines + [""] + rowLines("Threads (by name: a launch's tids are its own)", threads, column: "thread", width: width)
    }

    /// A table of pooled rows (lazy globals, threads) under `title`.
    private func rowLines(_ title: String, _ rows: [Row], column: String, width: Int?) -> [String] {
        guard !rows.isEmpty else { return [title, "  none sampled"] }
        var table = Table(columns: [.init(column, .left), .init("samples", .right), .init("ms/launch", .right), .init("%", .right),
                                    .init("in", .right, droppable: true)])
        for row in rows {
            table.add([row.name, String(row.samples), Self.format(row.msPerLaunch, decimals: 2), Self.format(row.percent, decimals: 1),
                       String(row.launches)])
        }
        return [title] + table.render(width: width)
    }

    /// " (18 of 36 launches)" when a phase's CPU split rests on fewer
    /// launches than its ms/launch: one row, one population, said.
    private func population(_ phase: Phase) -> String {
        guard let split = phase.kernelLaunches, split != launches else { return "" }
        return " (\(split) of \(launches) launches)"
    }

    private func functionLines(_ title: String, _ rows: [Function], selfFirst: Bool, width: Int?) -> [String] {
        let first = selfFirst ? "self" : "total", second = selfFirst ? "total" : "self"
        var table = Table(columns: [
            .init("\(first) samples", .right), .init("\(first) ms/launch", .right), .init("%", .right),
            .init("\(second) ms/launch", .right, droppable: true), .init("in", .right, droppable: true),
            .init("function", .left, limit: 110), .init("module", .left, droppable: true),
        ], flexible: 5)
        for row in rows {
            let (samples, ms, percent, other) = selfFirst
                ? (row.selfSamples, row.selfMsPerLaunch, row.selfPercent, row.totalMsPerLaunch)
                : (row.totalSamples, row.totalMsPerLaunch, row.totalPercent, row.selfMsPerLaunch)
            table.add([String(samples), Self.format(ms, decimals: 2), Self.format(percent, decimals: 1),
                       Self.format(other, decimals: 2), String(row.launches), LaunchReport.functionName(row.name), row.module])
        }
        return [title] + (rows.isEmpty ? ["  none"] : table.render(width: width))
    }

    private static func count(_ samples: Int) -> String { ProfileReport.count(samples) }

    private static func format(_ value: Double, decimals: Int) -> String { Figure.format(value, decimals: decimals) }
}

extension PooledLaunches {
    /// The text `coldstart report DIR` prints: as `report FILE`'s, the
    /// findings first, then the evidence; `full: false` is the first look in
    /// at most `Finding.defaultWidth` columns, with one line naming what
    /// `--full` adds.
    package func text(style: TextStyle = TextStyle(), full: Bool = true) -> String {
        let width = full ? style.width : min(style.width ?? Finding.defaultWidth, Finding.defaultWidth)
        let launches = profile.launches
        var lines = ["\(directory): \(launches) launch\(launches == 1 ? "" : "es") pooled"
            + (executable.map { " (\($0))" } ?? "") + " of \(filesRead) timeline\(filesRead == 1 ? "" : "s") read, "
            + "\(skippedCount) file\(skippedCount == 1 ? "" : "s") skipped",
            "  every figure is per launch (the \(launches) launches' sum ÷ \(launches)); a finding's samples and 95% interval are the pool's"]
        lines += [""] + Finding.lines(findings, width: width, launch: "the mean launch's")
        lines += [""] + profile.lines(width: width, full: full)
        if full, let runtimeCosts, !runtimeCosts.rows.isEmpty { lines += [""] + runtimeCosts.lines(width: width) }
        if !full {
            lines += ["", "More with --full: functions by total time, initializers, lazy globals, threads, runtime costs."]
        }
        // In a terminal the sentences wrap as the tables are narrowed: to its width.
        if let width = width { lines = Finding.wrapped(lines, width: width) }
        if skippedCount > 0 {
            let more = skippedCount - skipped.count
            lines += ["", "Skipped \(skippedCount) file\(skippedCount == 1 ? "" : "s")" + (more > 0 ? " (the first \(skipped.count) listed)" : "") + ":"]
            lines += skipped.map { "  \($0.file): \($0.reason)" }
        }
        return lines.map { style.colored(LaunchReport.printable($0, limit: .max)) }.joined(separator: "\n") + "\n"
    }
}
