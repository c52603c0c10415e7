import Foundation

/// The sampled stacks of many launches of one program pooled into one
/// profile (`coldstart report DIR`, `coldstart aggregate`): a short launch
/// gets a handful of samples, twenty of them enough to read.
///
/// Each launch is analysed on its own (`ProfileAnalysis`: its own phases, its
/// own module table, its frames named by its own modules) and only its
/// counters are added: per function (by module file and name), library
/// initializer (by module file), lazy global and phase (by name). Memory
/// grows with the distinct names, never with the number of launches or
/// samples, and two pools merge into the pool of both.
package struct PooledProfile: Sendable {
    /// Launches whose samples are pooled.
    package private(set) var launches = 0
    /// Launches read but not sampled (production mode leaves most out), or
    /// with no usable sampling rate.
    package private(set) var unsampled = 0
    package private(set) var samples = 0
    private var ns = 0.0
    private var clocks: Set<String> = []
    private var minHz = Double.infinity
    private var maxHz = 0.0
    private var functions: [FunctionKey: FunctionCounter] = [:]
    private var phases: [String: PhaseCounter] = [:]
    private var initializers = Counter()
    private var libraries: [String: LibraryCounter] = [:]
    private var lazyGlobals: [String: Counter] = [:]
    private var threads: [String: Counter] = [:]
    /// Modules whose frames could not be named, by path: the first launch's line.
    private var warnings: [String: String] = [:]

    package init() {}

    private struct FunctionKey: Hashable {
        var module: String
        var name: String
    }

    /// Samples, their time (Σ samples × each launch's period) and the
    /// launches they came from.
    private struct Counter: Sendable {
        var samples = 0
        var ns = 0.0
        var launches = 0

        mutating func add(_ count: Int, nsPerSample: Double) {
            samples += count
            ns += Double(count) * nsPerSample
            launches += 1
        }

        mutating func merge(_ other: Counter) {
            samples += other.samples
            ns += other.ns
            launches += other.launches
        }
    }

    private struct FunctionCounter: Sendable {
        var selfTime = Counter()
        var total = Counter()
    }

    private struct PhaseCounter: Sendable {
        var kind: String
        /// Where the phase sits in its launches: the report lists phases in it.
        var position: Int
        var time = Counter()
        /// Σ of each launch's `KernelShare` of the phase (user, kernel ns),
        /// the launches it was known in and the longest sampling period: one
        /// launch's split of a short phase is a sample or two, the pool's is not.
        var userNs = 0.0
        var kernelNs = 0.0
        /// Coldstart's own and the exit's, apart as in `KernelShare`.
        var coldstartNs = 0.0
        var exitNs = 0.0
        var userSamples = 0
        var splitLaunches = 0
        var periodNs = 0.0
    }

    private struct LibraryCounter: Sendable {
        var isExecutable: Bool
        var time = Counter()
    }

    /// Pools one launch, naming its frames with `cache` (shared across the
    /// launches, so each module is read once; `debugDirectory` as
    /// `Symbolizer` takes it), or with the file's own names
    /// when `coldstart symbolize` wrote them. False, and counted as not
    /// sampled, when it has no samples, no usable sampling rate, or the
    /// app's own clock never ran (`Timeline.unsampledReason`: the loader's
    /// samples alone are not the launch's).
    @discardableResult
    package mutating func add(_ timeline: Timeline, cache: SymbolCache, debugDirectory: String? = "/usr/lib/debug", path: String) -> Bool {
        guard timeline.sampling != nil, !timeline.samples.isEmpty, timeline.unsampledReason == nil else {
            unsampled += 1
            return false
        }
        let naming = timeline.frameNames(Symbolizer(modules: timeline.modules, debugDirectory: debugDirectory, cache: cache))
        guard let analysis = try? ProfileAnalysis.make(timeline: timeline, symbols: naming.symbols, path: path) else {
            unsampled += 1
            return false
        }
        note(naming.warnings)
        add(analysis, selected: Array(analysis.stacks.indices))
        return true
    }

    /// Pools one launch already analysed (`report DIR` makes each launch's
    /// findings too): its samples of the thread named `thread` (the name a
    /// person reads or the kernel's: every thread of that name) and of the
    /// phase `phase`, when given. False, and counted as not sampled, as for
    /// `add(_:cache:)`.
    @discardableResult
    package mutating func add(_ launch: LaunchAnalysis, timeline: Timeline, thread: String? = nil, phase: String? = nil) -> Bool {
        guard timeline.unsampledReason == nil, let profile = launch.profile else {
            unsampled += 1
            return false
        }
        note(launch.warnings)
        let analysis = profile.analysis
        var selected = profile.selected
        if let thread {
            let recorded = timeline.recordedThreadNames
            selected = selected.filter { index in
                let tid = analysis.stacks[index].tid
                return recorded[tid] == thread || timeline.threadName(tid, recorded: recorded) == thread
            }
        }
        if let phase {
            let number = analysis.phaseNames.firstIndex(of: phase)
            selected = selected.filter { analysis.stacks[$0].phase == number }
        }
        add(analysis, selected: selected)
        return true
    }

    /// One line per module (its path starts the line): the same missing
    /// binary is named once, however many launches it was in.
    private mutating func note(_ launchWarnings: [String]) {
        for warning in launchWarnings {
            let module = warning.components(separatedBy: ": ").first ?? warning
            if warnings[module] == nil { warnings[module] = warning }
        }
    }

    private mutating func add(_ analysis: ProfileAnalysis, selected all: [Int]) {
        let everything = ProfileOptions(top: .max)
        let period = analysis.nsPerSample
        launches += 1
        samples += all.count
        ns += Double(all.count) * period
        clocks.insert(analysis.sampling.clock)
        let achievedHz = analysis.sampling.effectiveHz > 0 ? analysis.sampling.effectiveHz : 1e9 / period
        minHz = min(minHz, achievedHz)
        maxHz = max(maxHz, achievedHz)

        // Counted by pooled key, not by the launch's function id: two ids
        // with one key (the same file mapped twice) count once per sample.
        var keyIndex: [FunctionKey: Int] = [:]
        let local = analysis.functions.map { function -> Int in
            let key = FunctionKey(module: analysis.moduleName(function.module), name: function.name)
            if let index = keyIndex[key] { return index }
            keyIndex[key] = keyIndex.count
            return keyIndex.count - 1
        }
        var selfCounts = [Int](repeating: 0, count: keyIndex.count)
        var totalCounts = selfCounts
        var seenIn = [Int](repeating: -1, count: keyIndex.count)
        for number in all {
            let stack = analysis.stacks[number]
            if let leaf = stack.functions.first { selfCounts[local[leaf]] += 1 }
            for function in stack.functions where seenIn[local[function]] != number {
                seenIn[local[function]] = number
                totalCounts[local[function]] += 1
            }
        }
        for (key, index) in keyIndex where totalCounts[index] > 0 {
            var counter = functions[key] ?? FunctionCounter()
            counter.total.add(totalCounts[index], nsPerSample: period)
            if selfCounts[index] > 0 { counter.selfTime.add(selfCounts[index], nsPerSample: period) }
            functions[key] = counter
        }
        var perPhase = [Int](repeating: 0, count: analysis.phaseNames.count)
        var perThread: [Int: Int] = [:]
        for number in all {
            perPhase[analysis.stacks[number].phase] += 1
            perThread[analysis.stacks[number].tid, default: 0] += 1
        }
        // By the name a person reads: a launch's tids are its own, "main" or
        // "dispatch worker (default QoS)" are every launch's.
        let recorded = analysis.timeline.recordedThreadNames
        var byName: [String: Int] = [:]
        for (tid, count) in perThread { byName[analysis.timeline.threadName(tid, recorded: recorded), default: 0] += count }
        for (name, count) in byName { threads[name, default: Counter()].add(count, nsPerSample: period) }
        for (index, count) in perPhase.enumerated() where count > 0 {
            let kind = index < analysis.timeline.phases.count ? analysis.timeline.phases[index].kind : "after-end"
            phases[analysis.phaseNames[index], default: PhaseCounter(kind: kind, position: index)].time.add(count, nsPerSample: period)
        }
        for (phase, split) in zip(analysis.timeline.phases, KernelShare.phases(analysis.timeline, minimumPeriods: 0)) {
            guard let split else { continue }
            var counter = phases[phase.name, default: PhaseCounter(kind: phase.kind, position: analysis.phaseNames.firstIndex(of: phase.name) ?? 0)]
            counter.userNs += split.userMs * 1e6
            counter.kernelNs += split.kernelMs * 1e6
            counter.coldstartNs += (split.coldstartMs ?? 0) * 1e6
            counter.exitNs += (split.exitMs ?? 0) * 1e6
            counter.userSamples += split.userSamples
            counter.splitLaunches += 1
            counter.periodNs = max(counter.periodNs, period)
            phases[phase.name] = counter
        }
        let startup = analysis.initializers(all, options: everything)
        if startup.samples > 0 { initializers.add(startup.samples, nsPerSample: period) }
        for library in startup.libraries {
            libraries[library.module, default: LibraryCounter(isExecutable: library.isExecutable)].time.add(library.samples, nsPerSample: period)
        }
        for global in analysis.lazyGlobals(all, options: everything) {
            lazyGlobals[global.name, default: Counter()].add(global.samples, nsPerSample: period)
        }
    }

    /// Folds in another pool: the result is the pool of both sets of launches.
    package mutating func merge(_ other: PooledProfile) {
        launches += other.launches
        unsampled += other.unsampled
        samples += other.samples
        ns += other.ns
        clocks.formUnion(other.clocks)
        minHz = min(minHz, other.minHz)
        maxHz = max(maxHz, other.maxHz)
        functions.merge(other.functions) { mine, theirs in
            var sum = mine
            sum.selfTime.merge(theirs.selfTime)
            sum.total.merge(theirs.total)
            return sum
        }
        phases.merge(other.phases) { mine, theirs in
            var sum = mine
            sum.time.merge(theirs.time)
            sum.position = min(mine.position, theirs.position)
            sum.userNs += theirs.userNs
            sum.kernelNs += theirs.kernelNs
            sum.coldstartNs += theirs.coldstartNs
            sum.exitNs += theirs.exitNs
            sum.userSamples += theirs.userSamples
            sum.splitLaunches += theirs.splitLaunches
            sum.periodNs = max(mine.periodNs, theirs.periodNs)
            return sum
        }
        initializers.merge(other.initializers)
        libraries.merge(other.libraries) { var sum = $0; sum.time.merge($1.time); return sum }
        lazyGlobals.merge(other.lazyGlobals) { var sum = $0; sum.merge($1); return sum }
        threads.merge(other.threads) { var sum = $0; sum.merge($1); return sum }
        warnings.merge(other.warnings) { mine, _ in mine }
    }

    /// A phase's pooled split, per launch it was known in; nil under
    /// `KernelShare.minimumPeriods` periods of pooled CPU.
    private static func kernelShare(_ counter: PhaseCounter) -> KernelShare? {
        let cpu = counter.userNs + counter.kernelNs
        guard counter.splitLaunches > 0, cpu > 0, cpu >= KernelShare.minimumPeriods * counter.periodNs else { return nil }
        let launches = Double(counter.splitLaunches)
        return KernelShare(userNs: counter.userNs / launches, kernelNs: counter.kernelNs / launches, samples: counter.userSamples,
                           source: "pooled over \(counter.splitLaunches) launch\(counter.splitLaunches == 1 ? "" : "es")",
                           coldstartNs: counter.coldstartNs / launches, exitNs: counter.exitNs / launches)
    }

    /// The pool's `top` rows per table, most samples first.
    package func report(top: Int) -> PooledProfileReport {
        func perLaunch(_ ns: Double) -> Double { launches > 0 ? ns / Double(launches) / 1e6 : 0 }
        func percent(_ part: Int) -> Double { samples > 0 ? Double(part) * 100 / Double(samples) : 0 }
        func function(_ entry: (key: FunctionKey, value: FunctionCounter)) -> PooledProfileReport.Function {
            let counter = entry.value
            return .init(
                name: entry.key.name, module: entry.key.module,
                selfSamples: counter.selfTime.samples, selfMsPerLaunch: perLaunch(counter.selfTime.ns), selfPercent: percent(counter.selfTime.samples),
                totalSamples: counter.total.samples, totalMsPerLaunch: perLaunch(counter.total.ns), totalPercent: percent(counter.total.samples),
                launches: counter.total.launches)
        }
        func ranked(_ entries: [(key: FunctionKey, value: FunctionCounter)], by count: (FunctionCounter) -> Int) -> [PooledProfileReport.Function] {
            entries.filter { count($0.value) > 0 }
                .sorted { count($0.value) != count($1.value) ? count($0.value) > count($1.value)
                    : ($0.key.name, $0.key.module) < ($1.key.name, $1.key.module) }
                .prefix(top).map(function)
        }
        let entries = Array(functions)
        let samplesPerLaunch = launches > 0 ? Double(samples) / Double(launches) : 0
        return PooledProfileReport(
            launches: launches, unsampledLaunches: unsampled, samples: samples,
            samplesPerLaunch: samplesPerLaunch,
            msPerLaunch: perLaunch(ns), clocks: clocks.sorted(), warnings: warnings.values.sorted(),
            effectiveHz: launches > 0 ? .init(min: minHz, max: maxHz) : nil,
            precision: SamplingPrecision(pooledSamples: samples, samplesPerLaunch: samplesPerLaunch),
            phases: phases.sorted { ($0.value.position, $0.key) < ($1.value.position, $1.key) }.map { name, counter in
                let split = Self.kernelShare(counter)
                return .init(name: name, kind: counter.kind, samples: counter.time.samples, msPerLaunch: perLaunch(counter.time.ns),
                             percent: percent(counter.time.samples), launches: counter.time.launches, kernel: split,
                             kernelLaunches: split == nil ? nil : counter.splitLaunches)
            },
            bySelf: ranked(entries) { $0.selfTime.samples },
            byTotal: ranked(entries) { $0.total.samples },
            initializers: .init(
                samples: initializers.samples, msPerLaunch: perLaunch(initializers.ns), launches: initializers.launches,
                libraries: libraries.sorted { ($1.value.time.samples, $0.key) < ($0.value.time.samples, $1.key) }.prefix(top).map {
                    .init(module: $0.key, isExecutable: $0.value.isExecutable, samples: $0.value.time.samples,
                          msPerLaunch: perLaunch($0.value.time.ns), percent: percent($0.value.time.samples), launches: $0.value.time.launches)
                }),
            lazyGlobals: rows(lazyGlobals, top: top),
            threads: rows(threads, top: top))
    }

    /// Counters by name as rows, most samples first, at most `top`.
    private func rows(_ counters: [String: Counter], top: Int) -> [PooledProfileReport.Row] {
        counters.sorted { ($1.value.samples, $0.key) < ($0.value.samples, $1.key) }.prefix(top).map {
            .init(name: $0.key, samples: $0.value.samples, msPerLaunch: launches > 0 ? $0.value.ns / Double(launches) / 1e6 : 0,
                  percent: samples > 0 ? Double($0.value.samples) * 100 / Double(samples) : 0, launches: $0.value.launches)
        }
    }
}

/// A `PooledProfile` as reports show it. Every time is per launch: the
/// pooled samples × each launch's sampling period, ÷ the launches pooled
/// (CPU time of the sampling clock), with the pooled sample count it rests
/// on; `launches` in a row is how many launches that row was seen in.
package struct PooledProfileReport: Codable, Sendable, Equatable {
    package var launches: Int
    package var unsampledLaunches: Int
    package var samples: Int
    package var samplesPerLaunch: Double
    package var msPerLaunch: Double
    package var clocks: [String]
    /// Modules whose frames could not be named (as in the first launch that had them).
    package var warnings: [String]
    package var effectiveHz: Range?
    /// How precise a pooled row is, and what to do when the pool is thin.
    package var precision: SamplingPrecision
    package var phases: [Phase]
    package var bySelf: [Function]
    package var byTotal: [Function]
    package var initializers: Initializers
    package var lazyGlobals: [Row]
    /// The sampled threads by name (`main`, `dispatch worker (default
    /// QoS)`): a launch's tids are its own.
    package var threads: [Row]

    package struct Range: Codable, Sendable, Equatable {
        package var min: Double
        package var max: Double
    }

    package struct Phase: Codable, Sendable, Equatable {
        package var name: String
        package var kind: String
        package var samples: Int
        package var msPerLaunch: Double
        package var percent: Double
        package var launches: Int
        /// The phase's CPU per launch as sampled user time + kernel time,
        /// pooled (`KernelShare`; `userSamples` is the pool's); absent when
        /// no launch had a split or the pool has under 10 periods of CPU.
        package var kernel: KernelShare?
        /// The launches `kernel` is the mean of (those with a split of the
        /// phase: getrusage at both ends, or kernel-mode samples), which may
        /// be fewer than the pool's, the population of `msPerLaunch`.
        package var kernelLaunches: Int?
    }

    package struct Function: Codable, Sendable, Equatable {
        package var name: String
        package var module: String
        package var selfSamples: Int
        package var selfMsPerLaunch: Double
        package var selfPercent: Double
        package var totalSamples: Int
        package var totalMsPerLaunch: Double
        package var totalPercent: Double
        package var launches: Int
    }

    package struct Initializers: Codable, Sendable, Equatable {
        /// Samples inside any initializer.
        package var samples: Int
        package var msPerLaunch: Double
        package var launches: Int
        package var libraries: [Library]
    }

    package struct Library: Codable, Sendable, Equatable {
        package var module: String
        package var isExecutable: Bool
        package var samples: Int
        package var msPerLaunch: Double
        package var percent: Double
        package var launches: Int
    }

    package struct Row: Codable, Sendable, Equatable {
        package var name: String
        package var samples: Int
        package var msPerLaunch: Double
        package var percent: Double
        package var launches: Int
    }
}
