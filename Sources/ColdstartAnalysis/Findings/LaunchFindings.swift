import Foundation

extension ProfileAnalysis {
    /// The samples of the critical path up to the launch's end: at each
    /// moment the thread that carried the launch's work (`path`, from the
    /// off-CPU watch: an async main's work runs on dispatch workers), else
    /// the main thread.
    func criticalPathSamples(path: [LaunchReport.BlockedTime.PathPiece] = []) -> (samples: [Int], scope: CriticalPathScope) {
        let main = timeline.process.pid
        let launch = stacks.indices.filter { stacks[$0].phase < timeline.phases.count }
        guard path.isEmpty else {
            let pieces = path.map { (tid: $0.tid, startNs: Int64(($0.startMs * 1e6).rounded()), endNs: Int64(($0.endMs * 1e6).rounded())) }
            return (launch.filter { index in
                let stack = stacks[index]
                guard let piece = pieces.first(where: { stack.ns >= $0.startNs && stack.ns < $0.endNs }) else { return stack.tid == main }
                return stack.tid == piece.tid
            }, .path)
        }
        // No watcher (a program without Coldstart): when the main thread did
        // not do most of the work after main, the threads that did stand for it.
        let mainNs = timeline.launch.mainNs
        let afterMain = launch.filter { stacks[$0].ns >= mainNs }
        if afterMain.filter({ stacks[$0].tid == main }).count * 2 < afterMain.count {
            return (launch.filter { stacks[$0].tid == main || stacks[$0].ns >= mainNs }, .everyThread)
        }
        return (launch.filter { stacks[$0].tid == main }, .mainThread)
    }

    /// A function as the runtime-cost table reads it.
    func namedFrame(_ id: Int) -> NamedFrame {
        let function = functions[id]
        return NamedFrame(
            function: Self.shortName(function.name), linkageName: function.linkageName == function.name ? nil : function.linkageName,
            module: moduleName(function.module))
    }

    /// The runtime-cost table's rule of each function, matched when first needed.
    func frameRules() -> FrameRules {
        FrameRules(functions: functions.count) { [self] in namedFrame($0) }
    }

    /// Runtime costs by kind over `indices`: each distinct stack classified once.
    func runtimeCosts(_ indices: [Int], rules: inout FrameRules) -> RuntimeCostSummary {
        let app = Set(executableModules.map(moduleName))
        let isAppModule = moduleNames.map(app.contains)
        var classified: [(kind: RuntimeCostKind, caller: String?, samples: Int)] = []
        var onStack: [RuntimeCostKind: Int] = [:]
        for counted in shapeCounts(indices) {
            let stack = shapes[counted.shape]
            guard let match = rules.classify(stack) else { continue }
            for kind in rules.kinds(stack) { onStack[kind, default: 0] += counted.samples }
            let caller = rules.appFrame(in: stack, from: match.depth) { id in
                let module = functions[id].module
                return module >= 0 && isAppModule[module] && functions[id].namesFunction
            }
            classified.append((match.kind, caller?.function, counted.samples))
        }
        return RuntimeCostSummary(classified: classified, onStack: onStack, totalSamples: indices.count, nsPerSample: nsPerSample)
    }

    /// The app's own functions that cost most on the critical path, by
    /// total time, leaving out the samples other findings explain (a lazy
    /// global's or an initializer's, runtime work of a kind in the table),
    /// closures and thunks, and the frames nearly every sample passes
    /// through (`main`, a wrapper such as `Coldstart.span`): those name no
    /// place to act on. Each distinct stack is looked at once, weighted by
    /// its samples.
    func slowFunctions(_ indices: [Int], limit: Int, rules: inout FrameRules) -> [FindingInputs.NamedCost] {
        // Per function id, as arrays: a dictionary hashed each frame of each stack.
        var globals = [Int8](repeating: -1, count: functions.count)
        func isGlobal(_ id: Int) -> Bool {
            if globals[id] >= 0 { return globals[id] == 1 }
            let global = lazyGlobalName(functions[id]) != nil
            globals[id] = global ? 1 : 0
            return global
        }
        var seen = [Int](repeating: -1, count: functions.count)
        var own: [ShapeCount] = []
        for counted in shapeCounts(indices) {
            let stack = shapes[counted.shape]
            if !stack.contains(where: isGlobal), initializerFrames(stack).isEmpty, rules.classify(stack) == nil { own.append(counted) }
        }
        guard !own.isEmpty else { return [] }
        // Per app function: the positions in `own` of the stacks it is in
        // (in order of first sighting), and their samples.
        var members: [Int: [Int]] = [:]
        var samples: [Int: Int] = [:]
        var innermost: [Int: Int] = [:]
        var firstPhase: [Int: Int] = [:]
        for (position, counted) in own.enumerated() {
            let appFrames = shapes[counted.shape].filter { functions[$0].inExecutable && functions[$0].namesFunction }
            if let leaf = appFrames.first { innermost[leaf, default: 0] += counted.samples }
            for id in appFrames where seen[id] != position {
                seen[id] = position
                members[id, default: []].append(position)
                samples[id, default: 0] += counted.samples
                if firstPhase[id] == nil { firstPhase[id] = stacks[counted.first].phase }
            }
        }
        let ownSamples = own.reduce(0) { $0 + $1.samples }
        // A frame in nearly every sample is left out when other candidates
        // name its time: a wrapper's callees (`main`, `Coldstart.span`), a
        // shared helper's callers. It is kept when it is the work itself: its
        // own code has a tenth of its samples and nothing narrower names them
        // (an async main's burn, called from plumbing only).
        // A callee names a wrapper's time; callers name a shared helper's
        // only when there are two or more of them (one caller over a burn
        // that is most of the launch, as a DWARF stack shows an async
        // function above it, is no narrower place to act on).
        let everywhere = Double(ownSamples) * 0.9
        lazy var narrower = members.filter { Double(samples[$0.key] ?? 0) < everywhere && !Self.isPlumbing(functions[$0.key].name) }
        func isWrapper(_ id: Int) -> Bool {
            let count = Double(samples[id] ?? 0)
            guard count >= everywhere else { return false }
            guard Double(innermost[id] ?? 0) >= count * 0.1 else { return true }
            let mine = Set(members[id] ?? [])
            var callers: Set<String> = []   // by name: an async function's pieces are one caller
            for (other, theirs) in narrower {
                var below = 0, above = 0
                for position in theirs where mine.contains(position) {
                    let stack = shapes[own[position].shape]
                    if (stack.firstIndex(of: other) ?? .max) < (stack.firstIndex(of: id) ?? .max) {
                        below += own[position].samples
                    } else {
                        above += own[position].samples
                    }
                }
                if Double(below) >= count * 0.1 { return true }
                if Double(above) >= count * 0.1 { callers.insert(Self.shortName(functions[other].name)) }
            }
            return callers.count >= 2
        }
        // A caller seen in exactly its callee's samples is the same cost twice:
        // the frame nearest the leaf names it.
        func depth(_ id: Int) -> Int { members[id].flatMap { shapes[own[$0[0]].shape].firstIndex(of: id) } ?? 0 }
        let distinct = Dictionary(grouping: members.keys.filter { id in
            !isWrapper(id) && !Self.isPlumbing(functions[id].name)
        }) { members[$0] ?? [] }.values.compactMap { $0.min { depth($0) < depth($1) } }
        let candidates = distinct.map { ($0, samples[$0] ?? 0) }
            .sorted { ($0.1, functions[$1.0].name) > ($1.1, functions[$0.0].name) }
        let kept = candidates.prefix(limit)
        let times = stackTimes(of: Set(kept.map(\.0)), over: indices)
        return kept.map { id, count in
            var cost = FindingInputs.NamedCost(name: Self.shortName(functions[id].name), module: moduleName(functions[id].module), ms: ms(count),
                                               samples: count, phase: firstPhase[id].map { phaseNames[$0] })
            // Named from the stack that holds most of its samples.
            if let heaviest = members[id]?.max(by: { own[$0].samples < own[$1].samples }),
               let position = shapes[own[heaviest].shape].firstIndex(of: id) {
                (cost.callers, cost.callSite) = callers(of: position, inSample: own[heaviest].first)
            }
            return withStackTimes(cost, times[id])
        }
    }

    /// A function's name as a finding's title shows it: without the
    /// optimiser's specialisation prefixes or `static`.
    static func shortName(_ name: String) -> String {
        var name = Substring(name)
        // An async function's pieces name the function they belong to:
        // "(N) suspend resume partial function for ", or "await".
        if name.first == "(" {
            let digits = name.dropFirst().prefix { $0.isASCII && $0.isNumber }
            var rest = name.dropFirst(1 + digits.count)
            if !digits.isEmpty, rest.hasPrefix(") ") {
                rest = rest.dropFirst(2)
                for kind in ["suspend", "await"] where rest.hasPrefix(kind + " resume partial function for ") {
                    name = rest.dropFirst(kind.count + " resume partial function for ".count)
                }
            }
        }
        for prefix in ["function signature specialization ", "generic specialization "] where name.hasPrefix(prefix) {
            if let of = name.firstRange(of: "> of ") { name = name[of.upperBound...] }
        }
        if name.hasPrefix("static ") { name.removeFirst("static ".count) }
        return String(name)
    }

    /// Frames that are no place to act on: entry points, closures, thunks,
    /// protocol witnesses, and frames left unnamed (`module+0x…`: every
    /// address its own row).
    static func isPlumbing(_ name: String) -> Bool {
        name.containsBytes("+0x") || name == "main" || name.hasSuffix("_main") || name.hasSuffix("$main") || name.hasPrefix("_start")
            || name.hasPrefix("closure #") || name.hasPrefix("implicit closure #") || name.containsBytes("thunk")
            || name.hasPrefix("partial apply") || name.hasPrefix("__libc_") || name.hasPrefix("protocol witness for ")
            || isColdstartAPI(name)
    }

    /// Coldstart's own API (`Coldstart.span`, `mark`, `ready`), linked into
    /// the app's executable: `make demo`'s findings named
    /// `Coldstart.Coldstart.span<A>(String, () throws -> …)` as a slow function
    /// and a caller, where the time was the app's code inside the span.
    /// A static method's demangled name begins "static " (make demo's
    /// symbolized `span` did), a specialization's or a thunk's has the
    /// method after " of " or " for ".
    static func isColdstartAPI(_ name: String) -> Bool {
        name.hasPrefix("Coldstart.Coldstart.") || name.hasPrefix("static Coldstart.Coldstart.")
            || name.containsBytes(" of Coldstart.Coldstart.") || name.containsBytes(" for Coldstart.Coldstart.")
    }
}

extension FindingInputs {
    /// The findings' inputs from one analysed launch: the report's
    /// sections, all of them made, and for a sampled launch the critical
    /// path's functions and runtime costs.
    init(launch: LaunchReport.Summary, phases: [LaunchReport.PhaseRow], profile: ProfileReport?, blockedTime: LaunchReport.BlockedTime?,
         beforeMain: BeforeMain?, loaderStatistics: LoaderStatistics?, timeline: Timeline, analysis: ProfileAnalysis?) {
        self.init(launchMs: launch.totalMs)
        endsAtReady = launch.endReason != "exit"
        let modules = timeline.modules.map { Symbolizer.moduleName($0.path) }
        // The files' facts beside the measured times (the loader statistics').
        let objects = Dictionary((loaderStatistics?.objects ?? []).map { ($0.name, $0) }) { first, _ in first }
        if let phase = phases.first(where: { $0.kind == "loader" }) {
            let statistics = loaderStatistics
            loader = Loader(
                ms: phase.durationMs,
                // The one count (the objects loaded before main when the audit module saw them, else the modules mapped).
                libraryCount: LoadedObjects(timeline)?.libraries ?? 0,
                relocations: statistics?.symbolic, lookups: statistics?.lookups,
                heaviest: statistics.flatMap { Loader.heaviest($0.objects, relocation: beforeMain?.relocation ?? []) },
                swiftRuntimeIsShared: modules.contains { $0.hasPrefix("libswiftCore.so") },
                usesFoundation: modules.contains { $0.hasPrefix("libFoundation") },
                startPrecisionMs: launch.startPrecisionMs)
            loader?.reference = LoaderReference(timeline)
            loader?.sampledByLauncher = UnprofiledEstimate.loaderWasSampled(timeline)
        }
        if let profile {
            lazyGlobals = profile.lazyGlobals.map {
                NamedCost(name: $0.name, module: $0.name.split(separator: ".").first.map(String.init) ?? "", ms: $0.ms,
                          samples: $0.samples, phase: $0.phases.first)
            }
            initializers = profile.initializers.libraries.map {
                Initializer(module: $0.module, isExecutable: $0.isExecutable, ms: $0.ms, samples: $0.samples, function: $0.constructors.first?.name,
                            staticFacts: objects[$0.module].map { "\($0.name): " + StaticFacts.phrase($0) })
            }
        }
        if let analysis {
            let critical = analysis.criticalPathSamples(path: blockedTime?.path ?? [])
            var rules = analysis.frameRules()
            functions = analysis.slowFunctions(critical.samples, limit: Finding.limit, rules: &rules)
            libraryCalls = analysis.libraryCalls(critical.samples, limit: Finding.limit, rules: &rules)
            runtimeCosts = analysis.runtimeCosts(critical.samples, rules: &rules)
            runtimeCosts?.scope = critical.scope.rawValue
        }
        // Waits for a page are the page-fault finding's, not a blocking wait's.
        let pageFault = Timeline.Cause.pageFault.name
        if let blocked = blockedTime {
            blockingWaits = blocked.launch.blocked.filter { $0.cause != "running" && $0.cause != "short" && $0.cause != pageFault }.map {
                BlockingWait(cause: $0.cause, what: $0.what, ms: $0.ms)
            }
        }
        // Counts since exec at the launch's end (the loader's faults too,
        // which a phase with no snapshot at its start leaves out), else the
        // phases' own.
        let atEnd = (timeline.rusage.first { $0.at == "ready" } ?? timeline.rusage.first { $0.at == "end" }).map(\.usage)
        let counts = atEnd.map { [($0.minorFaults, $0.majorFaults)] }
            ?? phases.compactMap { $0.usage.map { ($0.minorFaults, $0.majorFaults) } }
        if !counts.isEmpty {
            let watched = blockedTime.map { $0.launch.blocked.filter { $0.cause == pageFault }.map(\.ms).reduce(0, +) }
            pageFaults = PageFaults(counts: counts.reduce((0, 0)) { ($0.0 &+ $1.0, $0.1 &+ $1.1) },
                                    watchedMajorMs: watched.flatMap { $0 > 0 ? $0 : nil })
        }
        // What Coldstart cost the critical path (the estimate without profiling).
        let setup = launch.profilerSetupMs
        let running = launch.withoutProfiling.map { $0.subtractedMs - (setup ?? 0) - ($0.parts.first { $0.name == "start time" }?.ms ?? 0) } ?? 0
        if (setup ?? 0) + running > 0 {
            profilerCost = ProfilerCost(setupMs: setup, samplingMs: max(running, 0),
                                        leftOutOfEstimate: launch.withoutProfiling?.ms != nil)
        }
    }
}
