import ColdstartAnalysis
import Foundation

/// `coldstart symbolize FILE [-o OUT]`: writes function names into a timeline
/// so it can be reported on another machine.
enum SymbolizeCommand: Command {
    static let name = "symbolize"
    static let summary = "Write function names into a timeline, so reports need no binaries"
    static let help = """
    Usage: coldstart symbolize FILE [-o OUT]

    Resolves every sampled stack frame of a timeline to a function name from
    the ELF symbol tables (.symtab, then .dynsym, then a debug file under
    /usr/lib/debug/.build-id) of the modules that ran, after checking each
    module's GNU build-id; demangles Swift and C++ names. Writes:
      - coldstart.symbols: "module:address" -> {name, system (mangled)};
      - coldstart.symbolized: true;
      - coldstart.loaderStatistics: each loaded object's relocations, read
        from its file (what `coldstart report` shows as loader statistics);
      - the main thread's stacks as a flame chart of trace events on the track
        "main thread (samples)", in time order, for Perfetto UI and
        chrome://tracing.
    Every other part of the file is kept. Run it on the machine that ran the
    launch; afterwards `coldstart report` reads no binary.

    Options:
      -o, --output OUT   Write to OUT instead of rewriting FILE in place.
      --help             Show this text.

    Exit status: 0 written (warnings about missing or rebuilt binaries go to
    stderr); 1 the file is unreadable, not a timeline, or has no samples;
    2 wrong arguments.
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let output = try arguments.option("-o", "--output")
        let path = try arguments.positional("FILE (a timeline written with COLDSTART=1)")
        try arguments.finish()

        let timeline = try Timeline(contentsOf: path)
        let result: SymbolizedTimeline
        do {
            result = try timeline.symbolized(path: path)
        } catch let error as ProfileError {
            throw CommandError(message: error.description)
        }
        let destination = output ?? path
        try OutputFile.write(result.data, to: destination)
        for warning in result.symbolization.warnings { printError("coldstart symbolize: warning: \(warning)") }
        let named = result.frames - result.symbolization.unnamedFrames
        try StandardOutput.print("\(destination): named \(named) of \(result.frames) distinct frames"
            + "; flame chart of the main thread: \(result.flameChartSlices) slices")
        return ExitStatus.success
    }
}
