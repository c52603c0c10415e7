import ColdstartAnalysis
import Foundation

extension LaunchReport {
    /// The report for a terminal: header, phase waterfall, marks, the slowest
    /// spans, then the precision and completion lines. Every figure names its
    /// unit. `barWidth` is the waterfall's width in columns (by default 40, or
    /// what fits `style.width`); `spanLimit` how many spans to list. Tables
    /// are narrowed to `style.width` by clipping their longest names.
    ///
    /// `full: false` is the first look: the findings, the phases, the top
    /// functions and the slowest spans in at most `Finding.defaultWidth`
    /// columns, and one line naming what `--full` adds.
    package func text(barWidth: Int? = nil, spanLimit: Int = 10, style: TextStyle = TextStyle(), full: Bool = true) -> String {
        let width = full ? style.width : min(style.width ?? Finding.defaultWidth, Finding.defaultWidth)
        var lines: [String] = []
        // The answer first: the launch in one line, then the findings; the
        // rest is the evidence.
        let header = headerLines()
        lines += header.prefix(2)
        if let perfAdvice { lines += [""] + Finding.wrapped(perfAdvice.lines, width: width ?? Finding.defaultWidth) }
        if let findings { lines += [""] + Finding.lines(findings, width: width) }
        if let noSamples { lines += [""] + Finding.wrapped(noSamples, width: width ?? Finding.defaultWidth, continuation: "  ") }
        if let notice = profile?.precision.noticeLines, !notice.isEmpty {
            lines += [""] + Finding.wrapped(notice, width: width ?? Finding.defaultWidth)
        }
        lines += [""] + header.dropFirst(2)
        lines += [""] + fittedPhaseLines(barWidth: barWidth, width: width)
        guard full else {
            if !spans.isEmpty { lines += [""] + spanLines(limit: min(max(spanLimit, 0), 5), width: width) }
            if let profile { lines += [""] + profile.lines(width: width, full: false) }
            var more = ["marks", "all spans", "functions per phase", "initializers", "lazy globals", "threads", "call tree"]
            if runtimeCosts != nil { more.append("runtime costs") }
            if blockedTime != nil { more.append("blocked time") }
            if beforeMain != nil || loaderStatistics != nil { more.append("before main") }
            lines += [""] + footerLines() + ["", "More with --full: " + more.joined(separator: ", ") + "."]
            lines = Finding.wrapped(lines, width: width ?? Finding.defaultWidth)
            return lines.map { style.colored(Self.printable($0, limit: .max)) }.joined(separator: "\n") + "\n"
        }
        lines += beforeMainLines(width: width)
        if !marks.isEmpty { lines += [""] + markLines(width: width) }
        if !spans.isEmpty { lines += [""] + spanLines(limit: max(spanLimit, 0), width: width) }
        if let profile { lines += [""] + profile.lines(width: width) }
        if let runtimeCosts, !runtimeCosts.rows.isEmpty { lines += [""] + runtimeCosts.lines(width: width) }
        if let blockedTime { lines += [""] + blockedTime.textLines(width: width) }
        lines += [""] + footerLines()
        // In a terminal the sentences wrap as the tables are narrowed: to its width.
        if let width { lines = Finding.wrapped(lines, width: width) }
        // Names and paths come from the file: no control character reaches the terminal.
        return lines.map { style.colored(Self.printable($0, limit: .max)) }.joined(separator: "\n") + "\n"
    }

    /// The phase table with the widest waterfall (10 to 60 columns) that fits
    /// `width`, or `barWidth` (default 40) when given or when there is no width.
    /// A terminal too narrow even for a 10-column waterfall gets the resource
    /// columns in a second table.
    private func fittedPhaseLines(barWidth: Int?, width: Int?) -> [String] {
        guard barWidth == nil, let width else { return phaseLines(barWidth: max(barWidth ?? 40, 1), width: width, split: false) }
        func fits(_ lines: [String]) -> Bool { !lines.dropFirst().contains { $0.count > width } }
        for split in [false, true] {
            for columns in stride(from: 60, through: 10, by: -2) {
                let lines = phaseLines(barWidth: columns, width: nil, split: split)
                if fits(lines) { return lines }
            }
        }
        // Only the phase names are clipped, never the bar.
        return phaseLines(barWidth: 10, width: width, split: true)
    }

    private func headerLines() -> [String] {
        let name = URL(fileURLWithPath: launch.executable).lastPathComponent
        let end = launch.endReason == "ready" ? "ready()" : (launch.endPhase.flatMap(Self.endLabel) ?? launch.endReason)
        return [
            "Launch of \(name) (pid \(launch.pid)): \(Self.ms(launch.totalMs)) from process start to \(end)"
                + (launch.completed ? "" : " — NOT completed"),
            "  mode: \(launch.modeDescription)",
            "  clock \(launch.clock); start \(launch.startPrecision)",
        ] + (launch.profilerSetupMs.map { ["  of which \(Self.ms($0)) was Coldstart's own set-up (phase 'Coldstart set-up')"] } ?? [])
            + (launch.withoutProfiling.map { ["  " + $0.text] } ?? []) + [
            // A program that never called into Coldstart's Swift API (or does not link it) records no version.
            "  \(launch.executable) · kernel \(launch.kernelRelease)" + (launch.swiftVersion == "unknown" ? "" : " · Swift \(launch.swiftVersion)"),
        ]
    }

    /// "b" of a phase named "a → b".
    private static func endLabel(_ phase: String) -> String? {
        phase.components(separatedBy: " → ").last
    }

    private func phaseLines(barWidth: Int, width: Int?, split: Bool) -> [String] {
        let waterfall: [Table.Column] = [
            .init("phase", .left), .init("start ms", .right), .init("wall ms", .right), .init("share", .right),
            .init("waterfall", .left),
        ]
        let resources: [Table.Column] = [
            .init("CPU ms", .right), .init("CPU/wall", .right), .init("user+kernel ms", .right), .init("kernel", .right), .init("Coldstart ms", .right),
            .init("faults minor/major", .right), .init("switches vol/invol", .right),
        ]
        var table = Table(columns: split ? waterfall : waterfall + resources, flexible: 0)
        var usageTable = Table(columns: [.init("phase", .left)] + resources)
        // Rounded so that the printed shares add up as the phases do (100%
        // when they cover the launch).
        let shares = Self.roundedParts(phases.map(\.sharePercent), total: phases.map(\.sharePercent).reduce(0, +), decimals: 1)
        for (phase, share) in zip(phases, shares) {
            let usage = phase.usage
            let userKernel: String = phase.kernel.map {
                Self.number($0.userMs) + "+" + Self.number($0.kernelMs) + ($0.exitMs.map { " +" + Self.number($0) + " exit" } ?? "")
            } ?? "–"
            let coldstart: String = phase.kernel.map { $0.coldstartMs.map(Self.number) ?? "0" } ?? "–"
            let kernelShare: String = phase.kernel.map { Figure.format($0.kernelPercent, decimals: 0) + "%" } ?? "–"
            let usageCells: [String] = [
                usage.map { Self.number($0.cpuMs) } ?? "–",
                usage.map { phase.durationMs > 0 ? Figure.format($0.cpuMs / phase.durationMs * 100, decimals: 0) + "%" : "–" } ?? "–",
                userKernel, kernelShare, coldstart,
                usage.map { "\($0.minorFaults)/\($0.majorFaults)" } ?? "–",
                usage.map { "\($0.voluntarySwitches)/\($0.involuntarySwitches)" } ?? "–",
            ]
            let cells = [
                Self.printable(phase.name),
                Self.number(phase.startMs),
                Self.number(phase.durationMs),
                Figure.format(share, decimals: 1) + "%",
                "|" + Self.bar(start: phase.startMs, duration: phase.durationMs, total: launch.totalMs, width: barWidth) + "|",
            ]
            table.add(split ? cells : cells + usageCells)
            usageTable.add([Self.printable(phase.name)] + usageCells)
        }
        let title = "Phases (times in ms from process start; share of the \(Self.ms(launch.totalMs)) launch; "
            + "waterfall \(barWidth) columns = \(Self.ms(launch.totalMs)); CPU is user+system of all threads; "
            + "user+kernel splits the host's part: user-mode samples × period, and the rest (or kernel-mode samples) the kernel's, "
            + "with the kernel's exit after the last sample apart (+ exit); Coldstart: its own threads' CPU and its launcher's before exec; "
            + "faults and context switches are counts)"
        return [title] + table.render(width: width) + (split ? usageTable.render(width: width) : [])
    }

    private func markLines(width: Int?) -> [String] {
        var table = Table(columns: [
            .init("mark", .left), .init("at ms", .right), .init("where", .left), .init("thread", .left),
        ])
        for mark in marks {
            let place: String
            if mark.extended {
                place = "extended (after ready())"
            } else if let phase = mark.phase {
                place = (mark.phaseBoundary ? "ends '" : "in '") + Self.printable(phase) + "'"
            } else {
                place = "outside the launch"
            }
            table.add([Self.printable(mark.name), Self.number(mark.offsetMs), place, Self.thread(mark.tid, mark.thread)])
        }
        return ["Marks (ms from process start)"] + table.render(width: width)
    }

    private func spanLines(limit: Int, width: Int?) -> [String] {
        var table = Table(columns: [
            .init("span", .left), .init("wall ms", .right), .init("from ms", .right), .init("began in phase", .left),
            .init("thread", .left), .init("", .left),
        ])
        for span in spans.prefix(limit) {
            var notes: [String] = []
            if span.unfinished { notes.append("UNFINISHED (still open when the launch ended)") }
            if span.extended { notes.append("extended (after ready())") }
            if let endTid = span.endTid { notes.append("ended on " + Self.thread(endTid, span.endThread)) }
            if let parts = span.ranOn {
                notes.append("ran on " + parts.map { "\(Self.printable($0.thread)) from \(Self.number($0.startMs))" }.joined(separator: ", "))
            }
            table.add([
                Self.printable(span.name), Self.number(span.durationMs), Self.number(span.startMs),
                span.phase.map { "'\(Self.printable($0))'" } ?? "–", Self.thread(span.tid, span.thread), notes.joined(separator: "; "),
            ])
        }
        let title = spans.count > limit
            ? "Slowest spans (top \(limit) of \(spans.count); ms)"
            : "Slowest spans (\(spans.count); ms)"
        return [title] + table.render(width: width)
    }

    private func footerLines() -> [String] {
        var lines = [
            "Start time: \(launch.startPrecision)",
            "Launch: \(launch.completion)",
        ]
        if let window = launch.extensionMs {
            lines.append("Extended launch: marks after ready() were recorded for \(Self.ms(window)) (COLDSTART_EXTEND_MS)")
        }
        if launch.droppedEvents > 0 || launch.droppedNameBytes > 0 {
            lines.append("Dropped: \(launch.droppedEvents) events and \(launch.droppedNameBytes) name bytes"
                + " (the recorder was full; marks and spans are missing)")
        }
        if launch.notUtf8Bytes > 0 {
            lines.append("Not UTF-8: \(launch.notUtf8Bytes) byte\(launch.notUtf8Bytes == 1 ? "" : "s") of names or paths, "
                + "each shown as \u{FFFD} (a path so changed names no file: its frames stay unnamed)")
        }
        if !launch.setAside.isEmpty {
            lines.append("Set aside (out of range; the rest of the file is used): " + launch.setAside.joined(separator: "; "))
        }
        return lines
    }

    private static func thread(_ tid: Int, _ name: String?) -> String {
        guard let name, name != "thread \(tid)" else { return "thread \(tid)" }
        return "\(printable(name)) (\(tid))"
    }

    /// A name from the timeline fit for one table cell: control characters
    /// would break the row, and a 255-byte name would stretch every row.
    static func printable(_ name: String, limit: Int = 60) -> String {
        // Printable ASCII holds no control character and has no more
        // characters than bytes: no Unicode look-up per scalar, no count of
        // characters (each was a tenth of the HTML page's data).
        let cleaned = name.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) ? name : String(String.UnicodeScalarView(name.unicodeScalars.map {
            $0.properties.generalCategory == .control ? "?" : $0
        }))
        return cleaned.utf8.count > limit && cleaned.count > limit ? String(cleaned.prefix(limit - 1)) + "…" : cleaned
    }

    /// A function's name fit for a table cell: as a person reads it
    /// (`RuntimeCostClassifier.displayName`), printable, whole; a table
    /// column (`Table.Column.limit`) or `limit` clips it with `Table.clip`,
    /// which keeps the end that tells two functions apart.
    package static func functionName(_ name: String, limit: Int = .max) -> String {
        Table.clip(printable(RuntimeCostClassifier.displayName(name), limit: .max), to: limit)
    }

    private static func ms(_ value: Double) -> String { number(value) + " ms" }
    private static func number(_ value: Double) -> String { Figure.format(value, decimals: 2) }

    /// One waterfall row: blank up to the phase's start, then blocks for its
    /// length (at least one, so a short phase stays visible).
    static func bar(start: Double, duration: Double, total: Double, width: Int) -> String {
        guard total > 0, start.isFinite, duration.isFinite else { return String(repeating: " ", count: width) }
        func column(_ ms: Double) -> Int { Int((min(max(ms / total, 0), 1) * Double(width)).rounded()) }
        var from = column(start)
        var to = column(start + max(duration, 0))
        if to <= from && duration > 0 {
            if from >= width { from = width - 1 }
            to = from + 1
        }
        return String(repeating: " ", count: from)
            + String(repeating: "█", count: to - from)
            + String(repeating: " ", count: width - to)
    }
}
