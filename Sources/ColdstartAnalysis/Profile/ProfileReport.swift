import Foundation

/// What a profile report covers and how much of it it shows.
package struct ProfileOptions: Sendable {
    /// Rows (functions, call-tree nodes) under this many milliseconds are left out.
    package var minMs: Double
    /// Rows under this share of the selected samples are left out.
    package var minPercent: Double
    /// At most this many rows per table (and children per call-tree node).
    package var top: Int
    /// Only samples taken during the phase of this name.
    package var phase: String?
    /// Only samples of this thread.
    package var thread: Int?
    /// Call-tree levels shown below the roots.
    package var treeDepth: Int
    /// Call-tree nodes under this share are always pruned, whatever
    /// `minPercent` says, so the tree stays readable.
    var treeFloorPercent: Double

    package init(
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
package struct ProfileError: Error, CustomStringConvertible, Sendable {
    package var path: String
    package var problem: String
    package var description: String { "\(path): \(problem)" }
}

/// The sampled-stacks part of `coldstart report`: where the launch's CPU time
/// went, by function, phase, thread, library initializer and lazy global.
///
/// Every time is `samples × (1 / effectiveHz)`: a sample stands for one period
/// of the sampling clock (with the perf task clock, one period of the sampled
/// thread's own CPU time), so each figure carries the count it rests on and
/// `precision` says how far a count may be from the time (SamplePrecision).
package struct ProfileReport: Codable, Sendable, Equatable {
    package var sampling: SamplingInfo
    /// How precise the sampled figures are, and whether the launch has
    /// enough samples to act on.
    package var precision: SamplingPrecision
    package var selection: Selection
    /// Lines about names that could not be found (missing or rebuilt binaries).
    package var warnings: [String]
    /// Every selected sample.
    package var overall: FunctionTable
    /// One entry per launch phase, in order, and one for samples after the end
    /// (the `COLDSTART_EXTEND_MS` window) when there are any.
    package var phases: [PhaseProfile]
    package var threads: [ThreadProfile]
    package var initializers: Initializers
    package var lazyGlobals: [LazyGlobal]
    /// Top-down, merged by function; roots are the outermost frames.
    package var callTree: [CallNode]

    package struct SamplingInfo: Codable, Sendable, Equatable {
        package var clock: String
        package var unwinder: String
        package var requestedHz: Double
        package var effectiveHz: Double
        package var loweredHz: Double?
        /// The time one sample stands for (`Timeline.Sampling.nsPerSample`).
        package var msPerSample: Double
        package var samples: Int
        package var dropped: Int
        /// The sample buffer's size: samples past it are dropped.
        package var maxSamples: Int?
        package var threadsSampled: Int?
        /// Threads that ran but were never sampled (their time is missing).
        package var threadsMissed: Int?
        /// Samples walked by frame pointer because libunwind failed.
        package var unwindFailures: Int?
        package var startMs: Double
        package var stopMs: Double

        /// What `msPerSample` is, for a report's header.
        package var periodMeaning: String {
            clock == "perf-task-clock"
                ? "one period of the perf task clock: user-mode CPU; the kernel's share is in the phase table"
                : "one period of the effective rate"
        }
    }

    package struct Selection: Codable, Sendable, Equatable {
        package var phase: String?
        package var thread: Int?
        package var minMs: Double
        package var minPercent: Double
        package var top: Int
        package var treeDepth: Int
        package var treeMinPercent: Double
        package var samples: Int
        package var ms: Double
    }

    package struct FunctionTime: Codable, Sendable, Equatable {
        package var name: String
        /// File name of the module holding it ("" when outside every module).
        package var module: String
        package var selfSamples: Int
        package var selfMs: Double
        package var selfPercent: Double
        /// Samples with the function anywhere on the stack, counted once per
        /// sample however often it recurs.
        package var totalSamples: Int
        package var totalMs: Double
        package var totalPercent: Double
        /// The first sample it was on the stack, ms after process start.
        package var firstSeenMs: Double
    }

    package struct FunctionTable: Codable, Sendable, Equatable {
        package var samples: Int
        package var ms: Double
        /// Highest self time first; rows under the thresholds left out.
        package var bySelf: [FunctionTime]
        /// Highest total time first.
        package var byTotal: [FunctionTime]
    }

    package struct PhaseProfile: Codable, Sendable, Equatable {
        package var name: String
        /// The phase's kind, or "after-end" for samples after the launch ended.
        package var kind: String
        package var startMs: Double
        package var endMs: Double?
        /// False when sampling did not run during the phase (the loader phase:
        /// sampling starts at the earliest init).
        package var sampled: Bool
        package var functions: FunctionTable
    }

    package struct ThreadProfile: Codable, Sendable, Equatable {
        package var tid: Int
        package var name: String
        package var samples: Int
        package var ms: Double
        package var percent: Double
        package var firstMs: Double
        package var lastMs: Double
        package var topSelf: [FunctionTime]
    }

    package struct Initializers: Codable, Sendable, Equatable {
        /// Samples under any initializer, counted once.
        package var samples: Int
        package var ms: Double
        /// Samples of the library-initializers phase under no recognisable
        /// initializer (the loader's own work, or a stack cut short in the loader).
        package var unattributedSamples: Int
        package var libraries: [LibraryInitializer]
    }

    package struct LibraryInitializer: Codable, Sendable, Equatable {
        package var module: String
        package var path: String
        /// The program itself (preinit functions and constructors) rather than
        /// a shared library.
        package var isExecutable: Bool
        package var samples: Int
        package var ms: Double
        package var percent: Double
        package var firstSeenMs: Double
        /// The functions the loader (or libc) called, with their samples.
        package var constructors: [NamedTime]
    }

    package struct NamedTime: Codable, Sendable, Equatable {
        package var name: String
        package var samples: Int
        package var ms: Double
    }

    package struct LazyGlobal: Codable, Sendable, Equatable {
        /// `Module.global`, from the one-time initialization function's name.
        package var name: String
        package var samples: Int
        package var ms: Double
        package var percent: Double
        package var firstSeenMs: Double
        /// The phases its samples fell in, in launch order.
        package var phases: [String]
    }

    package struct CallNode: Codable, Sendable, Equatable {
        package var name: String
        package var module: String
        package var samples: Int
        package var ms: Double
        package var percent: Double
        package var selfSamples: Int
        package var children: [CallNode]
    }
}

extension ProfileOptions {
    /// The tid `text` names among the sampled threads of `timeline`: a number
    /// is a tid; otherwise a thread name ("main" is the process's first
    /// thread). An unknown or ambiguous name throws, listing the threads.
    package static func thread(named text: String, in timeline: Timeline, path: String) throws -> Int {
        if let tid = Int(text) { return tid }
        let tids = Set(timeline.samples.map(\.tid)).sorted()
        let recorded = timeline.recordedThreadNames
        let name = { timeline.threadName($0, recorded: recorded) }
        // The readable name ("dispatch worker (default QoS)") or the kernel's ("oot.default-qos").
        let namedSo = Set(timeline.threads.filter { $0.name == text }.map(\.tid))
        let matches = tids.filter { tid in name(tid) == text || namedSo.contains(tid) }
        if matches.count == 1 { return matches[0] }
        if matches.count > 1 {
            throw ProfileError(path: path, problem: "\(matches.count) threads are named '\(text)' (tids \(matches.map(String.init).joined(separator: ", "))): give the tid")
        }
        let listed = tids.map { "'\(name($0))' (\($0))" }.joined(separator: ", ")
        throw ProfileError(path: path, problem: "no sampled thread named '\(text)' (sampled threads: \(tids.isEmpty ? "none" : listed))")
    }
}
