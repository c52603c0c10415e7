import ColdstartAnalysis
import Foundation

/// `coldstart report FILE --html OUT`: the launch as one self-contained page.
///
/// Everything on it comes from one `LaunchAnalysis`: the `LaunchReport` the
/// text report prints and the `SampledStacks` of the same selection. The page
/// adds no figure of its own. The waterfall (inline SVG) and the tables are
/// rendered here, so they read without JavaScript; the flame chart and the
/// flame graph are drawn by the page's inline script from the JSON embedded
/// in it. Nothing is loaded from anywhere: no script, style, font or image
/// outside the file.
public enum HTMLReport {
    /// The page. The stacks (the report's selection) feed the flame chart
    /// and flame graph; an unsampled launch has the launch sections only.
    /// `source` names the timeline in the footer.
    public static func render(_ analysis: LaunchAnalysis, source: String) -> String {
        var page = Page(report: analysis.report, stacks: analysis.stacks, source: source)
        return page.render()
    }
}

private struct Page {
    let report: LaunchReport
    let stacks: SampledStacks?
    let source: String
    var out = ""

    init(report: LaunchReport, stacks: SampledStacks?, source: String) {
        self.report = report
        self.stacks = stacks
        self.source = source
        out.reserveCapacity(1 << 20)
    }

    mutating func render() -> String {
        let launch = report.launch
        let name = URL(fileURLWithPath: launch.executable).lastPathComponent
        out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        out += "<title>\(e("Launch of \(name): \(ms(launch.totalMs))"))</title>\n<style>\(HTMLAssets.style)</style></head>\n<body>\n"
        header()
        waterfall()
        if let profile = report.profile, let stacks {
            flameSections(profile, stacks)
            functionSections(profile)
        }
        if let blocked = report.blockedTime { blockedSection(blocked) }
        if !report.marks.isEmpty { marksTable() }
        if !report.spans.isEmpty { spansTable() }
        metadata()
        out += "<footer>Made by <code>coldstart report --html</code> from \(e(source)). Every time is CLOCK_MONOTONIC, "
            + "in milliseconds from the process start; sampled times are samples × one sampling period.</footer>\n"
        if let stacks { embedData(stacks) }
        out += "<script>\(HTMLAssets.script)</script>\n</body></html>\n"
        return out
    }

    // MARK: Header and metadata

    mutating func header() {
        let launch = report.launch
        let name = URL(fileURLWithPath: launch.executable).lastPathComponent
        let end = launch.endReason == "ready" ? "ready()" : (launch.endPhase?.components(separatedBy: " → ").last ?? launch.endReason)
        out += "<header><h1>Launch of \(e(name)) <span class=\"dim\">pid \(launch.pid)</span>: "
            + "\(ms(launch.totalMs)) from process start to \(e(end))</h1>\n"
        out += "<p class=\"\(launch.completed ? "ok" : "bad")\">\(e(launch.completion.prefix(1).uppercased() + launch.completion.dropFirst()))</p>\n"
        var facts = ["start: \(launch.startPrecision)", "clock \(launch.clock)"]
        if let setup = launch.profilerSetupMs {
            facts.append("\(ms(setup)) of it Coldstart's own set-up (without profiling, about \(ms(launch.totalMs - setup)))")
        }
        if let profile = report.profile {
            let s = profile.sampling
            facts.append("\(s.samples) samples at \(fixed(s.effectiveHz, 1)) Hz effective (\(fixed(s.requestedHz, 0)) asked, "
                + "\(s.clock)); \(s.dropped) dropped; one sample = \(fixed(s.msPerSample, 3)) ms")
        }
        out += "<p class=\"dim\">\(facts.map(e).joined(separator: " · "))</p>\n"
        if let profile = report.profile, profile.selection.phase != nil || profile.selection.thread != nil {
            var parts: [String] = []
            if let phase = profile.selection.phase { parts.append("phase '\(phase)'") }
            if let thread = profile.selection.thread { parts.append("thread \(thread)") }
            out += "<p class=\"note\">Sampled sections show \(e(parts.joined(separator: ", "))) only: "
                + "\(profile.selection.samples) samples = \(ms(profile.selection.ms)).</p>\n"
        }
        for warning in report.profile?.warnings ?? [] { out += "<p class=\"warn\">warning: \(e(warning))</p>\n" }
        out += "<nav>" + [("waterfall", "Waterfall"), ("flamechart", "Flame chart"), ("flamegraph", "Flame graph"),
                          ("functions", "Functions"), ("initializers", "Initializers"), ("globals", "Lazy globals"),
                          ("threads", "Threads"), ("blocked", "Blocked time"), ("marks", "Marks"), ("spans", "Spans"),
                          ("metadata", "Metadata")]
            .map { "<a href=\"#\($0.0)\">\($0.1)</a>" }.joined(separator: " ") + "</nav></header>\n"
    }

    mutating func metadata() {
        let launch = report.launch
        var rows: [(String, String)] = [
            ("executable", launch.executable), ("pid", "\(launch.pid)"), ("kernel", launch.kernelRelease),
            ("Swift", launch.swiftVersion), ("clock", launch.clock),
            ("process start", "\(launch.startSource): \(launch.startPrecision)"),
            ("launch", launch.completion),
            ("total", ms(launch.totalMs)),
        ]
        if let earliest = launch.earliestInitMs { rows.append(("earliest init (.preinit_array)", ms(earliest))) }
        rows.append(("main (first constructor of the program)", ms(launch.mainMs)))
        if let ready = launch.readyMs { rows.append(("ready()", ms(ready))) }
        if let window = launch.extensionMs { rows.append(("extension window", ms(window))) }
        rows.append(("dropped events / name bytes", "\(launch.droppedEvents) / \(launch.droppedNameBytes)"))
        if let profile = report.profile {
            let s = profile.sampling
            rows += [
                ("sampling clock", s.clock), ("unwinder", s.unwinder),
                ("rate", "\(fixed(s.effectiveHz, 1)) Hz effective, \(fixed(s.requestedHz, 0)) Hz asked"
                    + (s.loweredHz.map { ", lowered to \(fixed($0, 0)) Hz (slow handler)" } ?? "")),
                ("one sample", "\(fixed(s.msPerSample, 3)) ms (every sampled time is samples × this, ±1 sample)"),
                ("samples", "\(s.samples), \(s.dropped) dropped"),
                ("sampling window", "\(fixed(s.startMs, 2)) → \(fixed(s.stopMs, 2)) ms"),
            ]
        }
        out += "<section id=\"metadata\"><h2>Metadata</h2><table class=\"meta\">"
        for (key, value) in rows { out += "<tr><th>\(e(key))</th><td>\(e(value))</td></tr>" }
        out += "</table></section>\n"
    }

    // MARK: Waterfall

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

    // MARK: Flame chart and flame graph

    mutating func flameSections(_ profile: ProfileReport, _ stacks: SampledStacks) {
        let thread = stacks.samples.contains { $0.tid == stacks.mainThread } ? stacks.mainThread : stacks.threads.first
        let threadName = thread.map { "\(stacks.threadNames[$0] ?? "thread \($0)") (tid \($0))" } ?? "none"
        out += "<section id=\"profile\"><div class=\"search\"><label>Search functions "
            + "<input id=\"search\" type=\"search\" placeholder=\"name or part of it\" autocomplete=\"off\"></label> "
            + "<span id=\"match\" class=\"dim\"></span></div>\n"
        out += "<noscript><p class=\"note\">The flame chart and flame graph are drawn by the page's script; "
            + "the tables below read without it.</p></noscript>\n"
        out += "<div id=\"flamechart\" class=\"flame\"><h2>Flame chart of \(e(threadName)), in time order "
            + "<span class=\"dim\">same axis as the waterfall; a slice is a run of consecutive samples with that function "
            + "at that depth; click to zoom, click the background to go back</span></h2>"
            + "<div class=\"bar\"><button type=\"button\" data-reset=\"chart\">reset zoom</button> <span class=\"dim range\"></span></div>"
            + "<canvas aria-label=\"flame chart\"></canvas></div>\n"
        out += "<div id=\"flamegraph\" class=\"flame\"><h2>Flame graph, all selected samples "
            + "<span class=\"dim\">\(profile.selection.samples) samples = \(ms(profile.selection.ms)); width is samples, "
            + "callers above callees; click to zoom</span></h2>"
            + "<div class=\"bar\"><button type=\"button\" data-reset=\"graph\">reset zoom</button> <span class=\"dim range\"></span></div>"
            + "<canvas aria-label=\"flame graph\"></canvas></div>\n"
        out += "<div id=\"tip\" class=\"tip\" hidden></div></section>\n"
    }

    /// The data the script draws: functions, the phases, one thread's runs in
    /// time order and the whole call tree, flattened.
    mutating func embedData(_ stacks: SampledStacks) {
        var json = JSONText(capacity: stacks.samples.count * 24)
        var moduleIndex: [String: Int] = [:]
        var moduleNames: [String] = []
        var functionIndex: [String: Int] = [:]
        var functions: [(String, Int)] = []
        func function(_ name: String, _ module: String) -> Int {
            let key = module + "\u{1}" + name
            if let id = functionIndex[key] { return id }
            let moduleID = moduleIndex[module] ?? moduleNames.count
            if moduleID == moduleNames.count { moduleIndex[module] = moduleID; moduleNames.append(module) }
            functions.append((name, moduleID))
            functionIndex[key] = functions.count - 1
            return functions.count - 1
        }
        var ids: [Int: Int] = [:]
        func id(_ stacked: Int) -> Int {
            if let known = ids[stacked] { return known }
            let new = function(stacks.functions[stacked].name, stacks.moduleName(of: stacked))
            ids[stacked] = new
            return new
        }

        let thread = stacks.samples.contains { $0.tid == stacks.mainThread } ? stacks.mainThread : stacks.threads.first
        json.raw("{\"total\":")
        json.number(report.launch.totalMs, decimals: 3)
        json.raw(",\"msPerSample\":")
        json.number(stacks.nsPerSample / 1e6, decimals: 6)
        json.raw(",\"samples\":")
        json.int(stacks.samples.count)
        json.raw(",\"phases\":[")
        for (index, phase) in report.phases.enumerated() {
            json.raw(index == 0 ? "[" : ",[")
            json.string(phase.name)
            json.raw(",")
            json.number(phase.startMs)
            json.raw(",")
            json.number(phase.startMs + phase.durationMs)
            json.raw("]")
        }
        // Runs: [function, depth, start µs, duration µs, samples] flattened.
        json.raw("],\"chart\":[")
        var first = true
        for run in thread.map({ stacks.runs(thread: $0) }) ?? [] {
            json.raw(first ? "" : ",")
            first = false
            json.int(id(run.function)); json.raw(",")
            json.int(run.depth); json.raw(",")
            json.int((run.startNs + 500) / 1000); json.raw(",")
            json.int(max(1, (run.endNs - run.startNs + 500) / 1000)); json.raw(",")
            json.int(run.samples)
        }
        // Call tree in pre-order: [function, depth, samples, self samples] flattened.
        json.raw("],\"graph\":[")
        first = true
        var pending: [(ProfileReport.CallNode, Int)] = stacks.callTree().reversed().map { ($0, 0) }
        while let (node, depth) = pending.popLast() {
            json.raw(first ? "" : ",")
            first = false
            json.int(function(node.name, node.module)); json.raw(",")
            json.int(depth); json.raw(",")
            json.int(node.samples); json.raw(",")
            json.int(node.selfSamples)
            pending += node.children.reversed().map { ($0, depth + 1) }
        }
        json.raw("],\"modules\":[")
        for (index, module) in moduleNames.enumerated() {
            if index > 0 { json.raw(",") }
            json.string(module)
        }
        json.raw("],\"functions\":[")
        for (index, entry) in functions.enumerated() {
            json.raw(index == 0 ? "[" : ",[")
            json.string(entry.0)
            json.raw(",")
            json.int(entry.1)
            json.raw("]")
        }
        json.raw("]}")
        out += "<script type=\"application/json\" id=\"coldstart-data\">"
        out += json.text
        out += "</script>\n"
    }

    // MARK: Tables

    mutating func functionSections(_ profile: ProfileReport) {
        // Top by self and top by total, together: each row has both figures,
        // so sorting on either column shows that column's top rows.
        var rows = profile.overall.bySelf
        var seen = Set(rows.map { $0.module + "\u{1}" + $0.name })
        for row in profile.overall.byTotal where seen.insert(row.module + "\u{1}" + row.name).inserted { rows.append(row) }
        out += "<section id=\"functions\"><h2>Functions <span class=\"dim\">top \(profile.selection.top) by self time and by "
            + "total time, \(profile.overall.samples) samples = \(ms(profile.overall.ms)); click a heading to sort</span></h2>\n"
        out += functionTable(rows, caption: "Self: the function was the leaf (running). Total: anywhere on the stack, once per sample. First seen: ms after process start.")

        out += "<h3>Per phase</h3>\n"
        for phase in profile.phases {
            let span = "\(fixed(phase.startMs, 2)) → " + (phase.endMs.map { fixed($0, 2) } ?? "…") + " ms"
            let state = !phase.sampled ? "not sampled (sampling starts at the earliest init)"
                : phase.functions.samples == 0 ? "no samples" : "\(phase.functions.samples) samples = \(ms(phase.functions.ms))"
            out += "<details class=\"phase\"\(phase.functions.samples > 0 ? "" : " disabled")><summary>"
                + "<b>\(e(phase.name))</b> <span class=\"dim\">\(e(span)) · \(e(state))</span></summary>"
            if phase.functions.samples > 0 { out += functionTable(phase.functions.bySelf, caption: nil) }
            out += "</details>\n"
        }
        out += "</section>\n"

        initializersTable(profile.initializers)
        globalsTable(profile.lazyGlobals)
        threadsTable(profile.threads)
    }

    func functionTable(_ rows: [ProfileReport.FunctionTime], caption: String?) -> String {
        var table = HTMLTable(columns: [
            .number("self ms"), .number("self %"), .number("self samples"), .number("total ms"), .number("total %"),
            .number("total samples"), .number("first seen ms"), .text("function"), .text("module"),
        ])
        for row in rows {
            table.row([
                .ms(row.selfMs), .percent(row.selfPercent), .count(row.selfSamples), .ms(row.totalMs), .percent(row.totalPercent),
                .count(row.totalSamples), .ms(row.firstSeenMs), .name(row.name), .text(row.module),
            ])
        }
        return table.render(caption: caption)
    }

    mutating func initializersTable(_ initializers: ProfileReport.Initializers) {
        out += "<section id=\"initializers\"><h2>Slow initializers <span class=\"dim\">\(initializers.samples) samples = "
            + "\(ms(initializers.ms)) under constructors (a library's, or the program's preinit and constructors)</span></h2>\n"
        if initializers.unattributedSamples > 0 {
            out += "<p class=\"dim\">\(initializers.unattributedSamples) samples of the library-initializers phase had no constructor "
                + "on their stack (the loader's own work, or a stack the unwinder cut short).</p>\n"
        }
        var table = HTMLTable(columns: [
            .number("ms"), .number("%"), .number("samples"), .number("first seen ms"), .text("module"), .text("constructors (samples)"),
        ])
        for library in initializers.libraries {
            table.row([
                .ms(library.ms), .percent(library.percent), .count(library.samples), .ms(library.firstSeenMs),
                .text(library.module + (library.isExecutable ? " (the program)" : ""), title: library.path),
                .name(library.constructors.map { "\($0.name) (\($0.samples))" }.joined(separator: ", ")),
            ])
        }
        out += table.render(caption: nil, empty: "none over the thresholds") + "</section>\n"
    }

    mutating func globalsTable(_ globals: [ProfileReport.LazyGlobal]) {
        out += "<section id=\"globals\"><h2>Slow lazy globals <span class=\"dim\">Swift globals initialised on first use "
            + "(one-time initializers under swift_once)</span></h2>\n"
        var table = HTMLTable(columns: [
            .number("ms"), .number("%"), .number("samples"), .number("first seen ms"), .text("global"), .text("phases"),
        ])
        for global in globals {
            table.row([
                .ms(global.ms), .percent(global.percent), .count(global.samples), .ms(global.firstSeenMs),
                .name(global.name), .text(global.phases.map { "'\($0)'" }.joined(separator: ", ")),
            ])
        }
        out += table.render(caption: nil, empty: "none over the thresholds") + "</section>\n"
    }

    mutating func threadsTable(_ threads: [ProfileReport.ThreadProfile]) {
        out += "<section id=\"threads\"><h2>Threads <span class=\"dim\">CPU each thread was sampled in</span></h2>\n"
        var table = HTMLTable(columns: [
            .text("thread"), .number("tid"), .number("samples"), .number("ms"), .number("%"), .number("first ms"), .number("last ms"),
            .text("top self (samples)"),
        ])
        for thread in threads {
            table.row([
                .text(thread.name), .count(thread.tid), .count(thread.samples), .ms(thread.ms), .percent(thread.percent),
                .ms(thread.firstMs), .ms(thread.lastMs),
                .name(thread.topSelf.map { "\($0.name) (\($0.selfSamples))" }.joined(separator: ", ")),
            ])
        }
        out += table.render(caption: nil) + "</section>\n"
    }

    /// Why the main thread was not running: the same tables as the text report.
    mutating func blockedSection(_ blocked: LaunchReport.BlockedTime) {
        out += "<section id=\"blocked\"><h2>Why the main thread was not running <span class=\"dim\">CPU and run-queue times "
            + "are the kernel's counters (exact); a blocked time's cause is known to one look, \(e(ms(blocked.watcher.lookPeriodMs)))"
            + "</span></h2>\n"
        var phases = HTMLTable(columns: [
            .text("phase"), .number("wall ms"), .number("running ms"), .number("waiting for CPU ms"), .number("runnable threads"),
            .number("blocked ms"), .number("not watched ms"), .text("blocked mostly on"),
        ])
        for split in [blocked.launch] + blocked.phases {
            phases.row([
                .text(split.name), .ms(split.wallMs), .ms(split.runningMs), .ms(split.runQueueMs),
                split.runQueueMs < 0.05 ? .missing
                    : split.runnableThreads.map { .text(fixed($0, 1) + (blocked.watcher.cpus.map { " / \($0) CPUs" } ?? "")) } ?? .missing,
                .ms(split.blockedMs), .ms(split.notWatchedMs),
                .name(split.blocked.first.map { "\($0.what) (\(fixed($0.ms, 2)) ms)" } ?? "–"),
            ])
        }
        out += phases.render(caption: "runnable threads: the process's runnable threads, on average, while the main thread was runnable (itself included)")
        var sites = HTMLTable(columns: [.number("ms"), .number("blocks"), .text("blocked on"), .text("in"), .text("stack, leaf first")])
        for site in blocked.callSites {
            sites.row([.ms(site.ms), .count(site.count), .text(site.what), .name(site.function ?? "–"),
                       .name(site.stack.joined(separator: " ← "))])
        }
        out += "<h3>Where the main thread blocked</h3>\n" + sites.render(caption: nil, empty: "it never blocked while watched")
        var functions = HTMLTable(columns: [.number("off-CPU ms"), .number("%"), .number("blocks"), .text("function"), .text("module")])
        for function in blocked.offCPUFunctions {
            functions.row([.ms(function.ms), .percent(function.percent), .count(function.blocks), .name(function.name), .text(function.module)])
        }
        out += "<h3>Off-CPU time by function <span class=\"dim\">blocked with the function on the stack; not CPU time</span></h3>\n"
            + functions.render(caption: nil, empty: "no stacks")
        var files = HTMLTable(columns: [.number("ms"), .number("calls"), .text("operations"), .text("path")])
        for file in blocked.files {
            files.row([.ms(file.ms), .count(file.calls), .text(file.operations.joined(separator: ", ")), .name(file.path)])
        }
        out += "<h3>Files the launch waited on</h3>\n" + files.render(caption: nil, empty: "none")
        var threads = HTMLTable(columns: [
            .text("thread"), .number("tid"), .number("CPU ms"), .number("waiting for CPU ms"), .number("blocked ms"), .text("mostly blocked on"),
        ])
        for thread in blocked.threads {
            threads.row([.text(thread.name + (thread.exited ? " (exited)" : "")), .count(thread.tid), .ms(thread.cpuMs),
                         .ms(thread.runQueueMs), .ms(thread.blockedMs), .name(thread.mostlyBlockedOn ?? "–")])
        }
        out += "<h3>Threads</h3>\n" + threads.render(caption: blocked.watcher.notes.joined(separator: " "))
        out += "</section>\n"
    }

    mutating func marksTable() {
        out += "<section id=\"marks\"><h2>Marks</h2>\n"
        var table = HTMLTable(columns: [.text("mark"), .number("at ms"), .text("where"), .text("thread")])
        for mark in report.marks {
            let place = mark.extended ? "extended (after ready())"
                : mark.phase.map { (mark.phaseBoundary ? "ends '" : "in '") + $0 + "'" } ?? "outside the launch"
            table.row([.text(mark.name), .ms(mark.offsetMs), .text(place), .text(mark.thread.map { "\($0) (\(mark.tid))" } ?? "\(mark.tid)")])
        }
        out += table.render(caption: nil) + "</section>\n"
    }

    mutating func spansTable() {
        let shown = report.spans.prefix(500)
        out += "<section id=\"spans\"><h2>Spans <span class=\"dim\">slowest first"
            + (report.spans.count > shown.count ? ", \(shown.count) of \(report.spans.count)" : "") + "</span></h2>\n"
        var table = HTMLTable(columns: [
            .text("span"), .number("wall ms"), .number("from ms"), .text("began in phase"), .text("thread"), .text("notes"),
        ])
        for span in shown {
            var notes: [String] = []
            if span.unfinished { notes.append("UNFINISHED (still open when the launch ended)") }
            if span.extended { notes.append("extended (after ready())") }
            if let endTid = span.endTid { notes.append("ended on thread \(endTid)") }
            table.row([
                .text(span.name), .ms(span.durationMs), .ms(span.startMs), .text(span.phase ?? "–"),
                .text(span.thread.map { "\($0) (\(span.tid))" } ?? "\(span.tid)"), .text(notes.joined(separator: "; ")),
            ])
        }
        out += table.render(caption: nil) + "</section>\n"
    }

    // MARK: Formatting

    func e<S: StringProtocol>(_ text: S) -> String { HTMLTable.escape(String(text)) }
    func ms(_ value: Double) -> String { fixed(value, 2) + " ms" }
    func f(_ value: Double) -> String { fixed(value, 1) }
    static func clip(_ text: String, _ limit: Int) -> String { text.count > limit ? String(text.prefix(limit - 1)) + "…" : text }
}

private func fixed(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return "?" }
    return String(format: "%.\(decimals)f", value)
}

/// A table whose numeric cells carry their exact value (`data-v`), so the
/// page's script sorts by number; it reads the same without the script.
struct HTMLTable {
    enum Column {
        case text(String)
        case number(String)
    }

    enum Cell {
        case text(String, title: String? = nil)
        /// A function or global name: long, so clipped with the whole name as tooltip.
        case name(String)
        case ms(Double)
        case percent(Double, decimals: Int = 1)
        case count(Int)
        case missing
    }

    var columns: [Column]
    var rows: [[Cell]] = []

    mutating func row(_ cells: [Cell]) { rows.append(cells) }

    func render(caption: String?, empty: String = "no rows") -> String {
        var html = "<div class=\"wrap\"><table class=\"sortable\"><thead><tr>"
        for column in columns {
            switch column {
            case .text(let title): html += "<th>\(Self.escape(title))</th>"
            case .number(let title): html += "<th class=\"num\">\(Self.escape(title))</th>"
            }
        }
        html += "</tr></thead><tbody>"
        if rows.isEmpty { html += "<tr><td colspan=\"\(columns.count)\" class=\"dim\">\(Self.escape(empty))</td></tr>" }
        for row in rows {
            html += "<tr>"
            for cell in row {
                switch cell {
                case .text(let text, let title):
                    html += title.map { "<td title=\"\(Self.escape($0))\">" } ?? "<td>"
                    html += Self.escape(text) + "</td>"
                case .name(let name):
                    html += "<td class=\"name\" title=\"\(Self.escape(name))\">\(Self.escape(name))</td>"
                case .ms(let value): html += number(value, fixed(value, 2))
                case .percent(let value, let decimals): html += number(value, fixed(value, decimals) + "%")
                case .count(let value): html += number(Double(value), String(value))
                case .missing: html += "<td class=\"num\" data-v=\"-1\">–</td>"
                }
            }
            html += "</tr>"
        }
        html += "</tbody></table></div>\n"
        if let caption { html += "<p class=\"caption\">\(Self.escape(caption))</p>\n" }
        return html
    }

    private func number(_ value: Double, _ text: String) -> String {
        "<td class=\"num\" data-v=\"\(value.isFinite ? String(value) : "0")\">\(text)</td>"
    }

    /// Text for HTML content and attributes. `//` is broken up, and so is
    /// anything else that reads like a reference, so no text from the
    /// timeline can look like one.
    static func escape(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        var escaped = String.UnicodeScalarView()
        for (index, scalar) in scalars.enumerated() {
            let entity: String?
            switch scalar {
            case "&": entity = "&amp;"
            case "<": entity = "&lt;"
            case ">": entity = "&gt;"
            case "\"": entity = "&quot;"
            case "'": entity = "&#39;"
            case "/" where index > 0 && scalars[index - 1] == "/": entity = "&#47;"
            case _ where looksLikeReference(scalars, at: index): entity = "&#\(scalar.value);"
            case _ where scalar.properties.generalCategory == .control: entity = "?"
            default: entity = nil
            }
            if let entity { escaped += entity.unicodeScalars } else { escaped.append(scalar) }
        }
        return String(escaped)
    }

    /// Whether the character at `index` makes `http`, `src=`, `url(` or
    /// `@import` (any case): the one character escapers write as a reference.
    static func looksLikeReference(_ scalars: [Unicode.Scalar], at index: Int) -> Bool {
        func matches(_ word: String, from start: Int) -> Bool {
            let letters = Array(word.unicodeScalars)
            guard start >= 0, start + letters.count <= scalars.count else { return false }
            return letters.indices.allSatisfy { String(scalars[start + $0]).lowercased() == String(letters[$0]) }
        }
        switch scalars[index] {
        case "h", "H": return matches("http", from: index)
        case "=": return matches("src=", from: index - 3)
        case "(": return matches("url(", from: index - 3)
        case "@": return matches("@import", from: index)
        default: return false
        }
    }
}
