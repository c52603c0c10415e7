import Foundation

/// A cost a developer can act on: what it is, how long it took, where it
/// is, how sure the figure is, and what to try. A report opens with the
/// launch's findings, most milliseconds first.
package struct Finding: Codable, Sendable, Equatable {
    package enum Kind: String, Codable, Sendable, CaseIterable {
        case slowFunction = "slow-function"
        case libraryCall = "library-call"
        case slowLazyGlobal = "slow-lazy-global"
        case slowInitializer = "slow-initializer"
        case blockingWait = "blocking-wait"
        case loader
        case pageFaults = "page-faults"
        case runtimeCost = "runtime-cost"
        case profilerCost = "profiler-cost"
    }

    /// How the figure was obtained.
    package enum Certainty: Codable, Sendable, Equatable {
        /// Counted from CPU samples: known to about ± one sample.
        case samples(Int)
        /// Timed exactly (spans, phase boundaries, the loader's statistics).
        case exact
        /// Derived from counters (page faults × a measured cost each).
        case estimate
        /// Seen by the off-CPU watcher's looks at the thread.
        case watched

        package var text: String {
            switch self {
            case .samples(let count): "\(count) sample\(count == 1 ? "" : "s")"
            case .exact: "exact"
            case .estimate: "estimate"
            case .watched: "watched"
            }
        }

        // In JSON, the text a person reads: "232 samples", "exact".
        package init(from decoder: Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            switch text {
            case "exact": self = .exact
            case "estimate": self = .estimate
            case "watched": self = .watched
            default:
                guard let count = text.split(separator: " ").first.flatMap({ Int($0) }) else {
                    throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "certainty '\(text)'"))
                }
                self = .samples(count)
            }
        }

        package func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(text)
        }
    }

    package var kind: Kind
    /// What it is, in a few words: `slow lazy global ServiceStartup.routingTable`.
    package var title: String
    package var ms: Double
    /// Of the launch's wall time.
    package var percent: Double
    /// Where: function, library, global, file, phase.
    package var location: String
    package var certainty: Certainty
    /// One line, grounded in what was measured.
    package var advice: String
    /// For a figure counted in samples: the 95% interval of the time behind
    /// the count (SamplePrecision); absent for the other certainties.
    package var msLow: Double?
    package var msHigh: Double?
    /// For a slow function or library call: its time as the leaf, and with
    /// it anywhere on the critical path's stacks (the runtime work, lazy
    /// globals and initializers inside it included, which `ms` leaves to
    /// their own findings).
    package var selfMs: Double?
    package var totalMs: Double?
    /// Its callers on its heaviest stack, nearest first, up to the app's
    /// own code, whose call reads "File.swift:8" when DWARF has it.
    package var callers: [String]?
    package var callSite: String?
}

/// What findings are made from: figures the analysis already has, in plain
/// values, so the ranking is tested without a timeline.
package struct FindingInputs: Sendable {
    /// Process start to the launch's end (`ready()` or exit), wall ms.
    package var launchMs: Double
    /// The launch ended at `ready()`; false for a tool that ends at its exit,
    /// where "after ready()" is no advice.
    package var endsAtReady = true

    /// A function or a lazy global: a named cost in a module.
    package struct NamedCost: Sendable {
        /// A function's display name, or a global's `Type.global`.
        package var name: String
        package var module: String
        package var ms: Double
        package var samples: Int
        package var phase: String?
        /// Samples with it as the leaf, and anywhere on the stack, of all
        /// the critical path's samples (runtime work inside it included);
        /// nil when not counted.
        package var selfSamples: Int?
        package var selfMs: Double?
        package var totalSamples: Int?
        package var totalMs: Double?
        /// Its callers on its heaviest stack, nearest first, up to the app's
        /// own code (`ProfileAnalysis.callers`).
        package var callers: [String] = []
        /// The app's call on that stack, "File.swift:8", from DWARF.
        package var callSite: String?
        package init(name: String, module: String, ms: Double, samples: Int, phase: String? = nil) {
            (self.name, self.module, self.ms, self.samples, self.phase) = (name, module, ms, samples, phase)
        }
    }

    package struct Initializer: Sendable {
        package var module: String
        /// The program's own preinit functions and constructors.
        package var isExecutable: Bool
        package var ms: Double
        package var samples: Int
        /// The constructor with most samples.
        package var function: String?
        /// What its file says (`coldstart inspect`): "libFoo.so: 2 initializers, 6 symbolic relocations (…)".
        package var staticFacts: String?
        package init(module: String, isExecutable: Bool, ms: Double, samples: Int, function: String? = nil, staticFacts: String? = nil) {
            (self.module, self.isExecutable, self.ms, self.samples, self.function) = (module, isExecutable, ms, samples, function)
            self.staticFacts = staticFacts
        }
    }

    package struct BlockingWait: Sendable {
        /// What the thread waited on: the timeline's cause name (`file-read`,
        /// `lock`, `sleep`, `memory` …, Timeline.Cause).
        package var cause: String
        /// On what: a file, a lock, the caller's function.
        package var what: String
        package var ms: Double
        package var phase: String?
        package init(cause: String, what: String, ms: Double, phase: String? = nil) {
            (self.cause, self.what, self.ms, self.phase) = (cause, what, ms, phase)
        }
    }

    package struct Loader: Sendable {
        /// Process start to the first user code (the loader phase).
        package var ms: Double
        /// The shared libraries loaded before `main` (`LoadedObjects.libraries`).
        package var libraryCount: Int
        /// Symbolic relocations processed at start-up, when known (`LoaderStatistics`).
        package var relocations: Int?
        /// Symbol look-ups they took (glibc's "number of relocations").
        package var lookups: Int?
        /// The object the loader spent most sampled time relocating, else
        /// the one with most symbolic relocations.
        package var heaviest: Library?
        /// libswiftCore.so was loaded: the Swift runtime is linked dynamically.
        package var swiftRuntimeIsShared: Bool
        package var usesFoundation: Bool
        /// How precisely the process start is known: the loader phase begins
        /// there, so a start from /proc's ticks or an estimate makes `ms` an
        /// estimate too.
        package var startPrecisionMs: Double
        /// The same span in the run's launches without loader sampling
        /// (`LoaderReference`): `ms` is the loader under sampling.
        package var reference: LoaderReference?
        /// The launcher's LD_AUDIT module, perf events or ptrace ran from
        /// exec (`coldstart run`'s loader sampling): their work is inside
        /// `ms` (issue 26 measured +5.0 and +5.3 ms), so the figure times the
        /// loader as disturbed, not the loader alone.
        package var sampledByLauncher = false
        package init(ms: Double, libraryCount: Int, relocations: Int? = nil, lookups: Int? = nil, heaviest: Library? = nil,
                     swiftRuntimeIsShared: Bool, usesFoundation: Bool, startPrecisionMs: Double = 0) {
            (self.ms, self.libraryCount, self.relocations, self.lookups, self.heaviest) = (ms, libraryCount, relocations, lookups, heaviest)
            (self.swiftRuntimeIsShared, self.usesFoundation, self.startPrecisionMs) = (swiftRuntimeIsShared, usesFoundation, startPrecisionMs)
        }

        /// A launcher's stamp is exact to microseconds; anything coarser is not.
        /// ...and without the launcher's sampling inside the span.
        var isExact: Bool { startPrecisionMs <= 0.1 && !sampledByLauncher }

        /// What the figure includes besides the loader, when it is not exact.
        var precisionText: String {
            var parts: [String] = []
            if sampledByLauncher {
                parts.append(reference == nil
                    ? "timed under the launcher's loader sampling (LD_AUDIT module, perf from exec), which adds to it; --no-sample-loader times the loader alone"
                    : "timed under the launcher's loader sampling, which adds to it")
            }
            if startPrecisionMs > 0.1 { parts.append(String(format: "start ±%.1f ms", startPrecisionMs)) }
            return parts.map { "; " + $0 }.joined()
        }

        /// A library's sampled relocation time is named when it rests on at
        /// least this many samples; fewer (a linked app's loader at 1 kHz gets
        /// a handful) could make any library "the slowest".
        static let minimumTimedSamples = 10

        /// The object the loader spent most sampled time relocating (of those
        /// with `minimumTimedSamples`), else the one with most symbolic
        /// relocations (`objects` come most first).
        static func heaviest(_ objects: [ObjectRelocations], relocation: [BeforeMain.Entry]) -> Library? {
            let timed = Dictionary(relocation.filter { $0.count >= minimumTimedSamples }.map { ($0.name, $0.ms) }) { first, _ in first }
            let slowest = objects.compactMap { object in timed[object.name].map { (object, $0) } }.max { $0.1 < $1.1 }
            return (slowest?.0 ?? objects.first).map { object in
                Library(name: object.name, symbolic: object.symbolic, lookups: object.lookups, ms: timed[object.name], isOwn: object.isOwn,
                        staticFacts: object.initializers == nil ? nil : StaticFacts.phrase(object))
            }
        }

        package struct Library: Sendable {
            package var name: String
            package var symbolic: Int
            package var lookups: Int
            /// The loader's sampled time relocating it, when sampled.
            package var ms: Double?
            /// Built with the app (not the Swift toolchain's nor the system's):
            /// its relocations are the developer's to change.
            package var isOwn: Bool
            /// What its file says (`coldstart inspect`): "2 initializers, 5,746 symbolic relocations (…)".
            package var staticFacts: String?
            package init(name: String, symbolic: Int, lookups: Int, ms: Double?, isOwn: Bool, staticFacts: String? = nil) {
                (self.name, self.symbolic, self.lookups, self.ms, self.isOwn) = (name, symbolic, lookups, ms, isOwn)
                self.staticFacts = staticFacts
            }
        }
    }

    package struct PageFaults: Sendable {
        package var minor: UInt64
        package var major: UInt64
        /// Time the faults took, when measured (the watcher's page-fault
        /// waits, kernel samples) or estimated.
        package var ms: Double
        /// The part of `ms` that was the major faults'.
        var majorMs: Double
        package var certainty: Finding.Certainty
        /// How `ms` was made up, for the finding's location.
        package var detail: String?
        package init(minor: UInt64, major: UInt64, ms: Double, majorMs: Double? = nil, certainty: Finding.Certainty, detail: String? = nil) {
            (self.minor, self.major, self.ms, self.certainty, self.detail) = (minor, major, ms, certainty, detail)
            self.majorMs = majorMs ?? (major > 0 ? ms : 0)
        }

        /// What one fault costs, measured on the reference machine (a 2-core
        /// VM, docs/report.md): a minor fault (a page already in memory,
        /// file-backed or zeroed) ~2.5–3.9 µs; a major fault (read from
        /// disk) 45–80 µs. The lower ends, so the estimate does not inflate.
        static let minorFaultMs = 0.0025
        static let majorFaultMs = 0.045

        /// The launch's faults (the phases' rusage, process-wide): the
        /// major faults' time as the watcher saw the critical path wait for
        /// them (`watchedMajorMs`), else estimated from the count, plus the
        /// minor faults' estimated kernel time.
        package init(counts: (minor: UInt64, major: UInt64), watchedMajorMs: Double?) {
            let minorMs = Double(counts.minor) * Self.minorFaultMs
            let majorMs = watchedMajorMs ?? Double(counts.major) * Self.majorFaultMs
            let major = counts.major == 0 && watchedMajorMs == nil ? ""
                : watchedMajorMs.map { String(format: "; major: %.1f ms waited on the critical path (watched)", $0) }
                    ?? String(format: "; major: ~%.1f ms at ~%.0f µs each", majorMs, Self.majorFaultMs * 1000)
            self.init(minor: counts.minor, major: counts.major, ms: minorMs + majorMs, majorMs: majorMs,
                      certainty: counts.minor == 0 && watchedMajorMs != nil ? .watched : .estimate,
                      detail: String(format: "minor: ~%.1f ms at ~%.1f µs each", minorMs, Self.minorFaultMs * 1000) + major)
        }
    }

    package struct ProfilerCost: Sendable {
        /// Coldstart's set-up phase, exact; nil for a program that does not
        /// link Coldstart (it has none).
        package var setupMs: Double?
        /// What sampling and Coldstart's threads cost the critical path
        /// (UnprofiledEstimate: signals on the path, CPU it waited for).
        package var samplingMs: Double
        /// Whether the header prints a launch "without profiling" (it says
        /// why not otherwise).
        package var leftOutOfEstimate: Bool
        package init(setupMs: Double?, samplingMs: Double, leftOutOfEstimate: Bool) {
            (self.setupMs, self.samplingMs, self.leftOutOfEstimate) = (setupMs, samplingMs, leftOutOfEstimate)
        }
    }

    /// Time on the critical path (the thread that reaches `ready()`) with
    /// the function on the stack, outside every lazy global and initializer
    /// (those have findings of their own).
    package var functions: [NamedCost] = []
    /// The calls the app's own code makes into a library that hold the
    /// critical path (the outermost library frame under an app frame),
    /// runtime work inside them included.
    package var libraryCalls: [NamedCost] = []
    package var lazyGlobals: [NamedCost] = []
    package var initializers: [Initializer] = []
    package var blockingWaits: [BlockingWait] = []
    package var loader: Loader?
    package var pageFaults: PageFaults?
    package var runtimeCosts: RuntimeCostSummary?
    package var profilerCost: ProfilerCost?

    package init(launchMs: Double) {
        self.launchMs = launchMs
    }
}

extension FindingInputs.NamedCost {
    /// A finding's location: its callers with the call's line, its module
    /// (`module`, as the finding says it), its self and on-the-stack time,
    /// and the phase it was first seen in.
    func whereText(module: String) -> String {
        var parts: [String] = []
        if !callers.isEmpty { parts.append("called from " + callers.joined(separator: " ← ")) }
        var figures = module
        if let selfMs, let totalMs {
            figures += String(format: "; self %.1f ms, on the stack %.1f ms", selfMs, totalMs)
            if totalMs - ms >= 0.05 {
                figures += String(format: " (%.1f ms of it runtime work or start-up code, in their own findings)", totalMs - ms)
            }
        }
        parts.append(figures)
        if let phase { parts.append("phase '\(phase)'") }
        return parts.joined(separator: " · ")
    }
}

extension Finding {
    /// At most this many findings lead a report.
    package static let limit = 7

    /// At least this many when there are candidates of any size.
    package static let minimum = 3

    /// The launch's findings, most milliseconds first: every candidate of
    /// at least `floorPercent` of the launch (and 0.5 ms), at most `limit`,
    /// library initializers of that size first in;
    /// fewer than `minimum` are topped up with the next largest of at least
    /// 0.5 % and 0.1 ms.
    /// Runtime work already inside a reported lazy global, and the loader's
    /// own kinds, are not counted twice.
    /// The loader's time in the run's launches without the launcher's
    /// sampling, where that span ends and how precisely, before the rest of
    /// the loader finding's location.
    static func referencePhrase(_ reference: LoaderReference) -> String {
        switch reference.end {
        case .earliestInit:
            String(format: "%.1f ms without the launcher's sampling (median of %d); ", Double(reference.medianNs) / 1e6, reference.launches)
        case .loaderStatistics:
            // The span's end is the print's arrival at the launcher: late by its wake-up, µs on an idle CPU.
            String(format: "%.1f ms without the launcher's sampling (exec → ld.so's statistics, before initializers; median of %d, %.1f–%.1f ms); ",
                   Double(reference.medianNs) / 1e6, reference.launches, Double(reference.p25Ns) / 1e6, Double(reference.p75Ns) / 1e6)
        }
    }

    package static func ranked(_ inputs: FindingInputs, floorPercent: Double = 1) -> [Finding] {
        let launch = max(inputs.launchMs, 1e-9)
        func percent(_ ms: Double) -> Double { ms * 100 / launch }
        var candidates: [Finding] = []

        if let loader = inputs.loader {
            candidates.append(Finding(
                kind: .loader, title: "dynamic loading before any code runs", ms: loader.ms, percent: percent(loader.ms),
                // First, so that the first screen's one line keeps it.
                location: (loader.reference.map(Self.referencePhrase) ?? "")
                    + LoadedObjects.librariesPhrase(loader.libraryCount)
                    + (loader.relocations.map { ", \($0) symbolic relocations" } ?? "")
                    + (loader.lookups.map { " (\($0) look-ups)" } ?? "")
                    + (loader.heaviest.map { library in
                        library.ms.map { String(format: "; slowest \(library.name) %.1f ms", $0) + (library.staticFacts.map { " (\($0))" } ?? "") }
                            ?? "; most in \(library.name) (\(library.staticFacts ?? "\(library.symbolic)"))"
                    } ?? "")
                    + loader.precisionText,
                certainty: loader.isExact ? .exact : .estimate, advice: loaderAdvice(loader)))
        }
        for global in inputs.lazyGlobals {
            candidates.append(Finding(
                kind: .slowLazyGlobal, title: "slow lazy global \(global.name)", ms: global.ms, percent: percent(global.ms),
                location: "module \(global.module)" + (global.phase.map { ", phase '\($0)'" } ?? ""),
                certainty: .samples(global.samples),
                advice: "its initializer ran on first use, on the critical path; make it cheaper"
                    + (inputs.endsAtReady ? ", or touch it after ready()" : ", or touch it only where it is needed")))
        }
        for initializer in inputs.initializers {
            let title = initializer.isExecutable ? "the program's own constructors" : "slow library initializer \(initializer.module)"
            candidates.append(Finding(
                kind: .slowInitializer, title: title, ms: initializer.ms, percent: percent(initializer.ms),
                location: (initializer.function ?? initializer.module) + (initializer.staticFacts.map { "; \($0)" } ?? ""),
                certainty: .samples(initializer.samples),
                advice: initializer.isExecutable
                    ? "runs before main on every launch; move the work to first use"
                    : "runs before main whether the app uses the library or not; load it later (dlopen) or drop it"))
        }
        let end = inputs.endsAtReady ? "ready()" : "exit"
        for function in inputs.functions {
            candidates.append(Finding(
                kind: .slowFunction, title: "slow function \(RuntimeCostClassifier.displayName(function.name))",
                ms: function.ms, percent: percent(function.ms),
                location: function.whereText(module: "module \(function.module)"),
                certainty: .samples(function.samples),
                advice: "on the critical path to \(end); defer it, run it concurrently, or make it cheaper",
                selfMs: function.selfMs, totalMs: function.totalMs, callers: function.callers, callSite: function.callSite))
        }
        for call in inputs.libraryCalls {
            candidates.append(Finding(
                kind: .libraryCall, title: "library call \(call.name)", ms: call.ms, percent: percent(call.ms),
                location: call.whereText(module: "in \(call.module)"), certainty: .samples(call.samples),
                advice: "the app's call into \(call.module) holds the critical path to \(end); make it later, less often or on less data, "
                    + "or off the critical path",
                selfMs: call.selfMs, totalMs: call.totalMs, callers: call.callers, callSite: call.callSite))
        }
        for wait in inputs.blockingWaits {
            candidates.append(Finding(
                kind: .blockingWait, title: "blocked in \(wait.cause) on the critical path", ms: wait.ms, percent: percent(wait.ms),
                location: wait.what + (wait.phase.map { ", phase '\($0)'" } ?? ""), certainty: .watched,
                advice: blockingAdvice(cause: wait.cause, endsAtReady: inputs.endsAtReady)))
        }
        if let faults = inputs.pageFaults {
            candidates.append(Finding(
                kind: .pageFaults, title: "page faults", ms: faults.ms, percent: percent(faults.ms),
                location: "\(faults.minor) minor, \(faults.major) major" + (faults.detail.map { " (\($0))" } ?? ""),
                certainty: faults.certainty,
                // The advice for the faults that took most of the time.
                advice: faults.majorMs * 2 > faults.ms
                    ? "major faults read pages from disk: a cold cache; fewer or smaller libraries, or read files sequentially"
                    : "each first touch of a page costs a fault; allocate and touch less memory before \(inputs.endsAtReady ? "ready()" : "exit")"))
        }
        if let costs = inputs.runtimeCosts {
            let counted: Set<RuntimeCostKind> = [.lazyGlobal, .loader, .kernel]
            for row in costs.rows where !counted.contains(row.kind) {
                let callers = row.callers.filter { !$0.function.hasPrefix("(") }.prefix(2)
                    .map { ProfileAnalysis.briefName(RuntimeCostClassifier.displayName($0.function)) }
                candidates.append(Finding(
                    kind: .runtimeCost, title: row.kind.titleInSentence,
                    ms: row.ms, percent: percent(row.ms),
                    location: String(format: "on the stack in %.0f%% of the samples (%.1f ms); ", row.onStackPercent, row.onStackMs)
                        + (callers.isEmpty ? "no frame of the app above it" : "called from " + callers.joined(separator: "; ")),
                    certainty: .samples(row.samples), advice: row.kind.advice, totalMs: row.onStackMs))
            }
        }
        if let cost = inputs.profilerCost {
            let ms = (cost.setupMs ?? 0) + cost.samplingMs
            let sampling = String(format: "sampling and its threads %.1f ms on the critical path", cost.samplingMs)
            // COLDSTART_HZ reaches only a linked app; coldstart run --hz sets both rates.
            let lower = "a lower sampling rate (COLDSTART_HZ, or coldstart run --hz) costs less"
            candidates.append(Finding(
                kind: .profilerCost, title: "Coldstart's own cost", ms: ms, percent: percent(ms),
                location: cost.setupMs.map { String(format: "set-up %.1f ms, ", $0) + sampling } ?? sampling,
                certainty: cost.samplingMs > 0 ? .estimate : .exact,
                advice: "not the app's: " + (cost.leftOutOfEstimate ? "the header's 'without profiling' leaves it out; " : "") + lower))
        }
        for index in candidates.indices {
            guard case .samples(let count) = candidates[index].certainty, count > 0 else { continue }
            let interval = SamplePrecision.interval(count, msPerSample: candidates[index].ms / Double(count))
            (candidates[index].msLow, candidates[index].msHigh) = (interval.low, interval.high)
        }
        let sorted = candidates.sorted { ($0.ms, $1.title) > ($1.ms, $0.title) }
        let kept = sorted.filter { $0.ms >= 0.5 && $0.percent >= floorPercent }
        // A finding-sized library initializer runs before main on every
        // launch whatever the app does: it is never crowded out.
        let initializers = kept.filter { $0.kind == .slowInitializer }.prefix(limit)
        let others = kept.filter { $0.kind != .slowInitializer }.prefix(limit - initializers.count)
        if kept.count >= minimum { return (initializers + others).sorted { ($0.ms, $1.title) > ($1.ms, $0.title) } }
        return Array(sorted.filter { $0.ms >= 0.1 && $0.percent >= 0.5 }.prefix(minimum))
    }
}
