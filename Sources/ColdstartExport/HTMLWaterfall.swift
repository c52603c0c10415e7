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
        let markLanes = report.marks.map { mark -> Int in
            let start = x(mark.offsetMs), end = start + 7 + Double(Self.clip(mark.name, 30).count) * 7 + 10
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
            let tx = f(x(tick))
            out += "<line class=\"grid\" x1=\"\(tx)\" y1=\"\(f(top - 6))\" x2=\"\(tx)\" y2=\"\(f(height - 8))\"/>"
            out += "<text class=\"tick\" x=\"\(tx)\" y=\"\(f(top - 10))\">\(Self.tickLabel(tick)) ms</text>"
        }
        var y = top
        for (index, phase) in report.phases.enumerated() {
            let x0 = x(phase.startMs), x1 = max(x(phase.startMs + phase.durationMs), x0 + 1.5)
            var tip = "\(phase.name): \(fixed(phase.startMs, 2)) → \(fixed(phase.startMs + phase.durationMs, 2)) ms, "
                + "\(fixed(phase.durationMs, 2)) ms wall, \(fixed(phase.sharePercent, 1))% of the launch"
            if let usage = phase.usage {
                tip += "; CPU \(fixed(usage.cpuMs, 2)) ms (all threads); faults \(usage.minorFaults) minor / \(usage.majorFaults) major; "
                    + "switches \(usage.voluntarySwitches) voluntary / \(usage.involuntarySwitches) involuntary"
            }
            out += "<g class=\"phase k-\(e(phase.kind)) p\(index % 6)\"><title>\(e(tip))</title>"
            out += "<text class=\"label\" x=\"\(f(left - 8))\" y=\"\(f(y + 16))\">\(e(Self.clip(phase.name, 42)))</text>"
            out += "<rect x=\"\(f(x0))\" y=\"\(f(y + 3))\" width=\"\(f(x1 - x0))\" height=\"\(f(row - 6))\" rx=\"2\"/>"
            let figure = "\(fixed(phase.durationMs, 2)) ms · \(fixed(phase.sharePercent, 1))%"
            let inside = x1 - x0 > Double(figure.count) * 7 + 8
            let labelX = inside ? x0 + 5 : (x1 + 5 + Double(figure.count) * 7 > width ? x0 - 5 : x1 + 5)
            let anchor = !inside && labelX < x0 ? " end" : ""
            out += "<text class=\"fig\(inside ? " in" : "")\(anchor)\" x=\"\(f(labelX))\" y=\"\(f(y + 16))\">\(e(figure))</text></g>"
            y += row
        }
        if !report.marks.isEmpty {
            out += "<text class=\"label\" x=\"\(f(left - 8))\" y=\"\(f(y + 16))\">marks</text>"
            for (mark, lane) in zip(report.marks, markLanes) {
                let mx = f(x(mark.offsetMs)), my = y + Double(lane) * row
                let tip = "mark '\(mark.name)' at \(fixed(mark.offsetMs, 2)) ms" + (mark.phaseBoundary ? " (phase boundary)" : "")
                    + (mark.extended ? " (after ready())" : "") + ", thread \(mark.thread ?? String(mark.tid))"
                out += "<g class=\"mark\"><title>\(e(tip))</title>"
                out += "<line x1=\"\(mx)\" y1=\"\(f(top))\" x2=\"\(mx)\" y2=\"\(f(my + row - 4))\"/>"
                out += "<path d=\"M\(mx) \(f(my + 6)) l5 6 l-5 6 l-5 -6 z\"/>"
                out += "<text class=\"fig\" x=\"\(f(x(mark.offsetMs) + 7))\" y=\"\(f(my + 16))\">\(e(Self.clip(mark.name, 30)))</text></g>"
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
                let figure = "\(fixed(span.durationMs, 2)) ms"
                let inside = x1 + 5 + Double(figure.count) * 7 > width
                out += "<text class=\"fig\(inside ? " in" : "")\" x=\"\(f(inside ? x0 + 5 : x1 + 5))\" y=\"\(f(y + 16))\">\(e(figure))</text></g>"
                y += row
            }
        }
        out += "</svg>\n"
        phaseTable()
        out += "</section>\n"
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
            .number("CPU/wall"), .number("minor faults"), .number("major faults"), .number("vol. switches"), .number("invol. switches"),
        ])
        for phase in report.phases {
            let usage = phase.usage
            table.row([
                .text(phase.name), .ms(phase.startMs), .ms(phase.durationMs), .percent(phase.sharePercent),
                usage.map { .ms($0.cpuMs) } ?? .missing,
                usage.map { phase.durationMs > 0 ? .percent($0.cpuMs / phase.durationMs * 100, decimals: 0) : .missing } ?? .missing,
                usage.map { .count(Int($0.minorFaults)) } ?? .missing, usage.map { .count(Int($0.majorFaults)) } ?? .missing,
                usage.map { .count(Int($0.voluntarySwitches)) } ?? .missing, usage.map { .count(Int($0.involuntarySwitches)) } ?? .missing,
            ])
        }
        out += table.render(caption: "CPU is user + system time of all threads (it can exceed the wall time); faults and switches are counts, process-wide; – means no snapshot.")
    }
}
