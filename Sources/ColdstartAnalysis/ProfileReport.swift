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

extension ProfileOptions {
    /// The tid `text` names among the sampled threads of `timeline`: a number
    /// is a tid; otherwise a thread name ("main" is the process's first
    /// thread). An unknown or ambiguous name throws, listing the threads.
    public static func thread(named text: String, in timeline: Timeline, path: String) throws -> Int {
        if let tid = Int(text) { return tid }
        let tids = Set(timeline.samples.map(\.tid)).sorted()
        let name = timeline.threadName
        let matches = tids.filter { name($0) == text }
        if matches.count == 1 { return matches[0] }
        if matches.count > 1 {
            throw ProfileError(path: path, problem: "\(matches.count) threads are named '\(text)' (tids \(matches.map(String.init).joined(separator: ", "))): give the tid")
        }
        let listed = tids.map { "'\(name($0))' (\($0))" }.joined(separator: ", ")
        throw ProfileError(path: path, problem: "no sampled thread named '\(text)' (sampled threads: \(tids.isEmpty ? "none" : listed))")
    }
}
