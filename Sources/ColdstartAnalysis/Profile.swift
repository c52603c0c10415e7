import Foundation

/// What a profile report covers and how much of it it shows.
public struct ProfileOptions: Sendable {
    /// Rows (functions, call-tree nodes) under this many milliseconds are left out.
    public var minMs: Double
    /// Rows under this share of the selected samples are left out.
    public var minPercent: Double
    /// At most this many rows per table (and children per call-tree node).
    public var top: Int
    /// Only samples taken during the phase of this name.
    public var phase: String?
    /// Only samples of this thread.
    public var thread: Int?
    /// Call-tree levels shown below the roots.
    public var treeDepth: Int
    /// Call-tree nodes under this share are always pruned, whatever
    /// `minPercent` says, so the tree stays readable.
    public var treeFloorPercent: Double

    public init(
        minMs: Double = 0, minPercent: Double = 0, top: Int = 15, phase: String? = nil, thread: Int? = nil,
        treeDepth: Int = 12, treeFloorPercent: Double = 0.5
    ) {
        self.minMs = minMs
        self.minPercent = minPercent
        self.top = top
        self.phase = phase
        self.thread = thread
        self.treeDepth = treeDepth
        self.treeFloorPercent = treeFloorPercent
    }
}

/// Why a profile could not be made; one line naming the file.
public struct ProfileError: Error, CustomStringConvertible, Sendable {
    public var path: String
    public var problem: String
    public var description: String { "\(path): \(problem)" }
}

/// The sampled-stacks part of `coldstart report`: where the launch's CPU time
/// went, by function, phase, thread, library initializer and lazy global.
///
/// Every time is `samples × (1 / effectiveHz)`: a sample stands for one period
/// of the sampling clock (with the perf task clock, one period of the sampled
/// thread's own CPU time), so each figure is exact to about ±1 sample and
/// carries the count it rests on.
public struct ProfileReport: Codable, Sendable, Equatable {
    public var sampling: SamplingInfo
    public var selection: Selection
    /// Lines about names that could not be found (missing or rebuilt binaries).
    public var warnings: [String]
    /// Every selected sample.
    public var overall: FunctionTable
    /// One entry per launch phase, in order, and one for samples after the end
    /// (the `COLDSTART_EXTEND_MS` window) when there are any.
    public var phases: [PhaseProfile]
    public var threads: [ThreadProfile]
    public var initializers: Initializers
    public var lazyGlobals: [LazyGlobal]
    /// Top-down, merged by function; roots are the outermost frames.
    public var callTree: [CallNode]

    public struct SamplingInfo: Codable, Sendable, Equatable {
        public var clock: String
        public var unwinder: String
        public var requestedHz: Double
        public var effectiveHz: Double
        public var loweredHz: Double?
        /// The time one sample stands for: 1000 / effectiveHz.
        public var msPerSample: Double
        public var samples: Int
        public var dropped: Int
        /// The sample buffer's size: samples past it are dropped.
        public var maxSamples: Int?
        public var threadsSampled: Int?
        /// Threads that ran but were never sampled (their time is missing).
        public var threadsMissed: Int?
        /// Samples walked by frame pointer because libunwind failed.
        public var unwindFailures: Int?
        public var startMs: Double
        public var stopMs: Double
    }

    public struct Selection: Codable, Sendable, Equatable {
        public var phase: String?
        public var thread: Int?
        public var minMs: Double
        public var minPercent: Double
        public var top: Int
        public var treeDepth: Int
        public var treeMinPercent: Double
        public var samples: Int
        public var ms: Double
    }

    public struct FunctionTime: Codable, Sendable, Equatable {
        public var name: String
        /// File name of the module holding it ("" when outside every module).
        public var module: String
        public var selfSamples: Int
        public var selfMs: Double
        public var selfPercent: Double
        /// Samples with the function anywhere on the stack, counted once per
        /// sample however often it recurs.
        public var totalSamples: Int
        public var totalMs: Double
        public var totalPercent: Double
        /// The first sample it was on the stack, ms after process start.
        public var firstSeenMs: Double
    }

    public struct FunctionTable: Codable, Sendable, Equatable {
        public var samples: Int
        public var ms: Double
        /// Highest self time first; rows under the thresholds left out.
        public var bySelf: [FunctionTime]
        /// Highest total time first.
        public var byTotal: [FunctionTime]
    }

    public struct PhaseProfile: Codable, Sendable, Equatable {
        public var name: String
        /// The phase's kind, or "after-end" for samples after the launch ended.
        public var kind: String
        public var startMs: Double
        public var endMs: Double?
        /// False when sampling did not run during the phase (the loader phase:
        /// sampling starts at the earliest init).
        public var sampled: Bool
        public var functions: FunctionTable
    }

    public struct ThreadProfile: Codable, Sendable, Equatable {
        public var tid: Int
        public var name: String
        public var samples: Int
        public var ms: Double
        public var percent: Double
        public var firstMs: Double
        public var lastMs: Double
        public var topSelf: [FunctionTime]
    }

    public struct Initializers: Codable, Sendable, Equatable {
        /// Samples under any initializer, counted once.
        public var samples: Int
        public var ms: Double
        /// Samples of the library-initializers phase under no recognisable
        /// initializer (the loader's own work, or a stack the unwinder cut short).
        public var unattributedSamples: Int
        public var libraries: [LibraryInitializer]
    }

    public struct LibraryInitializer: Codable, Sendable, Equatable {
        public var module: String
        public var path: String
        /// The program itself (preinit functions and constructors) rather than
        /// a shared library.
        public var isExecutable: Bool
        public var samples: Int
        public var ms: Double
        public var percent: Double
        public var firstSeenMs: Double
        /// The functions the loader (or libc) called, with their samples.
        public var constructors: [NamedTime]
    }

    public struct NamedTime: Codable, Sendable, Equatable {
        public var name: String
        public var samples: Int
        public var ms: Double
    }

    public struct LazyGlobal: Codable, Sendable, Equatable {
        /// `Module.global`, from the one-time initialization function's name.
        public var name: String
        public var samples: Int
        public var ms: Double
        public var percent: Double
        public var firstSeenMs: Double
        /// The phases its samples fell in, in launch order.
        public var phases: [String]
    }

    public struct CallNode: Codable, Sendable, Equatable {
        public var name: String
        public var module: String
        public var samples: Int
        public var ms: Double
        public var percent: Double
        public var selfSamples: Int
        public var children: [CallNode]
    }
}

/// The working state behind a `ProfileReport`: functions interned to
/// integers, each sample's stack as function ids, each sample's phase.
struct ProfileAnalysis {
    struct Function {
        var name: String
        var linkageName: String
        var module: Int
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
    private var loaderModules: Set<Int> = []
    private var libcModules: Set<Int> = []
    private var executableModules: Set<Int> = []

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
        var frameIDs: [Timeline.Frame: Int] = [:]
        let starts = timeline.phases.map(\.startNs)
        stacks.reserveCapacity(timeline.samples.count)
        for sample in timeline.samples {
            let stack = sample.frames.map { frame -> Int in
                if let id = frameIDs[frame] { return id }
                let symbol = symbols[frame.key] ?? Timeline.Symbol(name: Symbolizer.fallbackName(for: frame, modules: timeline.modules))
                let module = frame.module >= 0 && frame.module < timeline.modules.count ? frame.module : -1
                let key = "\(module)\u{1}\(symbol.name)"
                let id = ids[key] ?? functions.count
                if id == functions.count {
                    ids[key] = id
                    functions.append(Function(name: symbol.name, linkageName: symbol.system ?? symbol.name, module: module))
                }
                frameIDs[frame] = id
                return id
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

    private func byCountThenName(_ a: Int, _ fa: Function, _ b: Int, _ fb: Function) -> Bool {
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

    // MARK: Initializers

    /// The constructor frames (index into the leaf-first stack) of every
    /// initializer a stack is inside:
    /// - a shared library's (or the program's preinit) function: the first
    ///   frame of another module directly above the loader's `_dl_init` /
    ///   `call_init`, or above the loader's outermost frames when the loader
    ///   has no symbols (start-up stacks are rooted in the loader);
    /// - the program's constructors: the frame directly above
    ///   `__libc_start_main`, unless it is the libc frame that leads to
    ///   `main` (`__libc_start_call_main`, glibc ≥ 2.34) or `main` itself.
    func initializerFrames(_ stack: [Int]) -> [Int] {
        var found: [Int] = []
        var rootedInLoader = true
        for position in stride(from: stack.count - 1, through: 1, by: -1) {
            let function = functions[stack[position]]
            let inLoader = loaderModules.contains(function.module)
            rootedInLoader = rootedInLoader && inLoader
            let callee = functions[stack[position - 1]]
            if inLoader, !loaderModules.contains(callee.module) {
                let isInit = ["_dl_init", "call_init"].contains(function.name)
                    || (rootedInLoader && function.name == function.linkageName && function.name.contains("+0x"))
                if isInit { found.append(position - 1) }
            }
            if libcModules.contains(function.module), function.name == "__libc_start_main" {
                var constructor = position - 1
                while constructor > 0, ["call_init", "__libc_csu_init", "_init"].contains(functions[stack[constructor]].name) {
                    constructor -= 1
                }
                let candidate = functions[stack[constructor]]
                let leadsToMain = (constructor == position - 1 && libcModules.contains(candidate.module))
                    || candidate.name == "main" || candidate.name.hasSuffix("_main")
                if !leadsToMain { found.append(constructor) }
            }
        }
        return found
    }

    func initializers(_ indices: [Int], options: ProfileOptions) -> ProfileReport.Initializers {
        struct Tally { var samples = 0; var first = Int64.max; var constructors: [Int: Int] = [:] }
        var byModule: [Int: Tally] = [:]
        var under = 0, unattributed = 0
        let initializerPhases = Set(timeline.phases.indices.filter { timeline.phases[$0].kind == "initializers" })
        for index in indices {
            let stack = stacks[index]
            let frames = initializerFrames(stack.functions)
            if frames.isEmpty {
                if initializerPhases.contains(stack.phase) { unattributed += 1 }
                continue
            }
            under += 1
            var modulesSeen: Set<Int> = []
            for frame in frames {
                let function = stack.functions[frame]
                let module = functions[function].module
                if modulesSeen.insert(module).inserted {
                    byModule[module, default: Tally()].samples += 1
                    byModule[module]!.first = min(byModule[module]!.first, stack.ns)
                }
                byModule[module]!.constructors[function, default: 0] += 1
            }
        }
        var libraries: [ProfileReport.LibraryInitializer] = []
        for (module, tally) in byModule {
            let constructors = tally.constructors.sorted {
                byCountThenName($0.value, functions[$0.key], $1.value, functions[$1.key])
            }
            let row = ProfileReport.LibraryInitializer(
                module: moduleName(module), path: module >= 0 ? timeline.modules[module].path : "",
                isExecutable: executableModules.contains(module),
                samples: tally.samples, ms: ms(tally.samples), percent: percent(tally.samples, of: indices.count),
                firstSeenMs: Double(tally.first) / 1e6,
                constructors: constructors.prefix(options.top).map {
                    ProfileReport.NamedTime(name: functions[$0.key].name, samples: $0.value, ms: ms($0.value))
                })
            if row.ms >= options.minMs && row.percent >= options.minPercent { libraries.append(row) }
        }
        libraries.sort { $0.samples != $1.samples ? $0.samples > $1.samples : $0.path < $1.path }
        return ProfileReport.Initializers(samples: under, ms: ms(under), unattributedSamples: unattributed, libraries: Array(libraries.prefix(options.top)))
    }

    // MARK: Lazy globals

    /// The global a Swift one-time initialization function (`…WZ`) sets up,
    /// as `Module.global`; nil for any other function.
    func lazyGlobalName(_ function: Function) -> String? {
        guard function.linkageName.hasSuffix("WZ"), Demangler.isSwiftMangled(function.linkageName) else { return nil }
        let prefix = "one-time initialization function for "
        let global = function.name.hasPrefix(prefix) ? String(function.name.dropFirst(prefix.count)) : function.name
        guard let module = Self.swiftModuleName(function.linkageName) else { return global }
        return "\(module).\(global)"
    }

    /// The runtime's once, which calls a lazy global's initializer on first
    /// use: `swift_once` reaches `swift::threading_impl::once_slow`.
    func isRuntimeOnce(_ function: Function) -> Bool {
        function.name.contains("once_slow") || function.name.contains("swift_once")
    }

    /// The module a Swift mangled name starts in: `$s14ServiceStartup…` →
    /// `ServiceStartup` (nil for the standard library's `$sS…` and odd forms).
    static func swiftModuleName(_ mangled: String) -> String? {
        guard let marker = mangled.range(of: "$s") ?? mangled.range(of: "$e") else { return nil }
        let rest = mangled[marker.upperBound...]
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        guard let length = Int(digits), length > 0 else { return nil }
        let name = rest.dropFirst(digits.count).prefix(length)
        return name.count == length ? String(name) : nil
    }

    func lazyGlobals(_ indices: [Int], options: ProfileOptions) -> [ProfileReport.LazyGlobal] {
        struct Tally { var samples = 0; var first = Int64.max; var phases: Set<Int> = [] }
        var byName: [String: Tally] = [:]
        let globalNames = functions.map(lazyGlobalName)
        let onces = functions.map(isRuntimeOnce)
        for index in indices {
            let stack = stacks[index].functions
            var seen: Set<String> = []
            for position in stack.indices.dropLast() where onces[stack[position + 1]] {
                guard let name = globalNames[stack[position]], seen.insert(name).inserted else { continue }
                byName[name, default: Tally()].samples += 1
                byName[name]!.first = min(byName[name]!.first, stacks[index].ns)
                byName[name]!.phases.insert(stacks[index].phase)
            }
        }
        var globals: [ProfileReport.LazyGlobal] = []
        for (name, tally) in byName {
            let row = ProfileReport.LazyGlobal(
                name: name, samples: tally.samples, ms: ms(tally.samples), percent: percent(tally.samples, of: indices.count),
                firstSeenMs: Double(tally.first) / 1e6, phases: tally.phases.sorted().map { phaseNames[$0] })
            if row.ms >= options.minMs && row.percent >= options.minPercent { globals.append(row) }
        }
        globals.sort { $0.samples != $1.samples ? $0.samples > $1.samples : $0.name < $1.name }
        return Array(globals.prefix(options.top))
    }

    // MARK: Call tree

    func callTree(_ indices: [Int], options: ProfileOptions, minPercent: Double) -> [ProfileReport.CallNode] {
        final class Node {
            let function: Int
            var samples = 0
            var selfSamples = 0
            var children: [Int: Node] = [:]
            init(_ function: Int) { self.function = function }
        }
        let root = Node(-1)
        for index in indices {
            var node = root
            for function in stacks[index].functions.reversed() {
                let child: Node
                if let existing = node.children[function] {
                    child = existing
                } else {
                    child = Node(function)
                    node.children[function] = child
                }
                child.samples += 1
                node = child
            }
            if node !== root { node.selfSamples += 1 }
        }
        let total = indices.count
        func convert(_ node: Node, depth: Int) -> [ProfileReport.CallNode] {
            guard depth <= options.treeDepth else { return [] }
            return node.children.values
                .filter { ms($0.samples) >= options.minMs && percent($0.samples, of: total) >= minPercent }
                .sorted { byCountThenName($0.samples, functions[$0.function], $1.samples, functions[$1.function]) }
                .prefix(options.top)
                .map { child in
                    ProfileReport.CallNode(
                        name: functions[child.function].name, module: moduleName(functions[child.function].module),
                        samples: child.samples, ms: ms(child.samples), percent: percent(child.samples, of: total),
                        selfSamples: child.selfSamples, children: convert(child, depth: depth + 1))
                }
        }
        return convert(root, depth: 0)
    }
}

extension Timeline {
    /// A thread's name: the one the timeline recorded, else "main" for the
    /// process's first thread, else "thread TID".
    func threadName(_ tid: Int) -> String {
        threads.first { $0.tid == tid }?.name ?? (tid == process.pid ? "main" : "thread \(tid)")
    }
}

// MARK: Time order

/// A run of consecutive samples of one thread with the same function at the
/// same depth: a slice of a flame chart in time order.
public struct StackRun: Sendable, Equatable {
    /// A function id of `SampledStacks.functions`.
    public var function: Int
    /// 0 for the outermost frame.
    public var depth: Int
    public var startNs: Int64
    public var endNs: Int64
    public var samples: Int
}

extension ProfileAnalysis {
    /// The samples `indices` (one thread's) as nested runs, sorted by start
    /// then depth. A sample stands for the time up to the next one; a gap of
    /// more than two sampling periods (the thread slept, or was not sampled)
    /// ends every run one period after its last sample.
    func runs(_ indices: [Int]) -> [StackRun] {
        let period = Int64(nsPerSample.rounded())
        let ordered = indices.sorted { (stacks[$0].ns, $0) < (stacks[$1].ns, $1) }
        struct Open { var function: Int; var start: Int64; var samples: Int }
        var open: [Open] = []
        var runs: [StackRun] = []
        func close(from depth: Int, at end: Int64) {
            while open.count > depth {
                let run = open.removeLast()
                runs.append(StackRun(function: run.function, depth: open.count, startNs: run.start,
                                     endNs: max(end, run.start), samples: run.samples))
            }
        }
        var previous: Int64?
        for index in ordered {
            let sample = stacks[index]
            if let previous, sample.ns - previous > 2 * period { close(from: 0, at: previous + period) }
            let stack = sample.functions.reversed() as ReversedCollection<[Int]>
            var common = 0
            for function in stack {
                guard common < open.count, open[common].function == function else { break }
                common += 1
            }
            close(from: common, at: sample.ns)
            for function in stack.dropFirst(common) { open.append(Open(function: function, start: sample.ns, samples: 0)) }
            for position in open.indices { open[position].samples += 1 }
            previous = sample.ns
        }
        if let previous { close(from: 0, at: previous + period) }
        return runs.sorted { ($0.startNs, $0.depth) < ($1.startNs, $1.depth) }
    }
}
