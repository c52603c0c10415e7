import ColdstartAnalysis
import Foundation

extension ProfileReport {
    /// The sampled-stacks sections of the text report.
    package func text() -> String {
        lines(width: nil).map { LaunchReport.printable($0, limit: .max) }.joined(separator: "\n") + "\n"
    }

    /// Header (clock, rate, precision), functions overall and per phase, slow
    /// initializers, slow lazy globals, threads, call tree; tables and tree
    /// lines narrowed to `width` when given. Not `full`: the header and the
    /// top functions by self time only.
    func lines(width: Int?, full: Bool = true) -> [String] {
        var lines = headerLines()
        lines += [""] + functionLines(overall, title: "Top functions by self time, \(scope)", order: \.bySelf, width: width)
        guard full else { return lines }
        lines += [""] + functionLines(overall, title: "Top functions by total time, \(scope)", order: \.byTotal, width: width)
        lines += [""] + phaseLines(width: width)
        lines += [""] + initializerLines(width: width)
        lines += [""] + lazyGlobalLines(width: width)
        lines += [""] + threadLines(width: width)
        lines += [""] + callTreeLines(width: width)
        return lines
    }

    /// What the selection covers, for titles.
    private var scope: String {
        var parts: [String] = []
        if let phase = selection.phase { parts.append("phase '\(phase)'") }
        if let thread = selection.thread { parts.append("thread \(thread)") }
        let what = parts.isEmpty ? "whole launch" : parts.joined(separator: ", ")
        return "\(what) (\(Self.count(selection.samples)) = \(Self.ms(selection.ms)))"
    }

    private static func clockDescription(_ clock: String) -> String {
        switch clock {
        case "perf-task-clock": return "perf task clock: each thread's own CPU time in user mode"
        case "posix-cpu-timer": return "POSIX CPU-time timer: each thread's own CPU time, at most the kernel tick rate"
        case "wall-timer": return "wall-clock timer: elapsed time, on CPU or not"
        default: return clock
        }
    }

    private func headerLines() -> [String] {
        let perSample = Self.format(sampling.msPerSample, decimals: 3)
        var lines = [
            "Sampled stacks: \(Self.count(sampling.samples)) from \(Self.format(sampling.startMs, decimals: 2))"
                + (precision.clockStartedLateMs.map { " (clock running from \(Self.format($0, decimals: 2)))" } ?? "")
                + " to \(Self.format(sampling.stopMs, decimals: 2)) ms after process start (\(sampling.dropped) dropped; unwinder \(sampling.unwinder))",
            "  clock: \(sampling.clock) (\(Self.clockDescription(sampling.clock))); "
                + "\(Self.format(sampling.effectiveHz, decimals: 1)) Hz effective, \(Self.format(sampling.requestedHz, decimals: 0)) Hz asked"
                + (sampling.loweredHz.map { ", lowered to \(Self.format($0, decimals: 0)) Hz because the handler was slow" } ?? ""),
            "  every time below is samples × \(perSample) ms (\(sampling.periodMeaning))",
            "  precision: \(precision.rule)",
        ]
        if let coverage = coverageLine() { lines.insert(coverage, at: 2) }
        if selection.phase != nil || selection.thread != nil { lines.append("  selected: \(scope)") }
        lines += warnings.map { "  warning: \($0)" }
        return lines
    }

    /// What the samples may miss: threads never sampled, stacks libunwind
    /// could not walk, the buffer that bounds them (timelines from before
    /// the sampler recorded these have none of it).
    private func coverageLine() -> String? {
        var parts: [String] = []
        var threads = sampling.threadsSampled.map { ["\($0) sampled"] } ?? []
        if let missed = sampling.threadsMissed {
            threads.append("\(missed) missed" + (missed > 0 ? " (their CPU time is in no figure)" : ""))
        }
        if !threads.isEmpty { parts.append("threads: " + threads.joined(separator: ", ")) }
        if let failures = sampling.unwindFailures {
            parts.append("unwind failures: \(failures)" + (failures > 0 ? " (walked by frame pointer instead: callers may be missing)" : ""))
        }
        if let capacity = sampling.maxSamples { parts.append("buffer: \(Self.count(capacity))") }
        return parts.isEmpty ? nil : "  " + parts.joined(separator: "; ")
    }

    private func functionColumns(selfFirst: Bool) -> [Table.Column] {
        // A narrow terminal keeps the ordering figures and the second time,
        // and leaves out the second group's % and samples and the first sighting.
        let selfColumns: [Table.Column] = [
            .init("self ms", .right), .init("self %", .right, droppable: !selfFirst), .init("samples", .right, droppable: !selfFirst),
        ]
        let totalColumns: [Table.Column] = [
            .init("total ms", .right), .init("total %", .right, droppable: selfFirst), .init("samples", .right, droppable: selfFirst),
        ]
        return (selfFirst ? selfColumns + totalColumns : totalColumns + selfColumns)
            + [.init("first seen ms", .right, droppable: true), .init("function", .left, limit: 110), .init("module", .left)]
    }

    private func functionRow(_ row: FunctionTime, selfFirst: Bool) -> [String] {
        let selfCells = [Self.number(row.selfMs), Self.percent(row.selfPercent), "\(row.selfSamples)"]
        let totalCells = [Self.number(row.totalMs), Self.percent(row.totalPercent), "\(row.totalSamples)"]
        return (selfFirst ? selfCells + totalCells : totalCells + selfCells)
            + [Self.number(row.firstSeenMs), LaunchReport.functionName(row.name), row.module]
    }

    private func functionLines(_ table: FunctionTable, title: String, order: KeyPath<FunctionTable, [FunctionTime]>, width: Int?) -> [String] {
        let rows = table[keyPath: order]
        guard !rows.isEmpty else { return [title, "  (no function over the thresholds)"] }
        let selfFirst = order == \FunctionTable.bySelf
        var rendered = Table(columns: functionColumns(selfFirst: selfFirst))
        for row in rows { rendered.add(functionRow(row, selfFirst: selfFirst)) }
        return [title + thresholdNote] + rendered.render(width: width)
    }

    private var thresholdNote: String {
        var parts = ["top \(selection.top)"]
        if selection.minMs > 0 { parts.append("≥ \(Self.format(selection.minMs, decimals: 2)) ms") }
        if selection.minPercent > 0 { parts.append("≥ \(Self.format(selection.minPercent, decimals: 1))%") }
        return "; " + parts.joined(separator: ", ")
    }

    private func phaseLines(width: Int?) -> [String] {
        var lines = ["Per phase, by self time (percent of the phase's samples; phases by wall clock, CLOCK_MONOTONIC)"]
        for phase in phases {
            let span = "\(Self.format(phase.startMs, decimals: 2)) → " + (phase.endMs.map { Self.format($0, decimals: 2) } ?? "…") + " ms"
            let heading = "  '\(phase.name)' (\(span))"
            guard phase.sampled else {
                lines.append(heading + ": not sampled (sampling runs from the earliest init to the end of the launch)")
                continue
            }
            guard phase.functions.samples > 0 else {
                lines.append(heading + ": no samples")
                continue
            }
            lines.append(heading + ": \(Self.count(phase.functions.samples)) = \(Self.ms(phase.functions.ms))")
            var table = Table(columns: functionColumns(selfFirst: true))
            for row in phase.functions.bySelf { table.add(functionRow(row, selfFirst: true)) }
            lines += phase.functions.bySelf.isEmpty ? ["    (no function over the thresholds)"] : table.render(width: width.map { $0 - 2 }).map { "  " + $0 }
        }
        return lines
    }

    private func initializerLines(width: Int?) -> [String] {
        var lines = [
            "Slow initializers: \(Self.count(initializers.samples)) = \(Self.ms(initializers.ms)) under constructors "
                + "(a library's constructors, or the program's preinit and constructors; a constructor that loads another "
                + "library counts for both)",
        ]
        if initializers.unattributedSamples > 0 {
            lines.append("  \(Self.count(initializers.unattributedSamples)) of the library-initializers phase had no constructor on their stack "
                + "(the loader's own work, or a stack cut short in the loader)")
        }
        guard !initializers.libraries.isEmpty else { return lines + ["  (none over the thresholds)"] }
        var table = Table(columns: [
            .init("ms", .right), .init("%", .right), .init("samples", .right), .init("first seen ms", .right),
            .init("module", .left), .init("constructors (samples)", .left),
        ])
        for library in initializers.libraries {
            let constructors = library.constructors.map { "\(LaunchReport.functionName($0.name, limit: 60)) (\($0.samples))" }
            table.add([
                Self.number(library.ms), Self.percent(library.percent), "\(library.samples)", Self.number(library.firstSeenMs),
                library.module + (library.isExecutable ? " (the program)" : ""), constructors.joined(separator: ", "),
            ])
        }
        return lines + table.render(width: width)
    }

    private func lazyGlobalLines(width: Int?) -> [String] {
        let title = "Slow lazy globals (Swift one-time initializers, run by swift_once on first use)"
        guard !lazyGlobals.isEmpty else { return [title, "  (none over the thresholds)"] }
        var table = Table(columns: [
            .init("ms", .right), .init("%", .right), .init("samples", .right), .init("first seen ms", .right),
            .init("global", .left, limit: 80), .init("phases", .left),
        ])
        for global in lazyGlobals {
            table.add([
                Self.number(global.ms), Self.percent(global.percent), "\(global.samples)", Self.number(global.firstSeenMs),
                LaunchReport.printable(global.name, limit: .max), global.phases.map { "'\($0)'" }.joined(separator: ", "),
            ])
        }
        return [title] + table.render(width: width)
    }

    private func threadLines(width: Int?) -> [String] {
        var table = Table(columns: [
            .init("thread", .left), .init("samples", .right), .init("ms", .right), .init("%", .right),
            .init("seen ms", .right), .init("top self", .left),
        ])
        for thread in threads {
            let top = thread.topSelf.map { "\(LaunchReport.functionName($0.name, limit: 50)) (\($0.selfSamples))" }
            table.add([
                "\(LaunchReport.printable(thread.name, limit: 30)) (\(thread.tid))", "\(thread.samples)", Self.number(thread.ms),
                Self.percent(thread.percent), "\(Self.number(thread.firstMs)) → \(Self.number(thread.lastMs))",
                top.joined(separator: ", "),
            ])
        }
        return ["Threads (CPU each thread was sampled in)"] + table.render(width: width)
    }

    private func callTreeLines(width: Int?) -> [String] {
        var limits = ["\(selection.treeDepth) levels", "top \(selection.top) children", "nodes ≥ \(Self.format(selection.treeMinPercent, decimals: 1))%"]
        if selection.minMs > 0 { limits.append("≥ \(Self.format(selection.minMs, decimals: 2)) ms") }
        var lines = ["Call tree, top-down (total %, ms, samples, self samples; \(limits.joined(separator: ", ")))"]
        func walk(_ nodes: [CallNode], depth: Int) {
            func module(_ node: CallNode) -> String { node.module.isEmpty ? "" : "  [\(node.module)]" }
            let leads = nodes.map { node in
                "  \(Self.percent(node.percent).leftPadded(6))  \(Self.number(node.ms).leftPadded(9)) ms  "
                    + "\(String(node.samples).leftPadded(6))  \(String(node.selfSamples).leftPadded(6))  " + String(repeating: "  ", count: depth)
            }
            // A narrow terminal clips the name, never the figures or the module;
            // siblings clipped alike never read the same.
            let room = zip(nodes, leads).map { node, lead in width.map { max(12, $0 - lead.count - module(node).count) } ?? 110 }.min() ?? 110
            let names = Table.clipDistinct(nodes.map { LaunchReport.functionName($0.name) }, to: min(room, 110))
            for (index, node) in nodes.enumerated() {
                lines.append(leads[index] + names[index] + module(node))
                walk(node.children, depth: depth + 1)
            }
        }
        walk(callTree, depth: 0)
        if callTree.isEmpty { lines.append("  (no node over the thresholds)") }
        return lines
    }

    static func count(_ samples: Int) -> String { samples == 1 ? "1 sample" : "\(samples) samples" }
    private static func ms(_ value: Double) -> String { number(value) + " ms" }
    private static func number(_ value: Double) -> String { format(value, decimals: 2) }
    private static func percent(_ value: Double) -> String { format(value, decimals: 1) + "%" }
    private static func format(_ value: Double, decimals: Int) -> String { Figure.format(value, decimals: decimals) }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
