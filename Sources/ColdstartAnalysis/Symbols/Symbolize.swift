import Foundation

/// What `coldstart symbolize` did to a timeline.
package struct SymbolizedTimeline {
    /// The rewritten file: the input document with `coldstart.symbols`,
    /// `coldstart.symbolized` and the main thread's flame chart added.
    package var data: Data
    package var symbolization: Symbolization
    /// Distinct frames named.
    package var frames: Int
    /// `X` events in the flame chart.
    package var flameChartSlices: Int
}

extension Timeline {
    /// The track the flame chart is drawn on: a tid above Linux's largest
    /// possible pid_max (2^22), so it cannot be a real thread, and the
    /// main thread's own spans keep their track.
    static let flameChartTid = 4_194_305
    static let flameChartTrackName = "main thread (samples)"

    /// Names every frame from the modules on disk and returns the file with
    /// the names written in, so a report needs no binary. Other keys of the
    /// document are kept; an earlier flame chart is replaced, not doubled.
    package func symbolized(path: String = "<timeline>", debugDirectory: String? = "/usr/lib/debug") throws -> SymbolizedTimeline {
        let blockedStacks = watch?.stacksAsSamples ?? []
        guard (sampling != nil && !samples.isEmpty) || !blockedStacks.isEmpty else {
            throw ProfileError(path: path, problem: "no sampled stacks to symbolize (the launch was not sampled)")
        }
        // The launcher's page faults name the code that faulted: one frame each.
        let faultFrames = launcherFaultFrames.map { Sample(ns: 0, tid: 0, frames: [$0]) }
        let symbolization = Symbolizer(modules: modules, debugDirectory: debugDirectory).symbolize(samples + blockedStacks + faultFrames)
        var root = document
        var section = root["coldstart"] as? [String: Any] ?? [:]
        func encoded(_ symbol: Symbol) -> [String: Any] {
            var entry: [String: Any] = ["name": symbol.name]
            if let system = symbol.system { entry["system"] = system }
            if let file = symbol.file { entry["file"] = file }
            if let line = symbol.line { entry["line"] = line }
            if let inlined = symbol.inlined { entry["inlined"] = inlined.map(encoded) }
            return entry
        }
        section["symbols"] = symbolization.symbols.mapValues(encoded)
        section["symbolized"] = true
        // What the report would read from the loaded objects' files.
        if let statistics = LoaderStatistics(readingFilesOf: self), let data = try? JSONEncoder().encode(statistics),
           let object = try? JSONSerialization.jsonObject(with: data) {
            section["loaderStatistics"] = object
        }
        root["coldstart"] = section
        let slices = flameChart(symbols: symbolization.symbols)
        var events = (root["traceEvents"] as? [Any] ?? []).filter {
            (($0 as? [String: Any])?["tid"] as? NSNumber)?.intValue != Self.flameChartTid
        }
        if !slices.isEmpty {
            events.append([
                "ph": "M", "pid": process.pid, "tid": Self.flameChartTid, "name": "thread_name",
                "args": ["name": Self.flameChartTrackName],
            ] as [String: Any])
            events += slices.map { $0 as Any }
        }
        root["traceEvents"] = events
        var json = JSONText(capacity: 1 << 20, escaping: .plain)
        do {
            try json.document(root)
            json.raw("\n")
        } catch {
            throw ProfileError(path: path, problem: "cannot encode the symbolized timeline (\(error))")
        }
        return SymbolizedTimeline(
            data: Data(json.bytes), symbolization: symbolization, frames: symbolization.symbols.count, flameChartSlices: slices.count)
    }

    /// The leaf frame of each page fault the launcher recorded (launcher
    /// section, `faults` rows `[ns, tid, m, a, file, fileOffset]`).
    var launcherFaultFrames: [Frame] {
        let launcher = (document["coldstart"] as? [String: Any])?["launcher"] as? [String: Any]
        return (launcher?["faults"] as? [[NSNumber]] ?? []).compactMap { row in
            guard row.count == 6, row[2].intValue >= -1, row[2].intValue < modules.count else { return nil }
            return Frame(module: row[2].intValue, address: row[3].uint64Value)
        }
    }

    /// The main thread's samples as nested `X` events in time order, one per
    /// `StackRun` (docs/timeline-format.md, "After `coldstart symbolize`").
    func flameChart(symbols: [String: Symbol]) -> [[String: Any]] {
        guard let sampling, let nsPerSample = sampling.nsPerSample else { return [] }
        let analysis = ProfileAnalysis(timeline: self, sampling: sampling, symbols: symbols, nsPerSample: nsPerSample)
        let main = analysis.stacks.indices.filter { analysis.stacks[$0].tid == process.pid }
        return analysis.runs(main).map { run in
            let function = analysis.functions[run.function]
            var args: [String: Any] = ["samples": run.samples]
            if function.module >= 0 { args["module"] = analysis.moduleName(function.module) }
            return [
                "ph": "X", "pid": process.pid, "tid": Self.flameChartTid, "cat": "samples", "name": function.name,
                "ts": Self.microseconds(run.startNs), "dur": Self.microseconds(run.endNs - run.startNs), "args": args,
            ]
        }
    }

    /// Trace-event time: microseconds with three decimals (nanoseconds).
    static func microseconds(_ ns: Int64) -> Double { Double(ns) / 1000 }
}
