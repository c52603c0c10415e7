import ColdstartAnalysis
import ColdstartExport
import Foundation

/// `coldstart export FILE --format pprof|folded|speedscope [-o OUT]`: a
/// launch's samples for the profilers people already use.
enum ExportCommand: Command {
    static let name = "export"
    static let summary = "Write a launch's samples for pprof, flame-graph tools or speedscope"
    static let help = """
    Usage: coldstart export FILE --format pprof|folded|speedscope|otlp [-o OUT]
                                 [--phase NAME] [--thread NAME|TID]

    Writes the sampled stacks of a timeline for other tools (docs/export.md):
      pprof       gzip-compressed profile.proto: `go tool pprof -top OUT`,
                  `go tool pprof -http=:8080 OUT`; sample types samples/count
                  and cpu/nanoseconds, labels thread, tid and phase.
      folded      one line per distinct stack, `root;…;leaf COUNT`, for
                  flamegraph.pl, inferno and similar (`;` in a name is \\x3b).
      speedscope  speedscope's JSON: one profile per thread in time order,
                  plus the launch phases on the wall clock.
      otlp        the launch as an OpenTelemetry trace, OTLP/JSON (.otlp.json;
                  needs no samples; --phase/--thread do not apply): see
                  `coldstart push --help` and docs/fleet.md.
    Every sample counts one sampling period, as in `coldstart report` (the
    perf task clock: its asked period of user-mode CPU). The timeline itself
    is Chrome Trace Event JSON: open it in Perfetto UI or chrome://tracing as
    it is.

    Options:
      --format F         pprof, folded, speedscope or otlp (required).
      -o, --output OUT   Where to write (default: FILE with the extension
                         .pb.gz, .folded or .speedscope.json; - for stdout).
      --phase NAME       Only the samples of that phase.
      --thread NAME|TID  Only the samples of that thread.
      --help             Show this text.

    Exit status: 0 written; 1 the file is unreadable, not a timeline, has no
    samples, or has no such phase or thread; 2 wrong arguments.
    """

    enum Format: String, CaseIterable {
        case pprof, folded, speedscope

        var fileExtension: String {
            switch self {
            case .pprof: return ".pb.gz"
            case .folded: return ".folded"
            case .speedscope: return RunSet.speedscopeSuffix
            }
        }
    }

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        guard let formatName = try arguments.option("--format", "-f") else {
            throw UsageError(message: "--format is required (\(Format.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        if formatName == "otlp" { return try exportOTLP(&arguments) }  // a trace, not samples: PushCommand.swift
        guard let format = Format(rawValue: formatName) else {
            throw UsageError(message: "unknown format '\(formatName)' (formats: \(Format.allCases.map(\.rawValue).joined(separator: ", ")), otlp)")
        }
        let output = try arguments.option("-o", "--output")
        var options = ProfileOptions()
        options.phase = try arguments.option("--phase")
        let thread = try arguments.option("--thread")
        let path = try arguments.positional("FILE (a timeline written with COLDSTART=1)")
        try arguments.finish()

        let timeline = try Timeline(contentsOf: path)
        let analysis: LaunchAnalysis
        do {
            if let thread { options.thread = try ProfileOptions.thread(named: thread, in: timeline, path: path) }
            analysis = try LaunchAnalysis(timeline: timeline, options: options, path: path)
        } catch let error as ProfileError {
            throw CommandError(message: error.description)
        }
        guard let stacks = analysis.stacks else {
            throw CommandError(message: "\(path): no sampled stacks (the launch was not sampled)")
        }
        let bytes: [UInt8]
        switch format {
        case .pprof:
            do {
                bytes = try PprofExporter.export(stacks)
            } catch {
                throw CommandError(message: "\(path): cannot compress the profile (\(error))")
            }
        case .folded: bytes = Array(FoldedExporter.export(stacks).utf8)
        case .speedscope: bytes = SpeedscopeExporter.export(stacks)
        }
        let destination = output ?? defaultOutput(for: path, format: format)
        try OutputFile.write(Data(bytes), to: destination, from: path)
        for warning in stacks.warnings { printError("coldstart export: warning: \(warning)") }
        if destination != "-" {
            try StandardOutput.print("\(destination): \(format.rawValue), \(stacks.samples.count) samples of \(stacks.threads.count) "
                + "thread\(stacks.threads.count == 1 ? "" : "s"), \(OutputFile.size(bytes.count))")
        }
        return ExitStatus.success
    }

    /// FILE without a `.json` ending, plus the format's extension.
    static func defaultOutput(for path: String, format: Format) -> String {
        let base = path.hasSuffix(".json") ? String(path.dropLast(5)) : path
        return base + format.fileExtension
    }
}
