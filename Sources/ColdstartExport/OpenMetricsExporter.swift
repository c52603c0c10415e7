import ColdstartAnalysis
import Foundation

/// `coldstart aggregate --format openmetrics`: launch histograms in the
/// OpenMetrics text format (which Prometheus' text parser also reads), for
/// node_exporter's textfile collector or any scrape.
///
/// Histograms, in seconds, with the buckets of `bucketBoundsMs`:
/// `coldstart_launch_seconds` (start → ready), `coldstart_phase_seconds`
/// (label `phase`, `kind`), `coldstart_mark_seconds` (time since start,
/// label `mark`) and `coldstart_span_seconds` (label `span`); gauges
/// `coldstart_launches` (label `end_reason`) and `coldstart_files_skipped`.
/// Every series carries `executable` and, with `--by`, the grouping label
/// (its name made a valid label name: `build-id` → `build_id`). The file is a
/// snapshot of the launches read, not a running counter: its counts fall when
/// old timelines leave the directory.
package enum OpenMetricsExporter {
    package static func export(_ summary: AggregateSummary) -> String {
        var out = ""
        let groupLabel = summary.by.map(labelName).flatMap { $0 == "executable" ? nil : $0 }
        func groupLabels(_ group: AggregateSummary.Group) -> [(String, String)] {
            var labels = [("executable", group.executable)]
            if let groupLabel, let value = group.value { labels.append((groupLabel, value)) }
            return labels
        }
        let bounds = summary.bucketBoundsMs.map { number($0 / 1000) } + ["+Inf"]

        func histogram(_ name: String, help: String, _ select: (AggregateSummary.Group) -> [(AggregateSummary.Measure, [(String, String)])]) {
            let family = "coldstart_\(name)_seconds"
            out += "# TYPE \(family) histogram\n# UNIT \(family) seconds\n# HELP \(family) \(escapeHelp(help))\n"
            for group in summary.groups {
                for (measure, extra) in select(group) {
                    let labels = groupLabels(group) + extra
                    for (bound, count) in zip(bounds, measure.buckets) {
                        out += "\(family)_bucket\(labelSet(labels + [("le", bound)])) \(count)\n"
                    }
                    out += "\(family)_count\(labelSet(labels)) \(measure.count)\n"
                    out += "\(family)_sum\(labelSet(labels)) \(number(measure.sumMs / 1000))\n"
                }
            }
        }
        histogram("launch", help: "Process start to ready() of each launch that reached it (CLOCK_MONOTONIC).") { group in
            group.launch.map { [($0, [])] } ?? []
        }
        histogram("phase", help: "Duration of each launch phase (CLOCK_MONOTONIC).") { group in
            group.phases.map { ($0, [("phase", $0.name), ("kind", $0.phaseKind ?? "")]) }
        }
        histogram("mark", help: "Time from the process start to each mark (CLOCK_MONOTONIC).") { group in
            group.marks.map { ($0, [("mark", $0.name)]) }
        }
        histogram("span", help: "Duration of each finished span (CLOCK_MONOTONIC).") { group in
            group.spans.map { ($0, [("span", $0.name)]) }
        }

        out += "# TYPE coldstart_launches gauge\n# HELP coldstart_launches Launches read, by how each ended.\n"
        for group in summary.groups {
            for (reason, count) in group.endReasons.sorted(by: { $0.key < $1.key }) {
                out += "coldstart_launches\(labelSet(groupLabels(group) + [("end_reason", reason)])) \(count)\n"
            }
        }
        out += "# TYPE coldstart_files_skipped gauge\n# HELP coldstart_files_skipped Files that were not readable timelines.\n"
        out += "coldstart_files_skipped \(summary.skippedCount)\n"
        out += "# EOF\n"
        return out
    }

    /// `[a-zA-Z_][a-zA-Z0-9_]*`: anything else becomes `_`.
    static func labelName(_ name: String) -> String {
        var result = String(name.unicodeScalars.map { scalar -> Character in
            let ok = scalar == "_" || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
            return ok ? Character(scalar) : "_"
        })
        if result.first.map({ $0.isNumber }) ?? true { result = "_" + result }
        return result
    }

    private static func labelSet(_ labels: [(String, String)]) -> String {
        "{" + labels.map { "\($0.0)=\"\(escapeValue($0.1))\"" }.joined(separator: ",") + "}"
    }

    private static func escapeValue(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    private static func escapeHelp(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// Shortest decimal that reads back as the same double ("0.0005", "1.0").
    private static func number(_ value: Double) -> String { String(value) }
}
