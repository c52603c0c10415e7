import ColdstartAnalysis
import ColdstartExport
import Foundation

/// `coldstart report FILE [--json]`: where the launch's time went;
/// `coldstart report DIR`: the pooled profile of many launches.
enum ReportCommand: Command {
    static let name = "report"
    static let summary = "Print where a launch's time went: phases, marks, spans, sampled functions"
    static let help = """
    Usage: coldstart report FILE [--full | --json | --html OUT] [--min-ms MS] [--min-percent P]
                                 [--top N] [--phase NAME] [--thread NAME|TID] [--tree-depth N]
                                 [--root DIR]
           coldstart report DIR [--full | --json] [--top N] [--phase NAME] [--thread NAME]

    Reads a timeline written by an app run with COLDSTART=1 (or COLDSTART=FILE)
    and prints:
      - first, the launch in one line and its findings: 3 to 7 costs, most
        time first, each with its ms, share, where it is, how sure, and what
        to try (everything after them is the evidence);
      - the phase waterfall: each phase's start and wall time in ms from the
        process start, its share of the launch, CPU ms (user+system of all
        threads) against wall, page faults and context switches;
      - the marks, with the phase each fell in;
      - the 10 slowest spans;
      - how exactly the process start is known, and whether the launch
        completed (ready(), exit, or abandoned by a signal or an error exit);
      - when the launch was sampled (COLDSTART=1 samples stacks): functions
        by self and total time, overall and per phase, with the time each was
        first seen; slow initializers (time in each library's constructors and
        the program's own); slow lazy globals (Swift globals initialised on
        first use); each thread; a call tree; Swift runtime costs by kind
        (conformance scans, type look-ups, casts, reflection, ARC, …) with
        the app's frames that led there. Inlined functions (from DWARF) are
        frames of their own, marked "(inlined)". Sampled times are CPU time of
        the sampling clock, samples × period, each with its sample count.
        Names come from the binaries on this machine, or from the file once
        `coldstart symbolize` has written them in;
      - when the off-CPU watcher ran (COLDSTART=1 runs it; COLDSTART_WATCH=0
        turns it off): why the main thread was not running — per phase its
        time on a CPU, waiting for a CPU and blocked by cause (file, lock,
        sleep, network, page fault…), the call sites and functions that
        blocked it (off-CPU time, not CPU time), the files waited on, and one
        line per thread.
    Phase and span times are CLOCK_MONOTONIC. On a terminal the report fits its
    width (or COLUMNS) and is coloured, unless NO_COLOR is set.

    Without --full the text is the first look, in at most 100 columns: the
    findings, the phases, the 5 slowest spans, the top functions by self time.

    With a directory (one written by `coldstart run --out DIR`, or any
    directory of timelines of one executable, sub-directories included, a
    run's warmup/ and reference/ left out), prints the same report pooled
    over every sampled launch in it: the findings first (each launch's
    added up, per launch, with the pooled samples' precision), then samples
    per phase, functions by self and total time, slow initializers, lazy
    globals, threads (by name) and runtime costs, each with its pooled
    sample count and ms per launch (pooled samples × sampling period ÷
    launches pooled), and in how many launches it was seen; --phase and
    --thread select the profile's samples (a thread by name: every
    launch's thread of that name), --full prints every section. Each
    launch's samples are given its own
    phases and named from its own modules; a module (path and build-id) is
    read once for all of them. Files that are not readable timelines, or a
    different executable's, are skipped with their reason and counted;
    launches that were not sampled are counted and left out.

    Options:
      --full             Print every section below, at the terminal's width
                         (or unclipped into a file or a pipe).
      --json             Print the same report as JSON (keys: docs/report.md).
      --html OUT         Write the same report as one self-contained page: the
                         waterfall, a flame chart of the main thread in time
                         order, a flame graph, sortable tables (docs/report.md).
      --min-ms MS        Sampled rows under MS milliseconds are left out (default 0).
      --min-percent P    Sampled rows under P% of the samples are left out (default 0;
                         call-tree nodes under 0.5% always are).
      --top N            At most N rows per sampled table and children per
                         call-tree node (default 15).
      --phase NAME       Sampled sections for that phase only (its name as listed).
      --thread NAME|TID  Sampled sections for that thread only ("main" is the
                         process's first thread).
      --tree-depth N     Call-tree levels below the roots (default 12).
      --root DIR         Read the launch's binaries under DIR: the root of the
                         file system the launch ran in (a container's, an
                         emulated or another machine's). Build-ids must match.
      --help    Show this text.

    Exit status: 0 printed; 1 the file is missing, empty, truncated, not JSON
    or not a Coldstart timeline, or --phase/--thread names none it has, or
    the directory holds no sampled launch; 2 wrong arguments.
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let json = arguments.flag("--json")
        let full = arguments.flag("--full")
        var options = ProfileOptions()
        options.minMs = try arguments.number("--min-ms", in: 0...1e9) ?? options.minMs
        options.minPercent = try arguments.number("--min-percent", in: 0...100) ?? options.minPercent
        options.top = try arguments.number("--top", in: 1...100_000) ?? options.top
        options.phase = try arguments.option("--phase")
        let thread = try arguments.option("--thread")
        let html = try arguments.option("--html")
        options.treeDepth = try arguments.number("--tree-depth", in: 0...10_000) ?? options.treeDepth
        let root = try arguments.option("--root")
        let path = try arguments.positional("FILE (a timeline written with COLDSTART=1)")
        try arguments.finish()
        var info = stat()
        if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            let fileOnly = [("--html", html != nil), ("--min-ms", options.minMs != 0), ("--min-percent", options.minPercent != 0),
                            ("--tree-depth", options.treeDepth != 12), ("--root", root != nil)]
            if let option = fileOnly.first(where: \.1)?.0 {
                throw UsageError(message: "\(option) is for one timeline FILE; a directory takes --full, --json, --top, --phase and --thread")
            }
            return try pool(path, top: options.top, thread: thread, phase: options.phase, json: json, full: full)
        }

        var timeline = try Timeline(contentsOf: path)
        if let root { timeline.readModules(under: root) }
        let analysis: LaunchAnalysis
        do {
            if let thread { options.thread = try ProfileOptions.thread(named: thread, in: timeline, path: path) }
            analysis = try LaunchAnalysis(timeline: timeline, options: options, path: path)
        } catch let error as ProfileError {
            throw CommandError(message: error.description)
        }
        let report = analysis.report
        if let html {
            let page = Data(HTMLReport.render(analysis, source: path).utf8)
            try OutputFile.write(page, to: html, from: path)
            if html != "-" { try StandardOutput.print("\(html): HTML report, \(OutputFile.size(page.count))") }
            return ExitStatus.success
        }
        let output: Data
        if json {
            do {
                output = try report.jsonData() + Data("\n".utf8)
            } catch {
                throw CommandError(message: "\(path): cannot encode the report as JSON (\(error))")
            }
        } else {
            output = Data(report.text(style: Terminal.style(), full: full).utf8)
        }
        try StandardOutput.write(output)
        return ExitStatus.success
    }

    /// `report DIR`: the pooled profile of the directory's launches.
    private static func pool(_ directory: String, top: Int, thread: String?, phase: String?, json: Bool, full: Bool) throws -> Int32 {
        let pooled = PooledLaunches(directory: directory, exportSuffixes: Exporters.suffixes, top: top, thread: thread, phase: phase)
        guard pooled.profile.launches > 0 else {
            let why = pooled.profile.unsampledLaunches > 0
                ? "\(pooled.profile.unsampledLaunches) launch\(pooled.profile.unsampledLaunches == 1 ? " was" : "es were") not sampled"
                : pooled.skipped.first.map { "e.g. \($0.file): \($0.reason)" } ?? "no *.json files"
            throw CommandError(message: "\(directory): no sampled launch to pool (\(why))")
        }
        // As for one FILE: a selection none of the launches has is an error.
        if pooled.profile.samples == 0, let selection = thread.map({ "thread named '\($0)'" }) ?? phase.map({ "phase named '\($0)'" }) {
            throw CommandError(message: "\(directory): no launch has samples of a \(selection)")
        }
        let output: Data
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            output = try encoder.encode(pooled) + Data("\n".utf8)
        } else {
            output = Data(pooled.text(style: Terminal.style(), full: full).utf8)
        }
        try StandardOutput.write(output)
        return ExitStatus.success
    }
}
