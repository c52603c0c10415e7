import ColdstartAnalysis
import Foundation

/// `coldstart report FILE [--json]`: where the launch's time went.
enum ReportCommand: Command {
    static let name = "report"
    static let summary = "Print where a launch's time went: phases, marks, slowest spans"
    static let help = """
    Usage: coldstart report FILE [--json]

    Reads a timeline written by an app run with COLDSTART=1 (or COLDSTART=FILE)
    and prints:
      - the phase waterfall: each phase's start and wall time in ms from the
        process start, its share of the launch, CPU ms (user+system of all
        threads) against wall, page faults and context switches;
      - the marks, with the phase each fell in;
      - the 10 slowest spans;
      - how exactly the process start is known, and whether the launch
        completed (ready(), exit, or abandoned by a signal or an error exit).
    All times are CLOCK_MONOTONIC.

    Options:
      --json    Print the same report as JSON (keys: docs/report.md).
      --help    Show this text.

    Exit status: 0 printed; 1 the file is missing, empty, truncated, not JSON
    or not a Coldstart timeline; 2 wrong arguments.
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let json = arguments.flag("--json")
        let path = try arguments.positional("FILE (a timeline written with COLDSTART=1)")
        try arguments.finish()

        let report = LaunchReport(try Timeline(contentsOf: path))
        let output: Data
        if json {
            do {
                output = try report.jsonData() + Data("\n".utf8)
            } catch {
                throw CommandError(message: "\(path): cannot encode the report as JSON (\(error))")
            }
        } else {
            output = Data(report.text().utf8)
        }
        FileHandle.standardOutput.write(output)
        return ExitStatus.success
    }
}
