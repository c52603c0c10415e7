import Foundation

/// One launch as the timeline file describes it (docs/timeline-format.md).
///
/// Times are nanoseconds of `CLOCK_MONOTONIC` measured from the process start.
package struct Timeline: Sendable {
    package var launch: Launch
    package var process: Process
    package var rusage: [RusageSnapshot]
    package var phases: [Phase]
    package var marks: [Mark]
    package var spans: [Span]
    package var threads: [Thread]
    /// Coldstart's own threads' CPU over the launch (`ownThreads`; empty in
    /// files written before it, or without sampling and watch sections).
    package var ownThreads: [OwnThread]
    package var dropped: Dropped
    /// Present when the launch was sampled.
    package var sampling: Sampling?
    package var modules: [Module]
    package var samples: [Sample]
    /// What reading did with the file's stack copies (`rawStacks`, a launch
    /// recorded with `COLDSTART_UNWINDER=offline`): `samples` hold the
    /// frames unwound from them. Nil when the file has none.
    package var offlineUnwinding: OfflineUnwinding?
    /// Names written by `coldstart symbolize`, keyed by `Frame.key`.
    package var symbols: [String: Symbol]
    /// Present when the off-CPU watcher ran (Watch.swift).
    package var watch: Watch?
    /// `coldstart.labels` (docs/timeline-format.md): what the launch was
    /// tagged with (`version`, `region`, `host` …); empty when absent. Values
    /// that are not strings are left out.
    package var labels: [String: String]
    /// Figures the reader set aside as out of range, each with its field and
    /// value ("spans[2].rusage.minorFaults is …"): the rest of the file is
    /// used, and the report says what is missing.
    package var setAside: [String] = []
    /// The whole file as parsed, for tools that rewrite it and keep what they
    /// do not understand (the samples rebuilt from `samples`: they are read
    /// from the bytes, not kept as parsed JSON). Parsed when first asked for.
    package var document: [String: Any] {
        var root = documentBox.value
        // The stack copies were read from the bytes (their value here is
        // `[]`) and unwound into `samples`: a rewritten file has the frames.
        if var section = root["coldstart"] as? [String: Any], section["rawStacks"] != nil {
            section["rawStacks"] = nil
            root["coldstart"] = section
        }
        guard var section = root["coldstart"] as? [String: Any], section["samples"] is [Any] else { return root }
        // Typed [Any] all the way down: JSONText dispatches on the exact type.
        section["samples"] = samples.map { sample -> Any in
            [sample.ns, sample.tid, sample.frames.flatMap { [$0.module, $0.address] as [Any] }] as [Any]
        }
        root["coldstart"] = section
        return root
    }
    let documentBox: DocumentBox
    /// The file as parsed, with `"samples": []`: for reading a section other
    /// than the samples without rebuilding them all as JSON values.
    var parsedDocument: [String: Any] { documentBox.value }

    package struct Launch: Codable, Sendable {
        package var startNs: UInt64
        package var startSource: String
        package var startPrecisionNs: UInt64
        package var bootMinusMonotonicNs: UInt64?
        /// Wall clock (`CLOCK_REALTIME`) of the process start, µs since the epoch.
        package var startRealtimeUs: UInt64?
        var clockTicksPerSecond: UInt64?
        package var earliestInitNs: Int64?
        /// Coldstart's own set-up (watcher, sampler) ended: the "Coldstart
        /// set-up" phase runs from the earliest init to here.
        package var setupEndNs: Int64?
        package var mainNs: Int64
        package var readyNs: Int64?
        /// The thread that called `ready()` (absent in older files).
        package var readyTid: Int?
        package var endNs: Int64
        package var completed: Bool
        /// "ready", "exit", "error-exit", "signal" or "stepped-aside".
        package var endReason: String
        package var exitStatus: Int?
        package var signal: Int?
        package var signalName: String?
        /// "stepped-aside": the call that needs the process to be single-threaded
        /// ("unshare(CLONE_NEWUSER)"), at which Coldstart stopped.
        package var asideFor: String?
        package var endPhase: String?
        var extendNs: UInt64?
    }

    package struct Process: Codable, Sendable {
        package var pid: Int
        package var executable: String
        package var kernelRelease: String
        package var swiftVersion: String
    }

    package struct Rusage: Codable, Sendable, Equatable {
        package var minorFaults: UInt64
        package var majorFaults: UInt64
        package var voluntarySwitches: UInt64
        package var involuntarySwitches: UInt64
        package var userNs: UInt64
        package var systemNs: UInt64
        package var cpuNs: UInt64 { userNs + systemNs }
    }

    /// A process-wide `getrusage` snapshot; in the file its counters sit
    /// beside `at` and `ns`, flat.
    package struct RusageSnapshot: Decodable, Sendable {
        /// "earliestInit", "setupEnd", "main", "ready" or "end".
        package var at: String
        package var ns: Int64
        /// Counts since exec.
        package var usage: Rusage

        private enum CodingKeys: String, CodingKey { case at, ns }

        init(at: String, ns: Int64, usage: Rusage) {
            (self.at, self.ns, self.usage) = (at, ns, usage)
        }

        package init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            at = try container.decode(String.self, forKey: .at)
            ns = try container.decode(Int64.self, forKey: .ns)
            usage = try Rusage(from: decoder)
        }
    }

    package struct Phase: Codable, Sendable {
        package var name: String
        /// "loader", "profiler" (Coldstart's own set-up), "initializers" or "app".
        package var kind: String
        package var startNs: Int64
        package var endNs: Int64
        package var rusage: Rusage?
        package var durationNs: Int64 { endNs - startNs }
    }

    package struct Mark: Codable, Sendable {
        package var name: String
        package var ns: Int64
        package var tid: Int
        /// The marking thread's CPU time then (`CLOCK_THREAD_CPUTIME_ID`,
        /// absent in older files).
        package var threadCpuNs: UInt64?
        package var phaseBoundary: Bool
        package var extended: Bool
        package var rusage: Rusage?
    }

    package struct Span: Codable, Sendable {
        package var name: String
        package var beginNs: Int64
        package var endNs: Int64
        package var tid: Int
        package var endTid: Int
        /// Each end's thread's CPU time (absent in older files).
        package var beginThreadCpuNs: UInt64?
        package var endThreadCpuNs: UInt64?
        package var unfinished: Bool
        package var extended: Bool?
        package var rusage: Rusage?
        package var durationNs: Int64 { endNs - beginNs }
    }

    package struct Thread: Codable, Sendable {
        package var tid: Int
        package var name: String
    }

    /// One of Coldstart's threads (the sampler's scan thread, the watcher):
    /// its CPU clock at points of the launch, a point each time it had
    /// grown by a step (50 µs, doubling every 256 points).
    package struct OwnThread: Codable, Sendable {
        package var tid: Int
        /// `[ns, cpuNs]` pairs in time order: `ns` from the process start,
        /// `cpuNs` the thread's CPU clock then.
        package var cpu: [[Int64]]

        /// Its CPU clock at `ns`: linear between the two points around it
        /// (off by at most the CPU between them: a step and one turn of
        /// its loop), 0 before its first point, its last after that.
        package func cpuNs(at ns: Int64) -> Double {
            guard let first = cpu.first, ns > first[0] else { return 0 }
            let after = cpu.partitionPoint { $0[0] < ns }
            guard after < cpu.count else { return Double(cpu[cpu.count - 1][1]) }
            let a = cpu[after - 1], b = cpu[after]
            let span = Double(b[0]) - Double(a[0])
            guard span > 0 else { return Double(b[1]) }
            return Double(a[1]) + (Double(b[1]) - Double(a[1])) * (Double(ns) - Double(a[0])) / span
        }
    }

    /// The CPU Coldstart's own threads used from `start` to `end`, in ns.
    package func ownCpuNs(from start: Int64, to end: Int64) -> Double {
        ownThreads.reduce(0) { $0 + max(0, $1.cpuNs(at: end) - $1.cpuNs(at: start)) }
    }

    package struct Dropped: Codable, Sendable {
        package var events: UInt64
        package var nameBytes: UInt64
        /// Bytes of strings that were not UTF-8, each shown as U+FFFD: those
        /// the recorder replaced (absent in older files) plus those the
        /// reader replaced in a file written without that care.
        package var notUtf8Bytes: UInt64?
    }

    package struct Sampling: Codable, Sendable {
        /// "perf-task-clock", "posix-cpu-timer" or "wall-timer".
        package var clock: String
        /// "libunwind", "offline" (the kernel's copies unwound by the
        /// reader: `Timeline.offlineUnwinding`) or "frame-pointer".
        package var unwinder: String
        /// The rate every sample in the file was taken at (or thinned to).
        package var requestedHz: Double
        package var effectiveHz: Double
        package var loweredHz: Double?
        /// The boosted start of a launch sampled at the default rate (absent
        /// in older files and with `COLDSTART_HZ`).
        package var boost: Boost?
        /// The samples the kernel recorded itself, without a signal (absent
        /// in older files and for the POSIX clocks).
        package var kernelStacks: KernelStacks?
        package var startNs: Int64
        /// When the main thread's clock started: samples come from then on.
        /// Later than `startNs` by the scan thread's start and, on a kernel
        /// where no perf event has been open for a second, by the kernel's
        /// one-time switch of its scheduler hooks (10–18 ms measured). Absent
        /// in older files.
        package var clockArmedNs: Int64?
        /// The CPU-wide events that sampled the host's threads while a quiet
        /// kernel held the task clocks back (absent when none opened: a warm
        /// kernel, CPU-wide events refused, `COLDSTART_BRIDGE=0`, older files).
        package var bridge: Bridge?
        /// When the host's threads were sampled from: the bridge's opening
        /// when it lost nothing (its samples cover them until their clocks
        /// ran), else the main thread's clock.
        package var sampledFromNs: Int64? {
            guard let bridge, bridge.lost == 0 else { return clockArmedNs }
            return min(bridge.openNs, clockArmedNs ?? bridge.openNs)
        }
        /// When Coldstart's scan thread, which starts the clocks, first ran:
        /// a late one means a busy machine, not a quiet kernel. Absent in
        /// older files.
        package var scanBeganNs: Int64?
        package var stopNs: Int64
        /// Process CPU time (user + system) in `[startNs, stopNs]`: the
        /// denominator of `effectiveHz` for the CPU clocks.
        package var cpuNs: UInt64?
        package var userNs: UInt64?
        package var systemNs: UInt64?
        package var samples: Int
        package var dropped: Int
        /// The part of `cpuNs` that Coldstart's own unsampled threads (the
        /// watcher, the thread scanner) used; the rate is per second of
        /// `cpuNs - coldstartCpuNs`.
        package var coldstartCpuNs: UInt64?
        /// The sample buffer's size (`COLDSTART_MAX_SAMPLES`).
        package var maxSamples: Int?
        /// "per-thread" or "main".
        package var threads: String?
        package var threadsSampled: Int?
        /// Threads that ran but were never sampled.
        package var threadsMissed: Int?
        /// Samples whose libunwind walk failed and fell back to frame pointers.
        package var unwindFailures: Int?
        /// Signal fallback only: samples skipped because the interrupted
        /// thread had under 2 KiB of stack left (absent in older files).
        package var stackSkips: Int?
        package var handlerNs: HandlerCost?

        /// The CPU time one sample stands for, the one definition every
        /// sampled figure uses; nil for a file without a usable rate. The
        /// perf task clock counts user mode only and drops a period that
        /// ends in the kernel, so a sample is one nominal period of user
        /// CPU (`loweredHz`, else `requestedHz`: the file's one rate) and
        /// the kernel's time is the phase table's. The POSIX timers count
        /// user and system CPU (or wall time) and fold overruns into one
        /// signal: a sample is one period of the rate achieved.
        package var nsPerSample: Double? {
            let hz = clock == "perf-task-clock" ? loweredHz ?? requestedHz : effectiveHz > 0 ? effectiveHz : requestedHz
            return hz > 0 && hz.isFinite ? 1e9 / hz : nil
        }

        /// Sampling ran at `hz` until `untilNs` (when the host's threads had
        /// had 50 ms of CPU, or the end of sampling), then at `afterHz`.
        /// `thinned`: the launch outlived the boost and the writer kept one
        /// boosted sample in `hz / afterHz` per thread, so `requestedHz` is
        /// `afterHz`; otherwise every sample was kept and it is `hz`. Either
        /// way the file's samples have one rate: nothing to weight.
        package struct Boost: Codable, Sendable {
            package var hz: Double
            package var untilNs: Int64
            package var thinned: Bool
            package var afterHz: Double
        }

        /// The samples the kernel took itself at the clock's overflow, into
        /// each thread's ring: no signal, no handler. `samples` of the file's
        /// samples were taken so: all of them when `untilNs` is nil (every
        /// file since the DWARF unwinder runs on Coldstart's thread; older
        /// files switched to signals at `untilNs`, 50 ms into sampling, and
        /// those before it on every thread are the kernel's). `lost`: samples
        /// the kernel dropped because a ring was full.
        package struct KernelStacks: Codable, Sendable {
            package var samples: Int
            package var lost: Int
            package var untilNs: Int64?
            /// The user stack the kernel copied per sample, for the DWARF
            /// unwinder (absent in older files and with frame pointers).
            package var stackBytes: Int?
            /// Samples whose frames libunwind found in that copy; the rest
            /// are the kernel's frame-pointer chains.
            package var dwarf: Int?
            /// Of `dwarf`, those whose copy ended before the outermost frame,
            /// completed with the kernel's frame-pointer chain.
            package var chainTails: Int?
            /// The CPU time Coldstart spent unwinding them (off the host's threads), in ns.
            package var unwindNs: UInt64?
            /// `COLDSTART_UNWINDER=offline`: the copies written into
            /// `rawStacks` for the reader to unwind, and the samples whose
            /// copy the recorder had no room for (they keep their chains).
            package var raw: Int?
            package var rawDropped: Int?
        }

        /// CPU-wide cpu-clock events, one per online CPU, from `openNs` to
        /// `closeNs` (nil: open until the stop); `samples` of the file's were
        /// theirs (the host's; `overlap` of its threads' after their own
        /// clocks ran were left to those), `foreign` other processes' were
        /// dropped unread past their header, `lost` were dropped by a full
        /// ring (anyone's).
        package struct Bridge: Codable, Sendable {
            package var cpus: Int
            package var openNs: Int64
            package var closeNs: Int64?
            package var samples: Int
            package var overlap: Int
            package var foreign: Int
            package var lost: Int
        }

        /// Whether the sample taken at `ns` was recorded by the kernel.
        package func kernelRecorded(at ns: Int64) -> Bool {
            guard let kernel = kernelStacks, kernel.samples > 0 else { return false }
            return kernel.untilNs.map { ns < $0 } ?? true
        }

        package struct HandlerCost: Codable, Sendable {
            package var median: Double
            package var p99: Double
            package var max: Double?
            /// Every recorded sample's handler time added up; absent in
            /// files written before it was recorded. Only the samples a
            /// signal took count: those in `kernelStacks` had no handler.
            package var totalNs: Double?
        }
    }

    package struct Module: Codable, Sendable {
        package var path: String
        package var buildId: String?
        /// Load bias: an ELF virtual address plus `base` is the run-time address.
        package var base: UInt64
        package var start: UInt64
        package var end: UInt64
    }

    /// One stack frame: an ELF virtual address inside `modules[module]`, or an
    /// absolute address when `module` is -1.
    package struct Frame: Hashable, Sendable {
        package var module: Int
        package var address: UInt64
        /// The key of `symbols`.
        package var key: String { "\(module):\(address)" }
    }

    package struct Sample: Sendable {
        package var ns: Int64
        package var tid: Int
        /// Leaf first. The leaf is the interrupted program counter; the others
        /// are return addresses (look up `address - 1`).
        package var frames: [Frame]
    }

    package struct Symbol: Codable, Sendable {
        /// Demangled name.
        package var name: String
        /// Mangled (linkage) name, when it differs.
        package var system: String?
        /// Source file and line of the address, from DWARF.
        package var file: String?
        package var line: Int?
        /// Functions the compiler inlined at this address, innermost first
        /// (from DWARF); `name` is the function they were inlined into.
        package var inlined: [Symbol]?

        package init(name: String, system: String? = nil, file: String? = nil, line: Int? = nil, inlined: [Symbol]? = nil) {
            (self.name, self.system, self.file, self.line, self.inlined) = (name, system, file, line, inlined)
        }
    }
}

/// Why a timeline file could not be read. `description` is one line that
/// names the file.
package struct TimelineError: Error, CustomStringConvertible, Sendable {
    package var path: String
    package var problem: String
    package var description: String { "\(path): \(problem)" }
}

/// What a timeline file may hold, at most: beyond these the file is refused
/// with an error naming the bound, before the CLI allocates for it
/// (docs/security.md, "The coldstart CLI").
package enum TimelineLimits {
    /// The file itself: a million 128-frame samples take ~500 MB.
    static let maxFileBytes: UInt64 = 1 << 30
    /// The recorder's own maximum (`COLDSTART_MAX_SAMPLES`).
    package static let maxSamples = 1_000_000
    /// Frames of one sample or blocked stack (the recorder keeps 128 and 64).
    package static let maxFrames = 1024
    /// Any string: a name, a path, a symbol (the recorder's names are at
    /// most 255 bytes, paths 4096; demangled C++ names run to a few KB).
    package static let maxStringBytes = 65_536
    /// Any time offset from the process start, in ns (2^53: ~104 days), so
    /// differences and sums of times never overflow and stay exact as Double.
    package static let maxOffsetNs: Int64 = 1 << 53
    /// Any counter (faults, context switches, dropped records).
    package static let maxCount: UInt64 = 1 << 40
    /// A sampling or watching rate.
    package static let maxHz = 1_000_000.0
    /// Nesting of the JSON document (the format needs 6).
    package static let maxDepth = 64
}
