import ColdstartAnalysis
import ColdstartExport
import Foundation

/// `coldstart export FILE --format F [-o OUT]`: a launch for the tools
/// people already use, in any format of `Exporters`.
enum ExportCommand: Command {
    static let name = "export"
    static let summary = "Write a launch's samples for pprof, flame-graph tools or speedscope"
    static let help = """
    Usage: coldstart export FILE --format \(Exporters.names.joined(separator: "|")) [-o OUT]
                                 [--phase NAME] [--thread NAME|TID]

    Writes the sampled stacks of a timeline for other tools (docs/export.md):
    \(Exporters.help)
    Every sample counts one sampling period, as in `coldstart report` (the
    perf task clock: its asked period of user-mode CPU). The timeline itself
    is Chrome Trace Event JSON: open it in Perfetto UI or chrome://tracing as
    it is.

    Options:
      --format F         \(Exporters.names.dropLast().joined(separator: ", ")) or \(Exporters.names.last ?? "") (required).
      -o, --output OUT   Where to write (default: FILE with the extension
                         .pb.gz, .folded or .speedscope.json; - for stdout).
      --phase NAME       Only the samples of that phase.
      --thread NAME|TID  Only the samples of that thread.
      --help             Show this text.

    Exit status: 0 written; 1 the file is unreadable, not a timeline, has no
    samples, or has no such phase or thread; 2 wrong arguments.
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let formats = Exporters.names.joined(separator: ", ")
        guard let formatName = try arguments.option("--format", "-f") else {
            throw UsageError(message: "--format is required (\(formats))")
        }
        guard let format = Exporters.named(formatName) else {
            throw UsageError(message: "unknown format '\(formatName)' (formats: \(formats))")
        }
        switch format {
        case .stacks(let exporter): return try export(exporter, &arguments)
        case .trace(let exporter): return try export(exporter, &arguments)
        }
    }

    /// The report's selected samples, analysed as `coldstart report` does.
    private static func export(_ exporter: any StacksExporter.Type, _ arguments: inout Arguments) throws -> Int32 {
        let output = try arguments.option("-o", "--output")
        var options = ProfileOptions()
        options.phase = try arguments.option("--phase")
        let thread = try arguments.option("--thread")
        let path = try arguments.positional("FILE (a timeline written with COLDSTART=1)")
        try arguments.finish()

        let timeline = try Timeline(contentsOf: path)
        let selected: SampledStacks?
        do {
            if let thread { options.thread = try ProfileOptions.thread(named: thread, in: timeline, path: path) }
            selected = try SampledStacks(timeline: timeline, options: options, path: path)
        } catch let error as ProfileError {
            throw CommandError(message: error.description)
        }
        guard let stacks = selected else {
            throw CommandError(message: "\(path): no sampled stacks (the launch was not sampled)")
        }
        let bytes: [UInt8]
        do {
            bytes = try exporter.export(stacks)
        } catch {
            throw CommandError(message: "\(path): \(error)")
        }
        let destination = output ?? defaultOutput(for: path, exporter: exporter)
        try OutputFile.write(bytes, to: destination, from: path)
        for warning in stacks.warnings { printError("coldstart export: warning: \(warning)") }
        if destination != "-" {
            let threads = stacks.threads.count
            try StandardOutput.print("\(destination): \(exporter.name), \(stacks.samples.count) samples of \(threads) "
                + "thread\(threads == 1 ? "" : "s"), \(OutputFile.size(bytes.count))")
        }
        return ExitStatus.success
    }

    /// The launch's trace: its phases, marks and spans, no samples
    /// (`--phase`/`--thread` do not apply).
    private static func export(_ exporter: any TraceExporter.Type, _ arguments: inout Arguments) throws -> Int32 {
        let output = try arguments.option("-o", "--output")
        let path = try arguments.positional("FILE (a timeline written with COLDSTART=1)")
        try arguments.finish()
        let trace = LaunchTrace(try Timeline(contentsOf: path))
        let bytes: [UInt8]
        do {
            bytes = try exporter.export([(trace, path)])
        } catch let error as ExportError {
            throw CommandError(message: error.description)
        }
        let destination = output ?? defaultOutput(for: path, exporter: exporter)
        try OutputFile.write(bytes, to: destination, from: path)
        if destination != "-" {
            try StandardOutput.print("\(destination): \(exporter.summary(trace)), \(OutputFile.size(bytes.count))")
        }
        return ExitStatus.success
    }

    /// FILE without a `.json` ending, plus the format's suffix.
    static func defaultOutput(for path: String, exporter: any Exporter.Type) -> String {
        let base = path.hasSuffix(".json") ? String(path.dropLast(5)) : path
        return base + exporter.suffix
    }
}
