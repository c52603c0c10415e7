import ColdstartAnalysis
import ColdstartText
import ColdstartExport
import Foundation

/// `coldstart aggregate DIR…`: the launches of a fleet as percentiles.
enum AggregateCommand: Command {
    static let name = "aggregate"
    static let summary = "Percentiles of many launches' phases, marks and spans, by label; OpenMetrics"
    static let help = """
    Usage: coldstart aggregate DIR|FILE… [--by LABEL] [--slowest N] [--top N]
                                         [--json | --format openmetrics] [-o OUT]

    Reads every timeline (*.json) under the given directories (and their
    sub-directories), one at a time on each CPU, and prints, per executable
    and per value of LABEL: the number of launches, then count, p50, p90,
    p99 and max of
      - the launch, process start → ready (launches that reached ready());
      - each phase's duration;
      - each mark's time since the process start;
      - each finished span's duration;
    and the slowest launches (process start → end) with their files; then
    the profile of the group's sampled launches pooled (as `coldstart report
    DIR` prints it: samples per phase, top functions, slow initializers and
    lazy globals, with pooled sample counts and ms per sampled launch). Times
    are ms of CLOCK_MONOTONIC as each launch recorded them. Percentiles are
    nearest-rank to within 1% (a log-bucketed sketch); count, min, max and
    sum are exact. Memory depends on the number of groups and names, not of
    launches (docs/fleet.md): the pooled profile keeps a counter per
    function, initializer and lazy global, never the samples, and each
    thread reads a module once to name the frames (a file written by
    `coldstart symbolize` carries its names). Files that are not readable
    timelines are counted and listed with the reason, and do not stop the
    run.

    Options:
      --by LABEL         Group by a label of the timeline's coldstart.labels
                         (version, region, host …), or by `executable`,
                         `build-id` or `kernel`. Launches without it form a
                         group of their own.
      --slowest N        Slowest launches listed per group (default 10).
      --top N            Rows per table of each group's pooled profile (default 10).
      --json             Print the summary as JSON (keys: docs/fleet.md).
      --format openmetrics
                         Write Prometheus histograms (seconds) in the
                         OpenMetrics text format, for node_exporter's textfile
                         collector: coldstart_launch_seconds,
                         coldstart_phase_seconds, coldstart_mark_seconds,
                         coldstart_span_seconds (docs/fleet.md).
      -o, --output OUT   Where to write (default: standard output); written
                         to a temporary file and renamed.
      --help             Show this text.

    Exit status: 0 at least one launch read (skipped files are reported on
    standard error); 1 no timeline could be read; 2 wrong arguments.
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let json = arguments.flag("--json")
        let format = try arguments.option("--format", "-f")
        if let format, format != "openmetrics" {
            throw UsageError(message: "unknown format '\(format)' (formats: openmetrics; --json for JSON)")
        }
        if json && format != nil { throw UsageError(message: "--json and --format are exclusive") }
        let by = try arguments.option("--by")
        let slowest = try arguments.number("--slowest", in: 0...10_000) ?? 10
        let top = try arguments.number("--top", in: 1...100_000) ?? 10
        let output = try arguments.option("-o", "--output") ?? "-"
        var paths: [String] = []
        while let path = try? arguments.positional("DIR") { paths.append(path) }
        try arguments.finish()
        guard !paths.isEmpty else { throw UsageError(message: "missing DIR (a directory of timelines, or files)") }

        let aggregate = LaunchAggregate(reading: paths, exportSuffixes: Exporters.suffixes, groupLabel: by, slowestCount: slowest, profileTop: top,
                                        threads: ProcessInfo.processInfo.activeProcessorCount)
        let summary = aggregate.summary
        if summary.skippedCount > 0 {
            let files = summary.skippedCount == 1 ? "1 file that is not a readable timeline" : "\(summary.skippedCount) files that are not readable timelines"
            printError("coldstart aggregate: skipped \(files)"
                + (json || format != nil ? "" : " (listed at the end)"))
        }
        guard summary.launches > 0 else {
            throw CommandError(message: "no timeline could be read in \(paths.joined(separator: ", "))"
                + (summary.skipped.first.map { " (e.g. \($0.file): \($0.reason))" } ?? ""))
        }
        let data: Data
        if format != nil {
            data = Data(OpenMetricsExporter.export(summary).utf8)
        } else if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            data = try encoder.encode(summary) + Data("\n".utf8)
        } else {
            data = Data(summary.text(style: output == "-" ? Terminal.style() : TextStyle()).utf8)
        }
        try OutputFile.write(data, to: output)
        return ExitStatus.success
    }
}
