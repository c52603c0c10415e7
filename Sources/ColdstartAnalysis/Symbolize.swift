import Foundation

/// What `coldstart symbolize` did to a timeline.
public struct SymbolizedTimeline {
    /// The rewritten file: the input document with `coldstart.symbols`,
    /// `coldstart.symbolized` and the main thread's flame chart added.
    public var data: Data
    public var symbolization: Symbolization
    /// Distinct frames named.
    public var frames: Int
    /// `X` events in the flame chart.
    public var flameChartSlices: Int
}

extension Timeline {
    /// The track the flame chart is drawn on: a tid above Linux's largest
    /// possible pid_max (2^22), so it cannot be a real thread, and the
    /// main thread's own spans keep their track.
    public static let flameChartTid = 4_194_305
    public static let flameChartTrackName = "main thread (samples)"

    /// Names every frame from the modules on disk and returns the file with
    /// the names written in, so a report needs no binary. Other keys of the
    /// document are kept; an earlier flame chart is replaced, not doubled.
    public func symbolized(path: String = "<timeline>", debugDirectory: String? = "/usr/lib/debug") throws -> SymbolizedTimeline {
        guard sampling != nil, !samples.isEmpty else {
            throw ProfileError(path: path, problem: "no sampled stacks to symbolize (the launch was not sampled)")
        }
        let symbolization = Symbolizer(modules: modules, debugDirectory: debugDirectory).symbolize(samples)
        var root = document
        var section = root["coldstart"] as? [String: Any] ?? [:]
        section["symbols"] = symbolization.symbols.mapValues { symbol -> [String: Any] in
            var entry: [String: Any] = ["name": symbol.name]
            if let system = symbol.system { entry["system"] = system }
            if let file = symbol.file { entry["file"] = file }
            return entry
        }
        section["symbolized"] = true
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
        let data: Data
        do {
            data = try DocumentWriter.data(root)
        } catch {
            throw ProfileError(path: path, problem: "cannot encode the symbolized timeline (\(error))")
        }
        return SymbolizedTimeline(
            data: data, symbolization: symbolization, frames: symbolization.symbols.count, flameChartSlices: slices.count)
    }

    /// The main thread's samples as nested `X` events in time order: a slice
    /// per run of consecutive samples with the same function at the same
    /// depth. A sample stands for the time up to the next one; a gap of more
    /// than two sampling periods (the thread slept, or was not sampled) ends
    /// every slice one period after its last sample.
    func flameChart(symbols: [String: Symbol]) -> [[String: Any]] {
        guard let sampling else { return [] }
        let hz = sampling.effectiveHz > 0 ? sampling.effectiveHz : sampling.requestedHz
        guard hz > 0, hz.isFinite else { return [] }
        let period = Int64((1e9 / hz).rounded())
        let mainSamples = samples.enumerated()
            .filter { $0.element.tid == process.pid }
            .sorted { ($0.element.ns, $0.offset) < ($1.element.ns, $1.offset) }
            .map(\.element)

        // Functions as integers: a slice continues while the function at its
        // depth (name and module) stays the same.
        var functionIDs: [String: Int] = [:]
        var functions: [(name: String, module: String?)] = []
        var frameFunctions: [Frame: Int] = [:]
        let moduleNames = modules.map { Symbolizer.moduleName($0.path) }
        func function(of frame: Frame) -> Int {
            if let id = frameFunctions[frame] { return id }
            let name = symbols[frame.key]?.name ?? Symbolizer.placeholderName(for: frame, modules: modules)
            let module = frame.module >= 0 && frame.module < modules.count ? frame.module : -1
            let key = "\(module)\u{1}\(name)"
            let id = functionIDs[key] ?? functions.count
            if id == functions.count {
                functionIDs[key] = id
                functions.append((name, module >= 0 ? moduleNames[module] : nil))
            }
            frameFunctions[frame] = id
            return id
        }

        struct Open { var function: Int; var start: Int64; var samples: Int }
        var open: [Open] = []
        var slices: [(start: Int64, depth: Int, event: [String: Any])] = []
        func close(from depth: Int, at end: Int64) {
            while open.count > depth {
                let slice = open.removeLast()
                var args: [String: Any] = ["samples": slice.samples]
                if let module = functions[slice.function].module { args["module"] = module }
                slices.append((slice.start, open.count, [
                    "ph": "X", "pid": process.pid, "tid": Self.flameChartTid, "cat": "samples",
                    "name": functions[slice.function].name,
                    "ts": Self.microseconds(slice.start), "dur": Self.microseconds(max(end - slice.start, 0)), "args": args,
                ]))
            }
        }
        var previous: Int64?
        for sample in mainSamples {
            if let previous, sample.ns - previous > 2 * period { close(from: 0, at: previous + period) }
            let stack = sample.frames.reversed().map(function(of:))
            var common = 0
            while common < open.count, common < stack.count, open[common].function == stack[common] { common += 1 }
            close(from: common, at: sample.ns)
            for function in stack[common...] { open.append(Open(function: function, start: sample.ns, samples: 0)) }
            for index in open.indices { open[index].samples += 1 }
            previous = sample.ns
        }
        if let previous { close(from: 0, at: previous + period) }
        return slices.sorted { ($0.start, $0.depth) < ($1.start, $1.depth) }.map(\.event)
    }

    /// Trace-event time: microseconds with three decimals (nanoseconds).
    static func microseconds(_ ns: Int64) -> Double { Double(ns) / 1000 }
}
