import ColdstartAnalysis
import ColdstartText
import Foundation

/// What `coldstart run` prints once the launches are over.
struct RunReport {
    let options: RunCommand.Options
    let executable: String
    let directory: String
    let records: [RunRecord]
    let warmups: [RunRecord]
    let evictionNote: String?
    /// For files that stayed resident: the processes mapping them.
    let mappers: [String: [String]]
    /// The run's launches without loader sampling against the sampled ones.
    let loaderReference: LoaderReference?

    private var completedRuns: [RunSet.Run] {
        records.compactMap { record in
            guard case .completed = record.outcome, let timeline = record.timeline else { return nil }
            return RunSet.Run(label: record.label, timeline: timeline)
        }
    }

    /// Measures over the completed runs; empty when none completed.
    private var measures: [Measure] {
        guard let set = try? RunSet(path: directory, runs: completedRuns) else { return [] }
        return set.measures
    }

    // MARK: text

    func text() -> String {
        var lines: [String] = []
        let warm = options.warmups > 0 ? " (after \(options.warmups) warm-up launch\(options.warmups == 1 ? "" : "es"), not counted)" : ""
        lines.append("coldstart run: \(records.count) launch\(records.count == 1 ? "" : "es") of \(executable)\(warm)")
        if let first = records.first, let last = records.last {
            lines.append("timelines: \(directory)/\(first.label).json\(records.count > 1 ? " … \(last.label).json" : "")")
        }
        lines.append(startLine())
        lines.append("page cache: \(options.cold ? "cold (evicted before each launch, see below)" : "warm")")
        let completed = completedRuns
        lines.append("completed: \(completed.count) of \(records.count) \(Self.howCompleted(completed))")
        let failed = records.filter { if case .completed = $0.outcome { return false } else { return true } }
        if !failed.isEmpty {
            let killed = failed.filter(\.timedOut).count
            lines.append("did not complete (\(failed.count)\(killed > 0 ? ", \(killed) killed by --timeout" : "")):")
            for record in failed { lines.append("  \(record.label): \(describe(record))") }
        }
        // A launch the app's sampler missed is named, never averaged in silence.
        let unsampled = completed.compactMap { run in run.timeline.unsampledReason.map { (run.label, $0) } }
        if !unsampled.isEmpty && !options.phasesOnly {
            lines.append("not sampled (\(unsampled.count) of \(completed.count); left out of the pooled profile):")
            for (label, why) in unsampled { lines.append("  \(label): \(why)") }
        }
        let measures = measures
        if measures.isEmpty {
            lines.append("")
            lines.append(completed.isEmpty
                ? "no statistics: no launch completed. A service must call Coldstart.ready() where its launch ends; a tool's launch ends at a normal exit."
                : "no statistics")
        } else {
            lines.append("")
            lines.append(contentsOf: table(measures))
        }
        if let reference = loaderReference {
            lines.append(reference.end == .earliestInit ? "before the app's first code (exec → earliest init): " + reference.sentence
                : "before the program's first code, " + reference.sentence)
        }
        if let estimate = withoutProfiling { lines.append(estimate.text(phasesOnly: options.phasesOnly)) }
        if let hz = options.hz { lines.append(samplingLine(hz: hz)) }
        if options.cold { lines.append(""); lines.append(contentsOf: coldLines()) }
        return lines.joined(separator: "\n")
    }

    /// The reports' estimates of the completed launches without profiling.
    private var withoutProfiling: EstimateSummary? {
        let estimates = completedRuns.map { UnprofiledEstimate($0.timeline) }
        let known = estimates.compactMap(\.ms)
        guard !estimates.isEmpty else { return nil }
        return EstimateSummary(
            count: known.count, of: estimates.count, medianMs: Statistics.median(known), minMs: known.min(), maxMs: known.max(),
            unknown: estimates.compactMap(\.unknown).first)
    }

    private func startLine() -> String {
        let sources = Dictionary(grouping: records.compactMap(\.timeline), by: \.launch.startSource)
        guard !sources.isEmpty else { return "start: no timeline recorded one" }
        let parts = sources.sorted { $0.key > $1.key }.map { source, timelines -> String in
            switch source {
            case "spawn-env": return "exact for \(timelines.count) (spawn-env: CLOCK_BOOTTIME read just before posix_spawn)"
            case "proc-stat":
                return "/proc/self/stat for \(timelines.count) (\(timelines[0].startPrecision); the app's Coldstart ignored COLDSTART_SPAWN_NS)"
            default: return "\(source) for \(timelines.count)"
            }
        }
        return "start: \(parts.joined(separator: "; ")); times are CLOCK_MONOTONIC, in ms"
    }

    /// How the completed launches ended: "reached ready()", "exited
    /// normally", or both with counts.
    static func howCompleted(_ runs: [RunSet.Run]) -> String {
        let atReady = runs.filter { $0.timeline.launch.endReason == "ready" }.count
        if atReady == runs.count { return "reached ready()" }
        if atReady == 0 { return "exited normally" }
        return "completed (\(atReady) at ready(), \(runs.count - atReady) at a normal exit)"
    }

    private func table(_ measures: [Measure]) -> [String] {
        var table = Table(columns: [
            .init("", .left), .init("median", .right), .init("p90", .right), .init("min", .right), .init("max", .right),
            .init("MAD", .right), .init("outliers (kept in every figure)", .left),
        ])
        let completedCount = completedRuns.count
        var lastKind: Measure.Kind?
        for measure in measures {
            if measure.kind != lastKind && measure.kind != .launch {
                table.add([measure.kind == .phase ? "phases" : "spans (total per launch)"] + Array(repeating: "", count: 6))
            }
            lastKind = measure.kind
            guard let summary = DistributionSummary(measure.values) else { continue }
            var notes = summary.outliers.map { "\(measure.runs[$0]) \(String(format: "%.2f", measure.values[$0]))" }.joined(separator: ", ")
            if summary.count < completedCount { notes += (notes.isEmpty ? "" : "  ") + "(in \(summary.count) of \(completedCount) launches)" }
            table.add(
                [measure.kind == .launch ? measure.name : "  " + measure.name]
                    + [summary.median, summary.p90, summary.min, summary.max, summary.mad].map { String(format: "%.2f", $0) }
                    + [notes])
        }
        // Rows start at the left edge, as the lines around the table do.
        return table.render().map { String($0.dropFirst(2)) }
    }

    private func samplingLine(hz: Int) -> String {
        let rates = records.compactMap { $0.timeline?.sampling?.effectiveHz }
        guard let median = Statistics.median(rates) else {
            return "sampling: none recorded (COLDSTART_HZ=\(hz) was set; the app's Coldstart build does not sample)"
        }
        return "sampling: asked \(hz) Hz, effective median \(String(format: "%.0f", median)) Hz over \(rates.count) launches"
    }

    private func coldLines() -> [String] {
        var lines: [String] = []
        let evictions = records.compactMap(\.eviction)
        guard let last = evictions.last else { return ["cold: no launch was evicted"] }
        let before = evictions.map { Double(Self.knownResidency($0, \.residentBefore)) }
        let after = evictions.map { Double(Self.knownResidency($0, \.residentAfter)) }
        let size = last.reduce(0) { $0 + $1.bytes }
        let measured = last.filter { $0.residentAfter != nil }
        let measuredSize = measured.reduce(0) { $0 + $1.bytes }
        func mb(_ bytes: Double) -> String { String(format: "%.1f MB", bytes / 1_048_576) }
        let afterMedian = Statistics.median(after) ?? 0
        lines.append("cold: before each launch, advised the kernel to drop \(last.count) files (\(mb(Double(size)))): the executable, its loader and its libraries")
        if measured.isEmpty {
            lines.append("  in the page cache: cannot be measured (mincore reports every page of a file resident to a user who may not write it); the check below decides")
        } else {
            let scope = measured.count == last.count ? "" : " of the \(measured.count) files this user may write (mincore reports the other \(last.count - measured.count) fully resident to a user who may not write them, so their residency is unknown)"
            lines.append("  in the page cache\(scope): median \(mb(Statistics.median(before) ?? 0)) before, \(mb(afterMedian)) after (\(String(format: "%.0f", measuredSize > 0 ? afterMedian / Double(measuredSize) * 100 : 0))% stayed)")
        }
        if let note = evictionNote { lines.append("  \(note)") }
        let stayed = last.filter { ($0.residentAfter ?? 0) > 0 || $0.error != nil }.sorted { ($0.residentAfter ?? 0) > ($1.residentAfter ?? 0) }
        if !stayed.isEmpty {
            lines.append("  not evicted after the last advice (pages that are mapped by a running process, dirty or locked stay):")
            for file in stayed.prefix(12) {
                var line = "    \((file.path as NSString).lastPathComponent): \(mb(Double(file.residentAfter ?? 0))) of \(mb(Double(file.bytes)))"
                if let error = file.error { line += " (\(error))" }
                if let who = mappers[file.path] { line += ", mapped by \(who.prefix(4).joined(separator: ", "))\(who.count > 4 ? " and \(who.count - 4) more" : "")" }
                lines.append(line)
            }
            if stayed.count > 12 { lines.append("    … and \(stayed.count - 12) more (see --json)") }
        }
        lines.append("  check: \(coldCheck().text)")
        return lines
    }

    /// Bytes resident over the files whose residency `mincore` could tell.
    private static func knownResidency(_ files: [PageCache.FileEviction], _ field: KeyPath<PageCache.FileEviction, UInt64?>) -> UInt64 {
        files.reduce(0) { $0 + ($1[keyPath: field] ?? 0) }
    }

    /// Whether eviction took effect: pre-main major faults of the cold
    /// launches against the warm-up launches.
    private func coldCheck() -> (text: String, effective: Bool?, cold: Double?, warm: Double?) {
        let cold = records.compactMap { $0.timeline?.preMainMajorFaults }.map { Double($0) }
        let warm = warmups.compactMap { $0.timeline?.preMainMajorFaults }.map { Double($0) }
        guard let coldMedian = Statistics.median(cold) else {
            return ("no cold launch recorded its page faults", nil, nil, nil)
        }
        let coldText = "major page faults before main: median \(String(format: "%g", coldMedian)) in the cold launches"
        guard let warmMedian = Statistics.median(warm) else {
            return ("\(coldText); no warm-up launch to compare with (--warmup 0)", nil, coldMedian, nil)
        }
        if coldMedian > warmMedian {
            return ("\(coldText) vs \(String(format: "%g", warmMedian)) in the warm-up launches: eviction took effect", true, coldMedian, warmMedian)
        }
        return ("\(coldText), \(String(format: "%g", warmMedian)) in the warm-up launches: no rise, so these launches were effectively warm (the file system or kernel ignored the advice, or everything stayed mapped)", false, coldMedian, warmMedian)
    }

    func describe(_ record: RunRecord) -> String {
        Self.describe(record, timeout: options.timeout)
    }

    static func describe(_ record: RunRecord, timeout: Double?) -> String {
        let timeoutText = timeout.map { "(\(String(format: "%g", $0)) s)" } ?? ""
        let timedOut = record.timedOut ? " (killed by --timeout \(timeoutText))" : ""
        switch record.outcome {
        case .completed(let stopped): return stopped ? "completed; stopped after ready" : "completed"
        case .timedOutAfterReady:
            return "killed by --timeout \(timeoutText) after it reached ready() (not counted; --stop-after-ready ends a service that keeps running)"
        case .endedBeforeReady(let reason): return "ended before ready: \(reason)\(timedOut)"
        case .crashed(let signal): return "killed by \(signalName(signal)) before writing a timeline (a crash, or SIGKILL)\(timedOut)"
        case .noTimeline(let status): return "exited with status \(status) and no timeline"
        case .unreadable(let why): return "timeline unreadable: \(why)"
        }
    }

    static func signalName(_ signal: Int32) -> String {
        let names = [1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
                     9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM"]
        return names[Int(signal)] ?? "signal \(signal)"
    }

    /// `withoutProfiling` of the run's JSON, and its line of text.
    struct EstimateSummary: Encodable {
        var count: Int
        var of: Int
        var medianMs: Double?
        var minMs: Double?
        var maxMs: Double?
        /// Why the first launch without an estimate has none.
        var unknown: String?

        func text(phasesOnly: Bool) -> String {
            let what = phasesOnly
                ? "without profiling (--phases-only: the launch less its set-up phase; nothing sampled or watched)"
                : "without profiling (each report's estimate: the launch less Coldstart's cost on its critical path)"
            guard let medianMs, let minMs, let maxMs else { return "\(what): not known for any launch: \(unknown ?? "?")" }
            return "\(what): median \(String(format: "%.2f", medianMs)) ms, min \(String(format: "%.2f", minMs)), "
                + "max \(String(format: "%.2f", maxMs)) over \(count) launch\(count == 1 ? "" : "es")"
                + (count < of ? "; not known for \(of - count): \(unknown ?? "?")" : "")
        }
    }

    // MARK: JSON

    private struct JSONReport: Encodable {
        var executable: String
        var command: [String]
        var directory: String
        var clock = "CLOCK_MONOTONIC"
        var unit = "ms"
        var warmups: Int
        var runs: [JSONRun]
        var completed: Int
        var measures: [JSONMeasure]
        var withoutProfiling: EstimateSummary?
        var phasesOnly: Bool
        var cold: JSONCold?
        var loaderReference: JSONLoaderReference?
    }

    /// `LoaderReference`, in ms.
    private struct JSONLoaderReference: Encodable {
        var launches: Int
        var medianMs, p25Ms, p75Ms: Double
        var sampledLaunches: Int
        var sampledMedianMs: Double
        var addedMs: Double
        /// `LoaderReference.End`'s name: where the reference launches' span ends.
        var end: String
    }

    private struct JSONRun: Encodable {
        var label: String
        var file: String?
        var outcome: String
        var completed: Bool
        var exitStatus: Int32
        var timedOut: Bool
        var startSource: String?
        var startPrecisionMs: Double?
        var launchMs: Double?
        var samplingEffectiveHz: Double?
    }

    private struct JSONMeasure: Encodable {
        var name: String
        var kind: Measure.Kind
        var count: Int
        var medianMs, p90Ms, minMs, maxMs, madMs: Double
        var outliers: [JSONOutlier]
    }

    private struct JSONOutlier: Encodable {
        var run: String
        var ms: Double
    }

    private struct JSONCold: Encodable {
        var files: [PageCache.FileEviction]
        var residentBeforeBytes: [UInt64]
        var residentAfterBytes: [UInt64]
        /// Files whose residency `mincore` cannot tell this user (left out of the sums).
        var unmeasurableFiles: Int
        var mappedBy: [String: [String]]
        var note: String?
        var preMainMajorFaultsColdMedian: Double?
        var preMainMajorFaultsWarmMedian: Double?
        /// Nil when there was nothing to compare with.
        var effective: Bool?
        var check: String
    }

    func json() throws -> String {
        let runs = records.map { record in
            var completed = false
            if case .completed = record.outcome { completed = true }
            return JSONRun(
                label: record.label, file: record.timeline == nil ? nil : record.file, outcome: describe(record),
                completed: completed, exitStatus: record.status, timedOut: record.timedOut,
                startSource: record.timeline?.launch.startSource,
                startPrecisionMs: record.timeline.map { Double($0.launch.startPrecisionNs) / 1e6 },
                launchMs: record.timeline.map { Double($0.launchDurationNs) / 1e6 },
                samplingEffectiveHz: record.timeline?.sampling?.effectiveHz)
        }
        let measures = measures.compactMap { measure -> JSONMeasure? in
            guard let s = DistributionSummary(measure.values) else { return nil }
            return JSONMeasure(
                name: measure.name, kind: measure.kind, count: s.count, medianMs: s.median, p90Ms: s.p90, minMs: s.min, maxMs: s.max,
                madMs: s.mad, outliers: s.outliers.map { JSONOutlier(run: measure.runs[$0], ms: measure.values[$0]) })
        }
        var cold: JSONCold?
        if options.cold {
            let evictions = records.compactMap(\.eviction)
            let check = coldCheck()
            cold = JSONCold(
                files: evictions.last ?? [], residentBeforeBytes: evictions.map { Self.knownResidency($0, \.residentBefore) },
                residentAfterBytes: evictions.map { Self.knownResidency($0, \.residentAfter) },
                unmeasurableFiles: (evictions.last ?? []).filter { $0.residentAfter == nil }.count, mappedBy: mappers, note: evictionNote,
                preMainMajorFaultsColdMedian: check.cold, preMainMajorFaultsWarmMedian: check.warm, effective: check.effective,
                check: check.text)
        }
        let report = JSONReport(
            executable: executable, command: options.command, directory: directory, warmups: warmups.count, runs: runs,
            completed: runs.filter(\.completed).count, measures: measures, withoutProfiling: withoutProfiling,
            phasesOnly: options.phasesOnly, cold: cold,
            loaderReference: loaderReference.map {
                JSONLoaderReference(launches: $0.launches, medianMs: Double($0.medianNs) / 1e6, p25Ms: Double($0.p25Ns) / 1e6,
                                    p75Ms: Double($0.p75Ns) / 1e6, sampledLaunches: $0.sampledLaunches,
                                    sampledMedianMs: Double($0.sampledMedianNs) / 1e6, addedMs: Double($0.addedNs) / 1e6,
                                    end: $0.end.rawValue)
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(report), as: UTF8.self)
    }
}
