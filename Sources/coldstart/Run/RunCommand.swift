import CLauncher
import ColdstartAnalysis
import Foundation

/// `coldstart run`: launches an app linked with Coldstart many times, each with
/// an exact start time, and summarises the launches.
enum RunCommand: Command {
    static let name = "run"
    static let summary = "Launch an app N times (exact start, optionally cold) and summarise"
    static let takesCommandLine = true
    static let help = """
    Usage: coldstart run [-n RUNS] [--warmup K] [--cold] [--hz HZ | --phases-only]
                         [--out DIR] [--append] [--timeout SECONDS]
                         [--stop-after-ready] [--json] [--] COMMAND [ARGS…]

    COMMAND starts at the first argument that is not an option (or after
    `--`); everything from there, --help included, is the app's.

    Launches COMMAND (an app linked with the Coldstart library) RUNS times, one
    after another, each with COLDSTART=DIR/run-<i>.json and COLDSTART_SPAWN_NS
    (CLOCK_BOOTTIME read just before posix_spawn, so the start is exact rather
    than /proc's 10 ms steps). The app's stdout, stderr and exit status pass
    through. Then prints, for the whole launch, each phase and each span: the
    median, p90, min, max and MAD (median absolute deviation) in ms over the
    completed runs (ready(), or a normal exit for a tool that never calls
    it), outliers flagged (modified z-score > 3.5, kept
    in every figure), and the runs that did not complete.

    Options:
      -n RUNS             measured launches (default 10)
      --warmup K          launches before them, not measured (default 1); their
                          timelines go to DIR/warmup/
      --cold              before each measured launch, drop the executable, its
                          loader and every shared library it needs from the page
                          cache (posix_fadvise DONTNEED); reports what stayed
                          resident and whether major faults before main rose
                          compared with the (warm) warm-up launches
      --hz HZ             sampling rate for the app (COLDSTART_HZ, 10…10000)
      --phases-only       the launch without profiling: phases, marks and spans
                          only (COLDSTART_SAMPLER=off, COLDSTART_WATCH=0, no
                          loader sampling); its median is what a report's
                          "without profiling" estimate of a profiled launch
                          should come to (docs/report.md)
      --out DIR           where the timelines go (default ./coldstart-runs/<app>-<time>);
                          refuses a DIR that already holds runs unless --append
      --append            add runs to DIR after the ones there (interleave two
                          builds to cancel machine drift: see docs/ci.md)
      --timeout SECONDS   stop a launch still running after SECONDS (SIGTERM,
                          SIGKILL 5 s later); it counts as killed, not
                          completed, even when it had reached ready() (use
                          --stop-after-ready for services)
      --stop-after-ready  stop the app (SIGTERM) once its timeline is written:
                          for services that keep running after ready()
      --json              print the summary as JSON on stdout; the app's stdout
                          then goes to stderr
      --no-sample-loader  do not sample from exec (by default perf events attached
                          before exec and an LD_AUDIT module show the loader, each
                          library and page faults: docs/before-main.md; where perf
                          is refused, the program is traced instead, every thread
                          sampled by ptrace at 4 kHz: docs/containers.md); a
                          program not linked with Coldstart is then refused
      --no-reference      with loader sampling, the app is also launched without
                          it, up to 10 times interleaved with the measured
                          launches: an app linked with Coldstart as
                          COLDSTART=FILE APP (timelines in DIR/reference/, not
                          pooled), any other program with glibc's loader
                          statistics (LD_DEBUG=statistics) written to a FIFO
                          the launcher times (none when LD_DEBUG or
                          LD_DEBUG_OUTPUT is set); the summary and each
                          timeline then say what the sampling added before the
                          app's first code; this skips those launches
      -h, --help          show this text

    Exit status: the app's, when a launch failed (the first non-zero status,
    128+N for signal N); 1 when no launch completed or the app is not
    linked with Coldstart; 130 when interrupted; otherwise 0. Progress goes to
    stderr once a run has taken a second, only when stderr is a terminal.
    """

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let command = arguments.commandLine()
        var options = Options(command: command ?? [])
        options.runs = try arguments.number("-n", in: 1...10_000) ?? 10
        options.warmups = try arguments.number("--warmup", in: 0...1_000) ?? 1
        options.cold = arguments.flag("--cold")
        options.hz = try arguments.number("--hz", in: 10...10_000)
        options.phasesOnly = arguments.flag("--phases-only")
        options.outDirectory = try arguments.option("--out")
        options.append = arguments.flag("--append")
        options.timeout = try arguments.number("--timeout", in: 0.001...86_400.0)
        options.stopAfterReady = arguments.flag("--stop-after-ready")
        options.json = arguments.flag("--json")
        options.sampleLoader = !arguments.flag("--no-sample-loader") && !options.phasesOnly  // LoaderSampling.swift
        options.reference = !arguments.flag("--no-reference")
        try arguments.finish()
        if options.phasesOnly && options.hz != nil {
            throw UsageError(message: "--phases-only samples nothing: --hz does not apply")
        }
        guard let command, !command.isEmpty else {
            throw UsageError(message: "missing COMMAND [ARGS…] (the app to launch)")
        }
        return try Session(options).run()
    }

    struct Options {
        var command: [String]
        var runs = 10
        var warmups = 1
        var cold = false
        var hz: Int?
        /// No sampler, no watcher, no loader sampling: the unprofiled launch.
        var phasesOnly = false
        var outDirectory: String?
        var append = false
        var timeout: Double?
        var stopAfterReady = false
        var json = false
        var sampleLoader = true
        /// Launches without loader sampling beside the sampled ones.
        var reference = true
    }
}

/// How one launch ended, as `coldstart run` counts it.
enum RunOutcome: Equatable {
    /// Reached ready(); `stoppedByUs` when --stop-after-ready ended it after.
    case completed(stoppedByUs: Bool)
    /// Reached ready() (the timeline is complete) but was still running at
    /// --timeout and killed: not counted, since the app did not end as asked.
    case timedOutAfterReady
    /// The timeline says the launch ended before ready(): an exit or a signal.
    case endedBeforeReady(reason: String)
    /// Killed by a signal that left no timeline (a crash, SIGKILL).
    case crashed(signal: Int32)
    /// A clean exit without a timeline: Coldstart is not linked, or it failed.
    case noTimeline(status: Int32)
    /// A timeline was written but cannot be read.
    case unreadable(String)
}

/// One launch's result.
struct RunRecord {
    var label: String
    var file: String
    var outcome: RunOutcome
    /// The app's exit status, 128+N for signal N (as a shell reports it).
    var status: Int32
    var timedOut: Bool
    var timeline: Timeline?
    var eviction: [PageCache.FileEviction]?
}

/// One invocation of `coldstart run`.
private struct Session {
    let options: RunCommand.Options
    let executable: String
    let launcher: Launcher
    let loaderSampling: LoaderSampling?
    let directory: String
    let firstIndex: Int
    let showProgress: Bool

    init(_ options: RunCommand.Options) throws {
        self.options = options
        executable = try Launcher.resolve(options.command[0])
        let name = (executable as NSString).lastPathComponent
        let given: String
        if let out = options.outDirectory {
            given = out
        } else {
            let formatter = DateFormatter()
            formatter.dateFormat = "yyyyMMdd-HHmmss"
            given = "coldstart-runs/\(name)-\(formatter.string(from: Date()))"
        }
        // Absolute: the timelines' paths go into the app's environment.
        let absolute = ((given.hasPrefix("/") ? given : FileManager.default.currentDirectoryPath + "/" + given) as NSString).standardizingPath
        do {
            try FileManager.default.createDirectory(atPath: absolute + "/warmup", withIntermediateDirectories: true)
        } catch {
            throw CommandError(message: "cannot create \(given): \(error.localizedDescription)")
        }
        let existing = ((try? FileManager.default.contentsOfDirectory(atPath: absolute)) ?? [])
            .compactMap { name -> Int? in
                guard name.hasPrefix("run-"), name.hasSuffix(".json") else { return nil }
                return Int(name.dropFirst(4).dropLast(5))
            }
        if !existing.isEmpty && !options.append {
            throw CommandError(message: "\(given) already holds \(existing.count) run\(existing.count == 1 ? "" : "s"); pass --append to add to them, or choose another --out")
        }
        firstIndex = (existing.max() ?? 0) + 1
        var environment = ProcessInfo.processInfo.environment
        environment.merge(SecureExecution.removedVariables(from: environment)) { kept, _ in kept }
        for key in ["COLDSTART", "COLDSTART_DIR", "COLDSTART_SPAWN_NS", "COLDSTART_HZ"] { environment[key] = nil }
        if let hz = options.hz { environment["COLDSTART_HZ"] = String(hz) }
        if options.phasesOnly {
            environment["COLDSTART_SAMPLER"] = "off"
            environment["COLDSTART_WATCH"] = "0"
        }
        launcher = Launcher(path: executable, arguments: options.command, environment: environment, stdoutToStderr: options.json)
        loaderSampling = options.sampleLoader ? LoaderSampling(hz: options.hz, executable: executable) : nil
        directory = absolute
        showProgress = isatty(STDERR_FILENO) != 0
    }

    func run() throws -> Int32 {
        // While launches run, ^C and ^\ go to the app (its default action);
        // this process stops after the launch they ended.
        let oldInt = signal(SIGINT, SIG_IGN), oldQuit = signal(SIGQUIT, SIG_IGN)
        defer { signal(SIGINT, oldInt); signal(SIGQUIT, oldQuit) }
        // Every launch then sees a warm kernel: its sampler's first perf
        // event does not pay the kernel's one-time switch, as a launch on a
        // quiet machine does (the report's "Coldstart set-up" phase).
        // (Not for --phases-only: the unprofiled launch sees the kernel as
        // it is without a profiler.)
        let warmKernel = options.phasesOnly ? -1 : cs_launch_keep_perf_warm()
        defer { if warmKernel >= 0 { close(warmKernel) } }

        var evictionList: [String] = []
        var evictionNote: String?
        if options.cold {
            (evictionList, evictionNote) = Self.filesToEvict(executable: executable, timeline: nil)
        }

        let started = Date()
        var warmups: [RunRecord] = []
        var records: [RunRecord] = []
        var references: [RunRecord] = []
        // A program without Coldstart's: its launch to ld.so's statistics.
        var statisticsSpans: [Int64] = []
        var statisticsLaunches = 0
        let linked = loaderSampling?.linked == true
        // A reference launch after every `referenceEvery`-th measured one,
        // so that both kinds see the same drift of the machine.
        let referenceLaunches = options.reference && loaderSampling != nil
            && (linked || !LoaderSampling.userSetsLoaderDebugging(launcher.environment)) ? min(options.runs, Self.maximumReferences) : 0
        let referenceEvery = referenceLaunches > 0 ? options.runs / referenceLaunches : 0
        var interrupted = false
        let total = options.warmups + options.runs
        for step in 0..<total {
            let isWarmup = step < options.warmups
            let label = isWarmup ? "warmup-\(step + 1)" : "run-\(firstIndex + step - options.warmups)"
            let file = isWarmup ? "\(directory)/warmup/\(label).json" : "\(directory)/\(label).json"
            try? FileManager.default.removeItem(atPath: file)
            // Only a run long enough to leave the user waiting shows progress.
            let progress = showProgress && Date().timeIntervalSince(started) >= 1
            if progress {
                let what = isWarmup ? "warm-up \(step + 1) of \(options.warmups)" : "run \(step - options.warmups + 1) of \(options.runs)"
                printError("\r\u{1B}[Kcoldstart run: \(what)\(options.cold && !isWarmup ? " (cold)" : "")… ", terminator: "")
            }
            var eviction: [PageCache.FileEviction]?
            if options.cold && !isWarmup {
                if let latest = (records.last ?? warmups.last)?.timeline {
                    (evictionList, evictionNote) = Self.filesToEvict(executable: executable, timeline: latest)
                }
                eviction = PageCache.evict(evictionList)
            }
            var record = try loaderSampling.map {
                try $0.launch(launcher, label: label, timeline: file, stopAfterReady: options.stopAfterReady, timeout: options.timeout)
            } ?? launcher.launch(label: label, timeline: file, stopAfterReady: options.stopAfterReady, timeout: options.timeout)
            record.eviction = eviction
            if progress { printError("\r\u{1B}[K", terminator: "") }
            if case .noTimeline(let status) = record.outcome {
                throw CommandError(message: Self.notLinkedMessage(executable: executable, status: status))
            }
            if isWarmup { warmups.append(record) } else { records.append(record) }
            if record.status == 128 + SIGINT || record.status == 128 + SIGQUIT {
                interrupted = true
                break
            }
            if !isWarmup && references.count + statisticsLaunches < referenceLaunches && records.count % referenceEvery == 0 {
                let status: Int32
                if linked {
                    let reference = try referenceLaunch(references.count + firstIndex)
                    references.append(reference)
                    status = reference.status
                } else if let loaderSampling {
                    let reference = try loaderSampling.statisticsLaunch(launcher, directory: directory, timeout: options.timeout)
                    statisticsLaunches += 1
                    if let ns = reference.ns { statisticsSpans.append(ns) }
                    status = reference.status
                } else {
                    status = 0
                }
                if status == 128 + SIGINT || status == 128 + SIGQUIT {
                    interrupted = true
                    break
                }
            }
        }
        let sampledSpans = records.compactMap { $0.timeline?.launch.earliestInitNs }
        let loaderReference = linked
            ? LoaderReference(sampled: sampledSpans, undisturbed: references.compactMap { $0.timeline?.launch.earliestInitNs })
            : LoaderReference(sampled: sampledSpans, undisturbed: statisticsSpans, end: .loaderStatistics)
        if let loaderReference {
            for index in records.indices where records[index].timeline != nil {
                try Self.store(loaderReference, in: records[index].file)
                records[index].timeline = try? Timeline(contentsOf: records[index].file)
            }
        }

        let report = RunReport(
            options: options, executable: executable, directory: directory, records: records, warmups: warmups,
            evictionNote: evictionNote, mappers: options.cold ? Self.mappersOfResidentFiles(records) : [:], loaderReference: loaderReference)
        if options.json {
            try StandardOutput.print(try report.json())
        } else {
            try StandardOutput.print(report.text())
            if let beforeMain = LoaderSampling.summary(records) {
                // Sentences of up to 300 columns: wrapped in a terminal, as the report's are.
                let lines = beforeMain.components(separatedBy: "\n")
                try StandardOutput.print("\n" + (Terminal.style().width.map { Finding.wrapped(lines, width: $0) } ?? lines).joined(separator: "\n"))
            }
        }
        if interrupted { return 130 }
        if let failed = records.first(where: { $0.status != 0 && $0.outcome != .completed(stoppedByUs: true) }) {
            return failed.status
        }
        if !records.contains(where: { if case .completed = $0.outcome { return true } else { return false } }) {
            return ExitStatus.failure
        }
        return ExitStatus.success
    }

    /// At most this many launches without loader sampling per run: enough
    /// for a median and quartiles, without doubling a long run.
    static let maximumReferences = 10

    /// One launch as `COLDSTART=FILE APP` would make it, with the launcher's
    /// exact start stamp but nothing attached before exec, its output
    /// discarded.
    private func referenceLaunch(_ index: Int) throws -> RunRecord {
        let file = "\(directory)/reference/reference-\(index).json"
        do {
            try FileManager.default.createDirectory(atPath: directory + "/reference", withIntermediateDirectories: true)
        } catch {
            throw CommandError(message: "cannot create \(directory)/reference: \(error.localizedDescription)")
        }
        try? FileManager.default.removeItem(atPath: file)
        var quiet = launcher
        quiet.discardsOutput = true
        return try quiet.launch(label: "reference-\(index)", timeline: file, stopAfterReady: options.stopAfterReady, timeout: options.timeout)
    }

    /// Adds `reference` to a sampled timeline's launcher section, as a whole
    /// new file (written beside it and renamed).
    static func store(_ reference: LoaderReference, in file: String) throws {
        guard var document = (try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file)))) as? [String: Any],
              var section = document["coldstart"] as? [String: Any], var launcher = section["launcher"] as? [String: Any] else { return }
        launcher["loaderReference"] = reference.json
        section["launcher"] = launcher
        document["coldstart"] = section
        try OutputFile.write(try LauncherTimeline.encode(document), to: file)
    }

    /// The executable, its loader and every library it needs (DT_NEEDED), plus
    /// the modules a sampled timeline lists (which include dlopen'ed ones).
    static func filesToEvict(executable: String, timeline: Timeline?) -> ([String], String?) {
        var files: [String] = []
        var note: String?
        var seen: Set<String> = []
        func add(_ path: String) {
            let canonical = SharedLibraries.canonicalPath(path)
            if FileManager.default.fileExists(atPath: canonical), seen.insert(canonical).inserted { files.append(canonical) }
        }
        add(timeline?.process.executable ?? executable)
        do {
            let libraries = try SharedLibraries(executable: executable)
            libraries.allFiles.forEach(add)
            if !libraries.unresolved.isEmpty {
                note = "not found, so not evicted: \(libraries.unresolved.joined(separator: ", "))"
            }
        } catch {
            note = "libraries unknown (\(error)); only the executable is evicted"
        }
        timeline?.modules.map(\.path).filter { $0.hasPrefix("/") }.forEach(add)
        return (files, note)
    }

    /// Who maps the files that stayed resident after the last eviction.
    static func mappersOfResidentFiles(_ records: [RunRecord]) -> [String: [String]] {
        guard let last = records.last(where: { $0.eviction != nil })?.eviction else { return [:] }
        let stayed = last.filter { ($0.residentAfter ?? 0) > 0 }.map(\.path)
        return stayed.isEmpty ? [:] : PageCache.mappers(of: stayed)
    }

    static func notLinkedMessage(executable: String, status: Int32) -> String {
        if LoaderSampling.linksColdstart(executable) {
            return """
            \(executable) exited (status \(status)) without writing a timeline, although it contains Coldstart: \
            profiling failed inside the app; look for a 'coldstart:' line in its stderr above
            """
        }
        return """
        \(executable) exited (status \(status)) without writing a timeline: it is not linked with Coldstart.
        To link it, in its Package.swift add
            dependencies: [.package(url: "<Coldstart's git URL>", branch: "main")]   (or .package(path: "../Coldstart"))
        and to the executable target's dependencies
            .product(name: "Coldstart", package: "Coldstart")
        then rebuild; `COLDSTART=1 APP` writes a timeline, and Coldstart.ready() marks the launch's end.
        """
    }
}
