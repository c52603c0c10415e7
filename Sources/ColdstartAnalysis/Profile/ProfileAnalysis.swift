/// The working state behind a `ProfileReport`: functions interned to
/// integers, each sample's stack as function ids, each sample's phase.
struct ProfileAnalysis {
    struct Function {
        /// As reports show it: an inlined call ends in " (inlined)".
        var name: String
        var linkageName: String
        var module: Int
        var isInlined = false
        /// Whether a finding may name this frame as a function or a caller
        /// (`Symbolizer.namesFunction`): a frame outside code, or left
        /// unnamed, is passed over for the next real one. Worked out once
        /// per function: asked of each frame of each distinct stack, its
        /// Foundation search was 37% of `report`'s CPU on a 100k file.
        var namesFunction = true
        /// Whether its module is the executable's, the loader's or libc's
        /// (`executableModules`, `loaderModules`, `libcModules`): asked of
        /// each frame of each distinct stack, a `Set<Int>` look-up hashed
        /// millions of times on a 100k-sample file.
        var inExecutable = false
        var inLoader = false
        var inLibc = false

        /// The name without the inlined marker, for matching known functions.
        var baseName: String { isInlined ? String(name.dropLast(Self.inlinedMarker.count)) : name }
        static let inlinedMarker = " (inlined)"
    }

    struct Stack {
        var ns: Int64
        var tid: Int
        var phase: Int
        /// Index into `shapes`: the samples with the same frames share it.
        var shape: Int
        /// Leaf first, as function ids (`shapes[shape]`, the same storage).
        var functions: [Int]
    }

    let timeline: Timeline
    let sampling: Timeline.Sampling
    let nsPerSample: Double
    /// The frames' names by `Timeline.Frame.key`, with their source places
    /// (a finding names the line of the app's call).
    let symbols: [String: Timeline.Symbol]
    private(set) var functions: [Function] = []
    private(set) var stacks: [Stack] = []
    /// Every distinct stack (leaf first, function ids) in order of first
    /// sighting: a launch's work is per distinct stack, weighted by its
    /// samples, not per sample.
    private(set) var shapes: [[Int]] = []
    /// Phase names and kinds; the last is the after-the-end bucket.
    private(set) var phaseNames: [String] = []
    private(set) var loaderModules: Set<Int> = []
    private(set) var libcModules: Set<Int> = []
    private(set) var executableModules: Set<Int> = []
    /// Each module's file name, worked out once (rows of every table name it).
    private(set) var moduleNames: [String] = []

    init(timeline: Timeline, sampling: Timeline.Sampling, symbols: [String: Timeline.Symbol], nsPerSample: Double) {
        self.timeline = timeline
        self.sampling = sampling
        self.nsPerSample = nsPerSample
        self.symbols = symbols
        moduleNames = timeline.modules.map { Symbolizer.moduleName($0.path) }
        for (index, module) in timeline.modules.enumerated() {
            let name = moduleNames[index]
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
            functions.append(Function(name: name, linkageName: symbol.system ?? symbol.name, module: module, isInlined: inlined,
                                      namesFunction: Symbolizer.namesFunction(name), inExecutable: executableModules.contains(module),
                                      inLoader: loaderModules.contains(module), inLibc: libcModules.contains(module)))
            return functions.count - 1
        }
        var shapeIDs: [[Timeline.Frame]: Int] = [:]
        var previous: (frames: [Timeline.Frame], shape: Int) = ([], -1)
        for sample in timeline.samples {
            let shape: Int
            if previous.shape >= 0, sample.frames == previous.frames {
                // The reader shares one array among consecutive samples of a
                // stack: no hashing for them.
                shape = previous.shape
            } else if let known = shapeIDs[sample.frames] {
                shape = known
            } else {
                shape = shapes.count
                shapeIDs[sample.frames] = shape
                // A frame-pointer walk that ran past the stack's base (the
                // kernel's chains, where nothing better was had) ends in
                // words that are no return address: 0x0, text such as
                // 0x622f7273752f7466, data. Left in, each was a root of the
                // call tree of its own and a "caller"; the stack ends at its
                // last frame in code.
                var frames = sample.frames[...]
                while frames.count > 1, let outer = frames.last, !Self.isInCode(outer, modules: timeline.modules.count, symbols: symbols) {
                    frames.removeLast()
                }
                shapes.append(frames.flatMap { frame -> [Int] in
                    if let ids = frameIDs[frame] { return ids }
                    let symbol = symbols[frame.key] ?? Timeline.Symbol(name: Symbolizer.fallbackName(for: frame, modules: timeline.modules))
                    let module = frame.module >= 0 && frame.module < timeline.modules.count ? frame.module : -1
                    let expanded = (symbol.inlined ?? []).map { intern($0, module: module, inlined: true) }
                        + [intern(symbol, module: module, inlined: false)]
                    frameIDs[frame] = expanded
                    return expanded
                })
            }
            previous = (sample.frames, shape)
            stacks.append(Stack(ns: sample.ns, tid: sample.tid, phase: phase(of: sample.ns, starts: starts), shape: shape,
                                functions: shapes[shape]))
        }
        joinStacksCutShortAtTheProgramsStart()
    }

    /// A main-thread stack whose unwind ran out of the kernel's stack copy
    /// ends short of `_start`: at libc's `__libc_start_call_main` when the
    /// kernel's frame-pointer chain went on (glibc keeps no frame pointers,
    /// so the chain skips `__libc_start_main` and `_start`), at the program's
    /// `main` when it could not (`_dl_runtime_resolve_xsavec` saves kilobytes
    /// of registers on the stack). Each was a second root of the call tree
    /// for the one call path: 1 of 345-346 samples in 2 of 55 KnownCosts
    /// launches here; 19-20 ms of a 150 ms function when the first 50 ms were
    /// the kernel's chains. Such a stack goes on along the frames the
    /// launch's other stacks show above that frame, when they all show the
    /// same ones (only the main thread runs these); without them (a launch
    /// walked by frame pointers only) it stays as it is.
    private mutating func joinStacksCutShortAtTheProgramsStart() {
        let starts = Set(functions.indices.filter { id in
            let function = functions[id]
            if function.inLibc { return ["__libc_start_call_main", "__libc_start_main"].contains(function.name) }
            return function.inExecutable
                && (function.name == "main" || function.name.hasSuffix("_main") || function.name.hasSuffix("$main"))
        })
        guard !starts.isEmpty else { return }
        func isStart(_ id: Int) -> Bool { starts.contains(id) }
        var above: [Int: ArraySlice<Int>] = [:]
        var ambiguous: Set<Int> = []
        var cutShort = false
        for shape in shapes {
            guard let root = shape.last else { continue }
            if isStart(root) {
                cutShort = true
                continue
            }
            // The paths above them, from the stacks that were not cut short;
            // they are among a stack's outermost frames.
            for position in shape.indices.suffix(8) where isStart(shape[position]) {
                let id = shape[position], path = shape[(position + 1)...]
                if let known = above[id] {
                    if !known.elementsEqual(path) { ambiguous.insert(id) }
                } else {
                    above[id] = path
                }
            }
        }
        guard cutShort else { return }
        var joined: Set<Int> = []
        for index in shapes.indices {
            guard let root = shapes[index].last, isStart(root), !ambiguous.contains(root), let path = above[root] else { continue }
            shapes[index] += path
            joined.insert(index)
        }
        guard !joined.isEmpty else { return }
        for index in stacks.indices where joined.contains(stacks[index].shape) { stacks[index].functions = shapes[stacks[index].shape] }
    }

    /// The analysis of a sampled timeline whose frames `symbols` names; nil
    /// when the launch was not sampled.
    static func make(timeline: Timeline, symbols: [String: Timeline.Symbol], path: String) throws -> ProfileAnalysis? {
        guard let sampling = timeline.sampling, !timeline.samples.isEmpty else { return nil }
        guard let nsPerSample = sampling.nsPerSample else {
            throw ProfileError(path: path, problem: "malformed timeline: sampling rate \(sampling.effectiveHz) Hz")
        }
        return ProfileAnalysis(timeline: timeline, sampling: sampling, symbols: symbols, nsPerSample: nsPerSample)
    }

    /// Whether `frame` lies in a module's code: inside a mapped file, and
    /// not a place the symbolizer found outside its code.
    private static func isInCode(_ frame: Timeline.Frame, modules: Int, symbols: [String: Timeline.Symbol]) -> Bool {
        guard frame.module >= 0, frame.module < modules else { return false }
        return !(symbols[frame.key]?.name.hasSuffix(Symbolizer.notCodeSuffix) ?? false)
    }

    static func afterEndName(_ timeline: Timeline) -> String {
        "after \(timeline.launch.endReason == "ready" ? "ready" : "the end") (extension window)"
    }

    /// Phases are contiguous `[start, end)`; the last one also holds its end.
    private func phase(of ns: Int64, starts: [Int64]) -> Int {
        if ns > timeline.launch.endNs || ns > (timeline.phases.last?.endNs ?? .max) { return timeline.phases.count }
        return max(0, starts.partitionPoint { $0 <= ns } - 1)
    }

    func ms(_ samples: Int) -> Double { Double(samples) * nsPerSample / 1e6 }

    func moduleName(_ module: Int) -> String {
        module >= 0 ? moduleNames[module] : ""
    }

    /// One distinct stack of some samples.
    struct ShapeCount {
        /// Index into `shapes`.
        var shape: Int
        var samples: Int
        /// The first of the samples (in the order given) with it.
        var first: Int
        /// The earliest time of them.
        var earliestNs: Int64
    }

    /// The distinct stacks of the samples `indices` in order of first sighting.
    func shapeCounts(_ indices: [Int]) -> [ShapeCount] {
        var counts: [ShapeCount] = []
        func count(_ position: (Int) -> Int?, _ remember: (Int, Int) -> Void) {
            for index in indices {
                // The two fields, not the whole `Stack`: a copy retained and
                // released its functions' array, a cache miss per sample.
                let shape = stacks[index].shape, ns = stacks[index].ns
                if let at = position(shape) {
                    counts[at].samples += 1
                    counts[at].earliestNs = min(counts[at].earliestNs, ns)
                } else {
                    remember(shape, counts.count)
                    counts.append(ShapeCount(shape: shape, samples: 1, first: index, earliestNs: ns))
                }
            }
        }
        // A table as long as the stacks for a big selection; a dictionary
        // for a small one (one of 300,000 threads' single samples).
        if indices.count >= shapes.count / 8 {
            var position = [Int32](repeating: -1, count: shapes.count)
            count({ position[$0] >= 0 ? Int(position[$0]) : nil }, { position[$0] = Int32($1) })
        } else {
            var position: [Int: Int] = [:]
            count({ position[$0] }, { position[$0] = $1 })
        }
        return counts
    }

    /// `indices` (into `stacks`) by time, then index. A timeline's samples
    /// are mostly in time order already, and then they are kept as they are,
    /// after one look: sorting a million indices twice (the sampled stacks,
    /// then each flame chart) grew faster than the samples.
    func inTimeOrder(_ indices: [Int]) -> [Int] {
        let stacks = stacks
        var ordered = true
        var previous: (ns: Int64, index: Int)?
        for index in indices {
            let ns = stacks[index].ns
            if let previous, (ns, index) <= previous {
                ordered = false
                break
            }
            previous = (ns, index)
        }
        return ordered ? indices : indices.sorted { (stacks[$0].ns, $0) < (stacks[$1].ns, $1) }
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

    /// Threads sampled and missed, as the file records them (the clocks armed;
    /// the threads past the table or the descriptors) and as its samples and
    /// watch show them: a thread with samples is sampled, whatever armed it
    /// (the bridge samples threads before their clocks open), and a watched
    /// thread that ran two sample periods of CPU in the window and has none
    /// was missed. Nil where the file records no counts.
    var threadCounts: (sampled: Int?, missed: Int?) {
        let withSamples = Set(stacks.map(\.tid))
        let sampled = sampling.threadsSampled.map { max($0, withSamples.count) }
        guard let recordedMissed = sampling.threadsMissed else { return (sampled, nil) }
        var ranNs: [Int: Double] = [:]
        for segment in timeline.watch?.segments ?? [] where segment.runNs > 0 && segment.endNs > segment.startNs {
            let overlap = min(segment.endNs, sampling.stopNs) - max(segment.startNs, sampling.startNs)
            guard overlap > 0 else { continue }
            ranNs[segment.tid, default: 0] += Double(segment.runNs) * Double(overlap) / Double(segment.durationNs)
        }
        let ranUnsampled = ranNs.filter { $0.value >= 2 * nsPerSample && !withSamples.contains($0.key) }.count
        return (sampled, max(recordedMissed, ranUnsampled))
    }

    /// The report of the samples `selected` (by `select`), `merged` their
    /// `mergedCallTree`; only for a sampled timeline.
    func report(_ selected: [Int], merged: MergedCallTree, options: ProfileOptions, warnings: [String]) -> ProfileReport {
        let treeMinPercent = max(options.minPercent, options.treeFloorPercent)
        return ProfileReport(
            sampling: .init(
                clock: sampling.clock, unwinder: sampling.unwinder, requestedHz: sampling.requestedHz,
                effectiveHz: sampling.effectiveHz, loweredHz: sampling.loweredHz, msPerSample: nsPerSample / 1e6,
                samples: stacks.count, dropped: sampling.dropped, maxSamples: sampling.maxSamples,
                threadsSampled: threadCounts.sampled, threadsMissed: threadCounts.missed,
                unwindFailures: sampling.unwindFailures, startMs: Double(sampling.startNs) / 1e6, stopMs: Double(sampling.stopNs) / 1e6),
            precision: SamplingPrecision(
                launchSamples: stacks.filter { $0.phase < timeline.phases.count }.count, msPerSample: nsPerSample / 1e6,
                requestedHz: sampling.requestedHz, samplingStartMs: Double(timeline.launch.earliestInitNs ?? sampling.startNs) / 1e6,
                // Under coldstart run the launcher's samples cover the main
                // thread until the app's clock starts (LauncherTimeline.merged).
                // Only a perf clock waits for the kernel's first event; the POSIX timers' first tick is not late.
                clockArmedMs: LaunchMode(timeline) == .linked && sampling.clock == "perf-task-clock" ? sampling.sampledFromNs.map { Double($0) / 1e6 } : nil,
                scanBeganMs: sampling.scanBeganNs.map { Double($0) / 1e6 }),
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
            callTree: callTree(merged, of: selected, options: options, minPercent: treeMinPercent)
        )
    }

    // MARK: Functions

    /// Per-function counters, reused from one table to the next: a table
    /// visits and resets only the functions its samples touch, so it costs
    /// what its samples cost, not the number of functions (a timeline of
    /// 300,000 threads with a sample each, and as many distinct addresses,
    /// took hours when each thread's table swept every function).
    struct FunctionCounts {
        var selfCount: [Int]
        var totalCount: [Int]
        var firstSeen: [Int64]
        /// The distinct stack (its position in the table's) that last
        /// counted the function: a recursive call counts once.
        var seenInStack: [Int]
        /// The functions with a count, in first-seen order.
        var touched: [Int] = []

        init(functions: Int) {
            selfCount = [Int](repeating: 0, count: functions)
            totalCount = selfCount
            firstSeen = [Int64](repeating: .max, count: functions)
            seenInStack = [Int](repeating: -1, count: functions)
        }
    }

    /// Self and total samples and first sighting of every function over `indices`.
    func functionTable(_ indices: [Int], options: ProfileOptions, top: Int? = nil) -> ProfileReport.FunctionTable {
        var counts = FunctionCounts(functions: functions.count)
        return functionTable(indices, options: options, top: top, counts: &counts)
    }

    /// The same with counters the caller reuses across many tables; they are
    /// all zero again when it returns.
    func functionTable(_ indices: [Int], options: ProfileOptions, top: Int? = nil, counts: inout FunctionCounts) -> ProfileReport.FunctionTable {
        // Each distinct stack once, with its samples and its earliest.
        for (position, entry) in shapeCounts(indices).enumerated() {
            let stack = shapes[entry.shape]
            if let leaf = stack.first { counts.selfCount[leaf] += entry.samples }
            for function in stack where counts.seenInStack[function] != position {
                if counts.totalCount[function] == 0 { counts.touched.append(function) }
                counts.seenInStack[function] = position
                counts.totalCount[function] += entry.samples
                counts.firstSeen[function] = min(counts.firstSeen[function], entry.earliestNs)
            }
        }
        let total = indices.count
        func row(_ id: Int) -> ProfileReport.FunctionTime {
            let (selfSamples, totalSamples) = (counts.selfCount[id], counts.totalCount[id])
            return ProfileReport.FunctionTime(
                name: functions[id].name, module: moduleName(functions[id].module),
                selfSamples: selfSamples, selfMs: ms(selfSamples), selfPercent: percent(selfSamples, of: total),
                totalSamples: totalSamples, totalMs: ms(totalSamples), totalPercent: percent(totalSamples, of: total),
                firstSeenMs: Double(counts.firstSeen[id]) / 1e6)
        }
        func ranked(_ count: (Int) -> Int) -> [ProfileReport.FunctionTime] {
            let kept = counts.touched.filter {
                count($0) > 0 && ms(count($0)) >= options.minMs && percent(count($0), of: total) >= options.minPercent
            }
            return first(top ?? options.top, of: kept) { byCountThenName(count($0), $0, count($1), $1) }
                .map(row)
        }
        let table = ProfileReport.FunctionTable(
            samples: total, ms: ms(total),
            bySelf: ranked { counts.selfCount[$0] }, byTotal: ranked { counts.totalCount[$0] })
        for function in counts.touched {
            counts.selfCount[function] = 0
            counts.totalCount[function] = 0
            counts.firstSeen[function] = .max
            counts.seenInStack[function] = -1
        }
        counts.touched.removeAll(keepingCapacity: true)
        return table
    }

    /// The first `limit` of `ids` in the order `precedes` (a strict total
    /// order), in that order. A short list is kept by insertion rather than
    /// sorting everything: 300,000 threads' tables of their top 3 spent
    /// most of their time sorting.
    func first(_ limit: Int, of ids: [Int], by precedes: (Int, Int) -> Bool) -> [Int] {
        guard limit > 0 else { return [] }
        guard limit < ids.count, limit <= 64 else { return Array(ids.sorted(by: precedes).prefix(limit)) }
        var best: [Int] = []
        best.reserveCapacity(limit + 1)
        for id in ids where best.count < limit || precedes(id, best[best.count - 1]) {
            var at = best.count
            while at > 0, precedes(id, best[at - 1]) { at -= 1 }
            best.insert(id, at: at)
            if best.count > limit { best.removeLast() }
        }
        return best
    }

    /// Most samples first (`a` samples of function `fa` against `b` of
    /// `fb`), then by name, then by module: every ranking's order.
    func byCountThenName(_ a: Int, _ fa: Int, _ b: Int, _ fb: Int) -> Bool {
        if a != b { return a > b }
        if functions[fa].name != functions[fb].name { return functions[fa].name < functions[fb].name }
        return functions[fa].module < functions[fb].module
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
        var counts = FunctionCounts(functions: functions.count)
        let names = timeline.recordedThreadNames
        return byThread.map { tid, members in
            let table = functionTable(members, options: ProfileOptions(top: 3), counts: &counts)
            return ProfileReport.ThreadProfile(
                tid: tid, name: timeline.threadName(tid, recorded: names),
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
    /// `recorded` (`recordedThreadNames`) for many look-ups; without it the
    /// list of threads is searched.
    func threadName(_ tid: Int, recorded: [Int: String]? = nil) -> String {
        let name = recorded.map { $0[tid] } ?? threads.first { $0.tid == tid }?.name
        return ThreadLabel.readable(name ?? "", tid: tid, mainTid: process.pid)
    }

    /// The recorded name of each thread (the first, for a tid recorded
    /// twice), for `threadName`: one look-up per thread, not a search.
    var recordedThreadNames: [Int: String] {
        Dictionary(threads.map { ($0.tid, $0.name) }, uniquingKeysWith: { first, _ in first })
    }
}
