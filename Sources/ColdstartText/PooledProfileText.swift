import ColdstartAnalysis
import Foundation

extension PooledProfileReport {
    /// The pooled profile as text: how many launches and samples it rests
    /// on, then samples per phase, functions by self and total time, slow
    /// initializers and lazy globals; tables narrowed to `width` when given.
    package func lines(width: Int?) -> [String] {
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
                                         .init("CPU user+kernel ms/launch", .right), .init("kernel", .right)])
        for phase in phases {
            phaseTable.add([phase.name, String(phase.samples), Self.format(phase.msPerLaunch, decimals: 2), Self.format(phase.percent, decimals: 1),
                            phase.kernel.map { Self.format($0.userMs, decimals: 2) + "+" + Self.format($0.kernelMs, decimals: 2) + population(phase) } ?? "–",
                            phase.kernel.map { Self.format($0.kernelPercent, decimals: 0) + "%" } ?? "–"])
        }
        lines += ["", "Samples by phase (each launch's own phases, ms over every launch; CPU: user samples × period + the kernel's, "
            + "over the launches with both, named when fewer)"]
            + phaseTable.render(width: width)
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
        lines += ["", "Slow lazy globals"]
        if lazyGlobals.isEmpty {
            lines.append("  none sampled")
        } else {
            var table = Table(columns: [.init("global", .left), .init("samples", .right), .init("ms/launch", .right), .init("%", .right),
                                       .init("in", .right, droppable: true)])
            for global in lazyGlobals {
                table.add([global.name, String(global.samples), Self.format(global.msPerLaunch, decimals: 2),
                           Self.format(global.percent, decimals: 1), String(global.launches)])
            }
            lines += table.render(width: width)
        }
        return lines
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
    /// The text `coldstart report DIR` prints.
    package func text(style: TextStyle = TextStyle()) -> String {
        var lines = ["\(directory): \(profile.launches) launch\(profile.launches == 1 ? "" : "es") pooled"
            + (executable.map { " (\($0))" } ?? "") + " of \(filesRead) timeline\(filesRead == 1 ? "" : "s") read, "
            + "\(skippedCount) file\(skippedCount == 1 ? "" : "s") skipped"]
        lines += [""] + profile.lines(width: style.width)
        // In a terminal the sentences wrap as the tables are narrowed: to its width.
        if let width = style.width { lines = Finding.wrapped(lines, width: width) }
        if skippedCount > 0 {
            let more = skippedCount - skipped.count
            lines += ["", "Skipped \(skippedCount) file\(skippedCount == 1 ? "" : "s")" + (more > 0 ? " (the first \(skipped.count) listed)" : "") + ":"]
            lines += skipped.map { "  \($0.file): \($0.reason)" }
        }
        return lines.map { style.colored(LaunchReport.printable($0, limit: .max)) }.joined(separator: "\n") + "\n"
    }
}
