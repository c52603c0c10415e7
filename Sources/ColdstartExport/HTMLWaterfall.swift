import ColdstartAnalysis
import Foundation

/// The phase waterfall: phases, marks and spans on one time axis, and the
/// phase table under it.
extension HTMLPage {
    /// Phases, marks and spans on one time axis, as SVG: it reads without
    /// JavaScript, and every bar carries its figures (and a tooltip).
    mutating func waterfall() {
        let total = max(report.launch.totalMs, 1e-9)
        let width = 1200.0, left = 300.0, right = 16.0, row = 24.0, top = 28.0
        let plot = width - left - right
        func x(_ ms: Double) -> Double { left + min(max(ms / total, 0), 1.02) * plot }
        let spans = Array(report.spans.prefix(12)).sorted { $0.startMs < $1.startMs }
        // Marks close in time would print their names over each other: each
        // goes on the first row whose last name ends before it starts.
        var laneEnds: [Double] = []
        let markLabels = report.marks.map { Self.markLabel(at: x($0.offsetMs), Self.clip($0.name, 30), width: width) }
        let markLanes = markLabels.map { label -> Int in
            let start = label.from, end = label.to + 10
            let lane = laneEnds.firstIndex { $0 <= start } ?? (laneEnds.count < 4 ? laneEnds.count : laneEnds.indices.min { laneEnds[$0] < laneEnds[$1] }!)
            if lane == laneEnds.count { laneEnds.append(end) } else { laneEnds[lane] = end }
            return lane
        }
        let rows = report.phases.count + laneEnds.count + (spans.isEmpty ? 0 : spans.count + 1)
        let height = top + Double(rows) * row + 12
        out += "<section id=\"waterfall\"><h2>Phase waterfall <span class=\"dim\">ms from process start; share of the "
            + "\(ms(report.launch.totalMs)) launch</span></h2>\n"
        out += "<svg class=\"waterfall\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"phase waterfall\">"
        // Axis.
        for tick in Self.ticks(total) {
            let tx = f(x(tick)), label = Self.tickLabel(tick) + " ms"
            // Centred on its line, unless that would pass the right edge.
            let end = x(tick) + Double(label.count) * Self.charWidth / 2 > width ? " end" : ""
            out += "<line class=\"grid\" x1=\"\(tx)\" y1=\"\(f(top - 6))\" x2=\"\(tx)\" y2=\"\(f(height - 8))\"/>"
            out += "<text class=\"tick\(end)\" x=\"\(tx)\" y=\"\(f(top - 10))\">\(label)</text>"
        }
        var y = top
        let shares = phaseShares
        for (index, phase) in report.phases.enumerated() {
            let x0 = x(phase.startMs), x1 = max(x(phase.startMs + phase.durationMs), x0 + 1.5)
            var tip = "\(phase.name): \(fixed(phase.startMs, 2)) → \(fixed(phase.startMs + phase.durationMs, 2)) ms, "
                + "\(fixed(phase.durationMs, 2)) ms wall, \(fixed(shares[index], 1))% of the launch"
            if let usage = phase.usage {
                tip += "; CPU \(fixed(usage.cpuMs, 2)) ms (all threads); faults \(usage.minorFaults) minor / \(usage.majorFaults) major; "
                    + "switches \(usage.voluntarySwitches) voluntary / \(usage.involuntarySwitches) involuntary"
            }
            out += "<g class=\"phase k-\(e(phase.kind)) p\(index % 6)\"><title>\(e(tip))</title>"
            out += "<text class=\"label\" x=\"\(f(left - 8))\" y=\"\(f(y + 16))\">\(e(Self.clip(phase.name, 42)))</text>"
            out += "<rect x=\"\(f(x0))\" y=\"\(f(y + 3))\" width=\"\(f(x1 - x0))\" height=\"\(f(row - 6))\" rx=\"2\"/>"
            let figure = "\(fixed(phase.durationMs, 2)) ms · \(fixed(shares[index], 1))%"
            out += figureText(figure, from: x0, to: x1, y: y + 16, width: width) + "</g>"
            y += row
        }
        if !report.marks.isEmpty {
            out += "<text class=\"label\" x=\"\(f(left - 8))\" y=\"\(f(y + 16))\">marks</text>"
            for ((mark, lane), label) in zip(zip(report.marks, markLanes), markLabels) {
                let mx = f(x(mark.offsetMs)), my = y + Double(lane) * row
                let tip = "mark '\(mark.name)' at \(fixed(mark.offsetMs, 2)) ms" + (mark.phaseBoundary ? " (phase boundary)" : "")
                    + (mark.extended ? " (after ready())" : "") + ", thread \(mark.thread ?? String(mark.tid))"
                out += "<g class=\"mark\"><title>\(e(tip))</title>"
                out += "<line x1=\"\(mx)\" y1=\"\(f(top))\" x2=\"\(mx)\" y2=\"\(f(my + row - 4))\"/>"
                out += "<path d=\"M\(mx) \(f(my + 6)) l5 6 l-5 6 l-5 -6 z\"/>"
                out += "<text class=\"fig\(label.end ? " end" : "")\" x=\"\(f(label.x))\" y=\"\(f(my + 16))\">"
                    + "\(e(Self.clip(mark.name, 30)))</text></g>"
            }
            y += Double(laneEnds.count) * row
        }
        if !spans.isEmpty {
            out += "<text class=\"label\" x=\"\(f(left - 8))\" y=\"\(f(y + 16))\">spans"
                + (report.spans.count > spans.count ? " (slowest \(spans.count) of \(report.spans.count))" : "") + "</text>"
            y += row
            for span in spans {
                let x0 = x(span.startMs), x1 = max(x(span.startMs + span.durationMs), x0 + 1.5)
                let tip = "span '\(span.name)': \(fixed(span.startMs, 2)) → \(fixed(span.startMs + span.durationMs, 2)) ms, "
                    + "\(fixed(span.durationMs, 2)) ms wall, thread \(span.thread ?? String(span.tid))"
                    + (span.unfinished ? ", UNFINISHED (still open at the end)" : "")
                out += "<g class=\"span\(span.unfinished ? " unfinished" : "")\"><title>\(e(tip))</title>"
                out += "<text class=\"label\" x=\"\(f(left - 8))\" y=\"\(f(y + 16))\">\(e(Self.clip(span.name, 42)))</text>"
                out += "<rect x=\"\(f(x0))\" y=\"\(f(y + 5))\" width=\"\(f(x1 - x0))\" height=\"\(f(row - 10))\" rx=\"2\"/>"
                out += figureText("\(fixed(span.durationMs, 2)) ms", from: x0, to: x1, y: y + 16, width: width) + "</g>"
                y += row
            }
        }
        out += "</svg>\n"
        phaseTable()
        out += "</section>\n"
    }

    /// What a character of the waterfall's 12 px text is taken to need, a
    /// little over the widest digits' 6.7 px in common sans-serif fonts.
    static let charWidth = 7.2

    /// A mark's name beside its line: to the right, or to the left when it
    /// would pass the right edge at `width`; `from`–`to` is the room it takes.
    static func markLabel(at x: Double, _ name: String, width: Double) -> (x: Double, end: Bool, from: Double, to: Double) {
        let length = Double(name.count) * charWidth
        if x + 7 + length <= width - 2 { return (x + 7, false, x, x + 7 + length) }
        return (x - 7, true, x - 7 - length, x)
    }

    /// A bar's figure: inside the bar when it fits, else after it, else
    /// (near the right edge) before it, so it never passes the edge.
    func figureText(_ figure: String, from x0: Double, to x1: Double, y: Double, width: Double) -> String {
        let length = Double(figure.count) * Self.charWidth
        let (x, style) = x1 - x0 > length + 8 ? (x0 + 5, "fig in") : x1 + 5 + length <= width - 2 ? (x1 + 5, "fig") : (x0 - 5, "fig end")
        return "<text class=\"\(style)\" x=\"\(f(x))\" y=\"\(f(y))\">\(e(figure))</text>"
    }

    /// The phases' shares of the launch to 0.1%, rounded as the text
    /// report rounds them: they add up as the phases do.
    var phaseShares: [Double] {
        let shares = report.phases.map(\.sharePercent)
        return LaunchReport.roundedParts(shares, total: shares.reduce(0, +), decimals: 1)
    }

    /// Round tick positions: 1, 2 or 5 × 10^k apart, about eight of them.
    static func ticks(_ total: Double) -> [Double] {
        guard total > 0, total.isFinite else { return [0] }
        let raw = total / 8
        let magnitude = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? raw
        return stride(from: 0, through: total * 1.0001, by: step).map { $0 }
    }

    static func tickLabel(_ value: Double) -> String {
        value.rounded() == value ? String(Int(value)) : fixed(value, value < 1 ? 2 : 1)
    }

    mutating func phaseTable() {
        var table = HTMLTable(columns: [
            .text("phase"), .number("start ms"), .number("wall ms"), .number("share"), .number("CPU ms"),
            .number("CPU/wall"), .number("user ms"), .number("kernel ms"), .number("kernel"), .number("Coldstart ms"), .number("exit ms"), .number("minor faults"), .number("major faults"), .number("vol. switches"), .number("invol. switches"),
        ])
        for (phase, share) in zip(report.phases, phaseShares) {
            let usage = phase.usage
            table.row([
                .text(phase.name), .ms(phase.startMs), .ms(phase.durationMs), .percent(share),
                usage.map { .ms($0.cpuMs) } ?? .missing,
                usage.map { phase.durationMs > 0 ? .percent($0.cpuMs / phase.durationMs * 100, decimals: 0) : .missing } ?? .missing,
                phase.kernel.map { .ms($0.userMs) } ?? .missing, phase.kernel.map { .ms($0.kernelMs) } ?? .missing,
                phase.kernel.map { .percent($0.kernelPercent, decimals: 0) } ?? .missing,
                phase.kernel.map { .ms($0.coldstartMs ?? 0) } ?? .missing, phase.kernel.map { .ms($0.exitMs ?? 0) } ?? .missing,
                usage.map { .count(Int($0.minorFaults)) } ?? .missing, usage.map { .count(Int($0.majorFaults)) } ?? .missing,
                usage.map { .count(Int($0.voluntarySwitches)) } ?? .missing, usage.map { .count(Int($0.involuntarySwitches)) } ?? .missing,
            ])
        }
        out += table.render(caption: "CPU is user + system time of all threads (it can exceed the wall time); user + kernel is the host's part: "
            + "user-mode samples × period, the rest (or kernel-mode samples × period) the kernel's; Coldstart: its own threads' CPU "
            + "and its launcher's before exec; exit: the kernel's exit after the last sample of a program without Coldstart; "
            + "faults and switches are counts, process-wide; – means no snapshot.")
    }
}
