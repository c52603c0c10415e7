/// The working state behind a `ProfileReport`: functions interned to
/// integers, each sample's stack as function ids, each sample's phase.
struct ProfileAnalysis {
    struct Function {
        /// As reports show it: an inlined call ends in " (inlined)".
        var name: String
        var linkageName: String
        var module: Int
        var isInlined = false

        /// The name without the inlined marker, for matching known functions.
        var baseName: String { isInlined ? String(name.dropLast(Self.inlinedMarker.count)) : name }
        static let inlinedMarker = " (inlined)"
    }

    struct Stack {
        var ns: Int64
        var tid: Int
        var phase: Int
        /// Leaf first, as function ids.
        var functions: [Int]
    }

    let timeline: Timeline
    let sampling: Timeline.Sampling
    let nsPerSample: Double
    private(set) var functions: [Function] = []
    private(set) var stacks: [Stack] = []
    /// Phase names and kinds; the last is the after-the-end bucket.
    private(set) var phaseNames: [String] = []
    private(set) var loaderModules: Set<Int> = []
    private(set) var libcModules: Set<Int> = []
    private(set) var executableModules: Set<Int> = []

    init(timeline: Timeline, sampling: Timeline.Sampling, symbols: [String: Timeline.Symbol], nsPerSample: Double) {
        self.timeline = timeline
        self.sampling = sampling
        self.nsPerSample = nsPerSample
        for (index, module) in timeline.modules.enumerated() {
            let name = Symbolizer.moduleName(module.path)
            if name.hasPrefix("ld-linux") || (name.hasPrefix("ld-") && name.contains(".so")) { loaderModules.insert(index) }
            if name.hasPrefix("libc.so") || name.hasPrefix("libc-") { libcModules.insert(index) }
            if module.path == timeline.process.executable || name == Symbolizer.moduleName(timeline.process.executable) {
                executableModules.insert(index)
            }
        }
        phaseNames = timeline.phases.map(\.name) + [Self.afterEndName(timeline)]
        var ids: [String: Int] = [:]
        var frameIDs: [Timeline.Frame: [Int]] = [:]
        let starts = timeline.phases.map(\.startNs)
        stacks.reserveCapacity(timeline.samples.count)
        func intern(_ symbol: Timeline.Symbol, module: Int, inlined: Bool) -> Int {
            // An inlined call is a frame of its own, shown as such.
            let name = inlined ? symbol.name + Function.inlinedMarker : symbol.name
            let key = "\(module)\u{1}\(name)"
            if let id = ids[key] { return id }
            ids[key] = functions.count
            functions.append(Function(name: name, linkageName: symbol.system ?? symbol.name, module: module, isInlined: inlined))
            return functions.count - 1
        }
        for sample in timeline.samples {
            let stack = sample.frames.flatMap { frame -> [Int] in
                if let ids = frameIDs[frame] { return ids }
                let symbol = symbols[frame.key] ?? Timeline.Symbol(name: Symbolizer.fallbackName(for: frame, modules: timeline.modules))
                let module = frame.module >= 0 && frame.module < timeline.modules.count ? frame.module : -1
                let expanded = (symbol.inlined ?? []).map { intern($0, module: module, inlined: true) }
                    + [intern(symbol, module: module, inlined: false)]
                frameIDs[frame] = expanded
                return expanded
            }
            stacks.append(Stack(ns: sample.ns, tid: sample.tid, phase: phase(of: sample.ns, starts: starts), functions: stack))
        }
    }

    /// The analysis of a sampled timeline whose frames `symbols` names; nil
    /// when the launch was not sampled.
    static func make(timeline: Timeline, symbols: [String: Timeline.Symbol], path: String) throws -> ProfileAnalysis? {
        guard let sampling = timeline.sampling, !timeline.samples.isEmpty else { return nil }
        let hz = sampling.effectiveHz > 0 ? sampling.effectiveHz : sampling.requestedHz
        guard hz > 0, hz.isFinite else {
            throw ProfileError(path: path, problem: "malformed timeline: sampling rate \(sampling.effectiveHz) Hz")
        }
        return ProfileAnalysis(timeline: timeline, sampling: sampling, symbols: symbols, nsPerSample: 1e9 / hz)
    }

    static func afterEndName(_ timeline: Timeline) -> String {
        "after \(timeline.launch.endReason == "ready" ? "ready" : "the end") (extension window)"
    }

    /// Phases are contiguous `[start, end)`; the last one also holds its end.
    private func phase(of ns: Int64, starts: [Int64]) -> Int {
        if ns > timeline.launch.endNs || ns > (timeline.phases.last?.endNs ?? .max) { return timeline.phases.count }
        var low = 0, high = starts.count
        while low < high {
            let mid = (low + high) / 2
            if starts[mid] <= ns { low = mid + 1 } else { high = mid }
        }
        return max(0, low - 1)
    }

    func ms(_ samples: Int) -> Double { Double(samples) * nsPerSample / 1e6 }

    func moduleName(_ module: Int) -> String {
        module >= 0 ? Symbolizer.moduleName(timeline.modules[module].path) : ""
    }

    /// The samples `options` select (phase, thread), as indices into `stacks`.
    func select(_ options: ProfileOptions, path: String) throws -> [Int] {
        var selected = Array(stacks.indices)
        if let phase = options.phase {
            guard let index = phaseNames.firstIndex(of: phase) else {
                throw ProfileError(path: path, problem: "no phase named '\(phase)' (phases: \(phaseNames.map { "'\($0)'" }.joined(separator: ", ")))")
            }
            selected = selected.filter { stacks[$0].phase == index }
        }
        if let thread = options.thread {
            guard stacks.contains(where: { $0.tid == thread }) else {
                let tids = Set(stacks.map(\.tid)).sorted().map(String.init).joined(separator: ", ")
                throw ProfileError(path: path, problem: "no samples of thread \(thread) (sampled threads: \(tids))")
            }
            selected = selected.filter { stacks[$0].tid == thread }
        }
        return selected
    }

    /// The report of the samples `selected` (by `select`); only for a sampled timeline.
    func report(_ selected: [Int], options: ProfileOptions, warnings: [String]) -> ProfileReport {
        let treeMinPercent = max(options.minPercent, options.treeFloorPercent)
        return ProfileReport(
            sampling: .init(
                clock: sampling.clock, unwinder: sampling.unwinder, requestedHz: sampling.requestedHz,
                effectiveHz: sampling.effectiveHz, loweredHz: sampling.loweredHz, msPerSample: nsPerSample / 1e6,
                samples: stacks.count, dropped: sampling.dropped, maxSamples: sampling.maxSamples,
                threadsSampled: sampling.threadsSampled, threadsMissed: sampling.threadsMissed,
                unwindFailures: sampling.unwindFailures, startMs: Double(sampling.startNs) / 1e6, stopMs: Double(sampling.stopNs) / 1e6),
            precision: SamplingPrecision(
                launchSamples: stacks.filter { $0.phase < timeline.phases.count }.count, msPerSample: nsPerSample / 1e6,
                requestedHz: sampling.requestedHz),
            selection: .init(
                phase: options.phase, thread: options.thread, minMs: options.minMs, minPercent: options.minPercent,
                top: options.top, treeDepth: options.treeDepth, treeMinPercent: treeMinPercent,
                samples: selected.count, ms: ms(selected.count)),
            warnings: warnings,
            overall: functionTable(selected, options: options),
            phases: phaseProfiles(selected, options: options),
            threads: threadProfiles(selected, options: options),
            initializers: initializers(selected, options: options),
            lazyGlobals: lazyGlobals(selected, options: options),
            callTree: callTree(selected, options: options, minPercent: treeMinPercent)
        )
    }

    // MARK: Functions

    /// Self and total samples and first sighting of every function over `indices`.
    func functionTable(_ indices: [Int], options: ProfileOptions, top: Int? = nil) -> ProfileReport.FunctionTable {
        var selfCount = [Int](repeating: 0, count: functions.count)
        var totalCount = [Int](repeating: 0, count: functions.count)
        var firstSeen = [Int64](repeating: .max, count: functions.count)
        var seenInSample = [Int](repeating: -1, count: functions.count)
        for index in indices {
            let stack = stacks[index]
            if let leaf = stack.functions.first { selfCount[leaf] += 1 }
            for function in stack.functions where seenInSample[function] != index {
                seenInSample[function] = index
                totalCount[function] += 1
                firstSeen[function] = min(firstSeen[function], stack.ns)
            }
        }
        let total = indices.count
        func row(_ id: Int) -> ProfileReport.FunctionTime {
            ProfileReport.FunctionTime(
                name: functions[id].name, module: moduleName(functions[id].module),
                selfSamples: selfCount[id], selfMs: ms(selfCount[id]), selfPercent: percent(selfCount[id], of: total),
                totalSamples: totalCount[id], totalMs: ms(totalCount[id]), totalPercent: percent(totalCount[id], of: total),
                firstSeenMs: Double(firstSeen[id]) / 1e6)
        }
        func ranked(_ counts: [Int]) -> [ProfileReport.FunctionTime] {
            let kept = counts.indices.filter {
                counts[$0] > 0 && ms(counts[$0]) >= options.minMs && percent(counts[$0], of: total) >= options.minPercent
            }
            return kept.sorted { byCountThenName(counts[$0], functions[$0], counts[$1], functions[$1]) }
                .prefix(top ?? options.top).map(row)
        }
        return ProfileReport.FunctionTable(samples: total, ms: ms(total), bySelf: ranked(selfCount), byTotal: ranked(totalCount))
    }

    /// Most samples first, then by name, then by module: every ranking's order.
    func byCountThenName(_ a: Int, _ fa: Function, _ b: Int, _ fb: Function) -> Bool {
        if a != b { return a > b }
        if fa.name != fb.name { return fa.name < fb.name }
        return fa.module < fb.module
    }

    func percent(_ part: Int, of whole: Int) -> Double {
        whole > 0 ? Double(part) * 100 / Double(whole) : 0
    }

    func phaseProfiles(_ indices: [Int], options: ProfileOptions) -> [ProfileReport.PhaseProfile] {
        var byPhase = [[Int]](repeating: [], count: phaseNames.count)
        for index in indices { byPhase[stacks[index].phase].append(index) }
        var result: [ProfileReport.PhaseProfile] = timeline.phases.enumerated().map { number, phase in
            ProfileReport.PhaseProfile(
                name: phase.name, kind: phase.kind, startMs: Double(phase.startNs) / 1e6, endMs: Double(phase.endNs) / 1e6,
                sampled: phase.endNs > sampling.startNs && phase.startNs < sampling.stopNs,
                functions: functionTable(byPhase[number], options: options))
        }
        if let after = byPhase.last, !after.isEmpty {
            result.append(ProfileReport.PhaseProfile(
                name: phaseNames.last!, kind: "after-end", startMs: Double(timeline.launch.endNs) / 1e6, endMs: nil,
                sampled: true, functions: functionTable(after, options: options)))
        }
        return result
    }

    func threadProfiles(_ indices: [Int], options: ProfileOptions) -> [ProfileReport.ThreadProfile] {
        var byThread: [Int: [Int]] = [:]
        for index in indices { byThread[stacks[index].tid, default: []].append(index) }
        return byThread.map { tid, members in
            let table = functionTable(members, options: ProfileOptions(top: 3))
            return ProfileReport.ThreadProfile(
                tid: tid, name: timeline.threadName(tid),
                samples: members.count, ms: ms(members.count), percent: percent(members.count, of: indices.count),
                firstMs: Double(members.map { stacks[$0].ns }.min()!) / 1e6,
                lastMs: Double(members.map { stacks[$0].ns }.max()!) / 1e6,
                topSelf: table.bySelf)
        }.sorted { $0.samples != $1.samples ? $0.samples > $1.samples : $0.tid < $1.tid }
    }
}

extension Timeline {
    /// A thread's name as a person reads it (`ThreadLabel`): "main" for the
    /// process's first thread, a dispatch worker by its queue, else the one
    /// the timeline recorded, else "thread TID".
    func threadName(_ tid: Int) -> String {
        ThreadLabel.readable(threads.first { $0.tid == tid }?.name ?? "", tid: tid, mainTid: process.pid)
    }
}
