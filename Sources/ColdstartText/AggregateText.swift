import ColdstartAnalysis
import Foundation

extension AggregateSummary {
    /// The text `coldstart aggregate` prints: per group, a table of count and
    /// percentiles per measure, the slowest launches, then the skipped files.
    package func text(style: TextStyle = TextStyle()) -> String {
        var lines: [String] = []
        let groupCount = groups.count
        lines.append("\(launches) launch\(launches == 1 ? "" : "es") in \(groupCount) group\(groupCount == 1 ? "" : "s")"
            + (by.map { " (by \($0))" } ?? "") + ", \(skippedCount) file\(skippedCount == 1 ? "" : "s") skipped")
        lines.append("Times in ms (CLOCK_MONOTONIC); percentiles: \(percentiles).")
        for group in groups {
            lines.append("")
            var title = group.executable
            if let by { title += ", \(by) " + (group.value ?? "(none)") }
            let reasons = group.endReasons.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            lines.append("\(title): \(group.launches) launch\(group.launches == 1 ? "" : "es") (\(reasons))")
            var rows: [[String]] = []
            func row(_ name: String, _ measure: Measure) -> [String] {
                [name, String(measure.count)] + [measure.p50Ms, measure.p90Ms, measure.p99Ms, measure.maxMs].map(Self.ms)
            }
            func section(_ title: String, _ measures: [Measure]) {
                guard !measures.isEmpty else { return }
                rows.append([title])
                rows += measures.map { row("  " + $0.name, $0) }
            }
            if let launch = group.launch { rows.append(row("launch (start → ready)", launch)) }
            section("phases", group.phases)
            section("marks (time since start)", group.marks)
            section("spans", group.spans)
            lines += Self.table(header: ["", "count", "p50", "p90", "p99", "max"], rows: rows, width: style.width)
            if !group.slowest.isEmpty {
                lines.append("  slowest launches:")
                for launch in group.slowest {
                    var line = "  \(Self.ms(launch.ms).leftPadded(to: 10))  \(launch.file)  (pid \(launch.pid), \(launch.endReason)"
                    if let startedAt = launch.startedAt { line += ", \(startedAt)" }
                    lines.append(line + ")")
                }
            }
            if let profile = group.profile {
                lines += [""] + profile.lines(width: style.width.map { $0 - 2 }).map { $0.isEmpty ? "" : "  " + LaunchReport.printable($0, limit: .max) }
            }
        }
        if skippedCount > 0 {
            lines.append("")
            let more = skippedCount - skipped.count
            lines.append("Skipped \(skippedCount) file\(skippedCount == 1 ? "" : "s")" + (more > 0 ? " (the first \(skipped.count) listed)" : "") + ":")
            for file in skipped { lines.append("  \(file.file): \(file.reason)") }
        }
        return lines.map(style.colored).joined(separator: "\n") + "\n"
    }

    static func ms(_ value: Double) -> String { String(format: "%.1f", value) }

    /// Left column left-aligned (cut to fit `width`), the rest right-aligned;
    /// a row of one cell is a section title.
    private static func table(header: [String], rows: [[String]], width: Int?) -> [String] {
        let all = [header] + rows.filter { $0.count > 1 }
        let widths = header.indices.map { column in all.map { $0.count > column ? $0[column].count : 0 }.max() ?? 0 }
        let numbers = widths.dropFirst().reduce(0) { $0 + $1 + 2 }
        let nameWidth = width.map { min(widths[0], max(12, $0 - numbers)) } ?? widths[0]
        func line(_ cells: [String]) -> String {
            guard cells.count > 1 else { return cells[0] }
            var name = cells[0]
            if name.count > nameWidth { name = String(name.prefix(nameWidth - 1)) + "…" }
            return name.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
                + cells.indices.dropFirst().map { "  " + cells[$0].leftPadded(to: widths[$0]) }.joined()
        }
        return ([header] + rows).map(line)
    }
}

private extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
