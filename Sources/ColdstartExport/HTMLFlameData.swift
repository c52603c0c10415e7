import ColdstartAnalysis
import ColdstartText
import Foundation

/// The flame chart and flame graph: their canvases, and the JSON the
/// page's script draws them from.
extension HTMLPage {
    mutating func flameSections(_ profile: ProfileReport, _ stacks: SampledStacks) {
        let threadName = chartThread(stacks).map { "\(stacks.threadNames[$0] ?? "thread \($0)") (tid \($0))" }
            ?? (stacks.criticalPath.pieces.contains { $0.tid != stacks.mainThread }
                ? "the launch's critical path (the main thread, then the threads that ran the launch's marks and spans)"
                : "main (tid \(stacks.mainThread))")
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

    /// The one thread the flame chart shows when the selection is a single
    /// thread's (`--thread`); nil: it follows the critical path.
    private func chartThread(_ stacks: SampledStacks) -> Int? {
        guard let only = stacks.samples.first?.tid, stacks.samples.allSatisfy({ $0.tid == only }) else { return nil }
        return only
    }

    /// The data the script draws: functions, the phases, one thread's runs in
    /// time order and the whole call tree, flattened.
    mutating func embedData(_ stacks: SampledStacks) {
        var json = JSONText(capacity: stacks.samples.count * 24, escaping: .scriptSafe)
        var moduleIndex: [String: Int] = [:]
        var moduleNames: [String] = []
        var functionIndex: [String: Int] = [:]
        var functions: [(String, Int)] = []
        func function(_ name: String, _ module: String) -> Int {
            let key = module + "\u{1}" + name
            if let id = functionIndex[key] { return id }
            let moduleID = moduleIndex[module] ?? moduleNames.count
            if moduleID == moduleNames.count { moduleIndex[module] = moduleID; moduleNames.append(module) }
            // Drawn, searched and shown in the tooltip as the tables name it.
            functions.append((LaunchReport.functionName(name), moduleID))
            functionIndex[key] = functions.count - 1
            return functions.count - 1
        }
        // The page's id of each of `stacks.functions`, -1 until it is drawn:
        // asked for each run and each node of the tree.
        var ids = [Int](repeating: -1, count: stacks.functions.count)
        func id(_ stacked: Int) -> Int {
            if ids[stacked] < 0 { ids[stacked] = function(stacks.functions[stacked].name, stacks.moduleName(of: stacked)) }
            return ids[stacked]
        }

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
        let comma = UInt8(ascii: ",")
        // Runs: [function, depth, start µs, duration µs, samples] flattened.
        json.raw("],\"chart\":[")
        var first = true
        for run in chartThread(stacks).map({ stacks.runs(thread: $0) }) ?? stacks.runsOnCriticalPath() {
            if !first { json.byte(comma) }
            first = false
            json.int(id(run.function)); json.byte(comma)
            json.int(run.depth); json.byte(comma)
            json.int((run.startNs + 500) / 1000); json.byte(comma)
            json.int(max(1, (run.endNs - run.startNs + 500) / 1000)); json.byte(comma)
            json.int(run.samples)
        }
        // Call tree in pre-order: [function, depth, samples, self samples] flattened.
        json.raw("],\"graph\":[")
        first = true
        stacks.visitCallTree { function, depth, samples, selfSamples in
            if !first { json.byte(comma) }
            first = false
            json.int(id(function)); json.byte(comma)
            json.int(depth); json.byte(comma)
            json.int(samples); json.byte(comma)
            json.int(selfSamples)
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
}
