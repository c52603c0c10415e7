import Foundation

/// The recorded launches of one build of an app: one timeline file, or a
/// directory of them (what `coldstart run --out DIR` writes).
package struct RunSet: Sendable {
    /// The file or directory the runs came from.
    package var path: String
    /// Every timeline, in run order (`run-2` before `run-10`).
    package var runs: [Run]

    package struct Run: Sendable {
        /// The file name without `.json`, e.g. "run-7".
        package var label: String
        package var timeline: Timeline

        package init(label: String, timeline: Timeline) {
            self.label = label
            self.timeline = timeline
        }
    }

    /// Runs that completed: reached `ready()`, or (a tool that never calls
    /// it) exited normally. The only ones whose phases describe a whole launch.
    package var completed: [Run] { runs.filter { $0.timeline.launch.completed } }

    /// The executable every run launched.
    package var executable: String { runs[0].timeline.process.executable }

    /// How many runs took their start from each source ("spawn-env", "proc-stat").
    package var startSources: [String: Int] {
        runs.reduce(into: [:]) { $0[$1.timeline.launch.startSource, default: 0] += 1 }
    }

    /// How early the recorded start may be, at worst over the runs, in ns.
    package var startPrecisionNs: UInt64 { runs.map(\.timeline.launch.startPrecisionNs).max() ?? 0 }

    /// Loads a timeline file, or every `*.json` file directly inside a
    /// directory but the exports beside them: the files ending in one of
    /// `exportSuffixes` (ColdstartExport's `Exporters.suffixes`; some are
    /// JSON, none is a timeline). Sub-directories, such as `coldstart run`'s
    /// warm-ups, are not read. Every file must be a timeline of the same
    /// executable.
    package init(path: String, exportSuffixes: [String]) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw RunSetError(path: path, problem: "no such file or directory")
        }
        var runs: [Run] = []
        if isDirectory.boolValue {
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: path)
            } catch {
                throw RunSetError(path: path, problem: "cannot list the directory")
            }
            for name in names where name.hasSuffix(".json") && !exportSuffixes.contains(where: name.hasSuffix) {
                let file = (path as NSString).appendingPathComponent(name)
                var fileIsDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: file, isDirectory: &fileIsDirectory), !fileIsDirectory.boolValue
                else { continue }
                runs.append(Run(label: String(name.dropLast(5)), timeline: try Timeline(contentsOf: file)))
            }
            guard !runs.isEmpty else {
                throw RunSetError(path: path, problem: "no timelines (*.json) in the directory; record some with `coldstart run --out \(path) -- APP`")
            }
        } else {
            let label = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
            runs.append(Run(label: label, timeline: try Timeline(contentsOf: path)))
        }
        try self.init(path: path, runs: runs)
    }

    /// A set of runs already in memory; `path` names it in messages.
    package init(path: String, runs: [Run]) throws {
        guard !runs.isEmpty else { throw RunSetError(path: path, problem: "no runs") }
        self.path = path
        self.runs = runs.sorted { Self.runOrder($0.label, $1.label) }
        let executables = Dictionary(grouping: self.runs, by: \.timeline.process.executable)
        if executables.count > 1 {
            let list = executables.sorted { $0.value.count > $1.value.count }
                .map { "\($0.key) (\($0.value.count) run\($0.value.count == 1 ? "" : "s"), e.g. \($0.value[0].label))" }
            throw RunSetError(path: path, problem: "mixes launches of different executables: \(list.joined(separator: "; ")); keep one build per directory")
        }
    }

    /// Orders "run-2" before "run-10": a trailing number compares as a number.
    static func runOrder(_ a: String, _ b: String) -> Bool {
        func split(_ s: String) -> (String, Int?) {
            let digits = s.reversed().prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count < 18 else { return (s, nil) }
            return (String(s.dropLast(digits.count)), Int(String(digits.reversed())))
        }
        let (pa, na) = split(a), (pb, nb) = split(b)
        if pa != pb || na == nil || nb == nil { return a < b }
        return na! < nb!
    }
}

/// Why a set of runs cannot be used; `description` is one line naming it.
package struct RunSetError: Error, CustomStringConvertible, Sendable {
    package var path: String
    package var problem: String
    package var description: String { "\(path): \(problem)" }
}

/// One quantity measured in each of a set of launches.
package struct Measure: Sendable {
    package var name: String
    package var kind: Kind
    /// Milliseconds, one per run that has this measure.
    package var values: [Double]
    /// The run each value came from (`RunSet.Run.label`).
    package var runs: [String]

    package enum Kind: String, Codable, Sendable {
        /// Process start to ready (or to a normal exit).
        case launch
        case phase
        /// The total time in the spans of that name, per launch.
        case span
    }

    /// The whole launch's measure name when the launches end at `ready()`.
    static let launchName = "launch (start → ready)"

    /// The whole launch's name for launches that ended this way: at
    /// `ready()`, at a normal exit (a tool that never calls it), or some of each.
    static func launchName(endReasons: Set<String>) -> String {
        switch endReasons {
        case ["exit"]: return "launch (start → exit)"
        case ["ready", "exit"]: return "launch (start → ready or exit)"
        default: return launchName
        }
    }
}

extension RunSet {
    /// The whole launch, each phase (by name, in launch order) and each span
    /// name (summed per launch, in order of first appearance), over the
    /// completed runs.
    package var measures: [Measure] { Self.measures(of: completed) }

    static func measures(of runs: [Run]) -> [Measure] {
        let endReasons = Set(runs.map(\.timeline.launch.endReason))
        var launch = Measure(name: Measure.launchName(endReasons: endReasons), kind: .launch, values: [], runs: [])
        var phases: [Measure] = [], spans: [Measure] = []
        func add(_ ms: Double, named name: String, run: String, to list: inout [Measure], kind: Measure.Kind) {
            if let i = list.firstIndex(where: { $0.name == name }) {
                list[i].values.append(ms)
                list[i].runs.append(run)
            } else {
                list.append(Measure(name: name, kind: kind, values: [ms], runs: [run]))
            }
        }
        for run in runs {
            let timeline = run.timeline
            launch.values.append(LaunchReport.milliseconds(timeline.launchDurationNs))
            launch.runs.append(run.label)
            for phase in timeline.phases {
                add(LaunchReport.milliseconds(phase.durationNs), named: phase.name, run: run.label, to: &phases, kind: .phase)
            }
            var totals: [(String, Int64)] = []
            for span in timeline.spans.sorted(by: { $0.beginNs < $1.beginNs }) where !span.unfinished {
                if let i = totals.firstIndex(where: { $0.0 == span.name }) { totals[i].1 += span.durationNs }
                else { totals.append((span.name, span.durationNs)) }
            }
            for (name, ns) in totals { add(LaunchReport.milliseconds(ns), named: name, run: run.label, to: &spans, kind: .span) }
        }
        return [launch] + phases + spans
    }
}

extension Timeline {
    /// Major page faults before `main`: the loader and library-initializer
    /// phases, where a cold page cache shows. Nil when their counts are missing.
    package var preMainMajorFaults: UInt64? {
        let preMain = phases.filter { $0.kind == "loader" || $0.kind == "profiler" || $0.kind == "initializers" }
        guard !preMain.isEmpty else { return nil }
        var total: UInt64 = 0
        for phase in preMain {
            guard let rusage = phase.rusage else { return nil }
            total += rusage.majorFaults
        }
        return total
    }

    /// How exactly the start is known, in the words of `coldstart report`.
    package var startPrecision: String {
        LaunchReport.Summary.describePrecision(source: launch.startSource, precisionMs: LaunchReport.milliseconds(launch.startPrecisionNs))
    }
}
