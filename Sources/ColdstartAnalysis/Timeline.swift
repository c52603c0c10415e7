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
    package var dropped: Dropped
    /// Present when the launch was sampled.
    package var sampling: Sampling?
    package var modules: [Module]
    package var samples: [Sample]
    /// Names written by `coldstart symbolize`, keyed by `Frame.key`.
    package var symbols: [String: Symbol]
    /// Present when the off-CPU watcher ran (Watch.swift).
    package var watch: Watch?
    /// The whole file as parsed, for tools that rewrite it and keep what they
    /// do not understand.
    package var document: [String: Any] { documentBox.value }
    let documentBox: DocumentBox

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
        package var endNs: Int64
        package var completed: Bool
        /// "ready", "exit", "error-exit" or "signal".
        package var endReason: String
        package var exitStatus: Int?
        package var signal: Int?
        package var signalName: String?
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
        package var unfinished: Bool
        package var extended: Bool?
        package var rusage: Rusage?
        package var durationNs: Int64 { endNs - beginNs }
    }

    package struct Thread: Codable, Sendable {
        package var tid: Int
        package var name: String
    }

    package struct Dropped: Codable, Sendable {
        package var events: UInt64
        package var nameBytes: UInt64
    }

    package struct Sampling: Codable, Sendable {
        /// "perf-task-clock", "posix-cpu-timer" or "wall-timer".
        package var clock: String
        /// "libunwind" or "frame-pointer".
        package var unwinder: String
        package var requestedHz: Double
        package var effectiveHz: Double
        package var loweredHz: Double?
        package var startNs: Int64
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
        package var handlerNs: HandlerCost?

        package struct HandlerCost: Codable, Sendable {
            package var median: Double
            package var p99: Double
            package var max: Double?
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
        package var file: String?
    }
}

/// Why a timeline file could not be read. `description` is one line that
/// names the file.
package struct TimelineError: Error, CustomStringConvertible, Sendable {
    package var path: String
    package var problem: String
    package var description: String { "\(path): \(problem)" }
}

/// Wraps the parsed JSON object (not Sendable by type, never mutated).
final class DocumentBox: @unchecked Sendable {
    let value: [String: Any]
    init(_ value: [String: Any]) { self.value = value }
}

extension Timeline {
    /// The newest format version this build reads.
    static let formatVersion = 1

    /// Reads and validates a timeline file.
    package init(contentsOf path: String) throws {
        // A FIFO or a device (/dev/zero) would block or never end: only
        // regular files are timelines.
        var info = stat()
        if stat(path, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG, (info.st_mode & S_IFMT) != S_IFDIR {
            throw TimelineError(path: path, problem: "not a regular file (a pipe or a device), not a timeline file")
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            let problem = isDirectory.boolValue ? "is a directory, not a timeline file" : exists ? "cannot be read" : "no such file"
            throw TimelineError(path: path, problem: problem)
        }
        try self.init(data: data, path: path)
    }

    /// Parses a timeline; `path` only names it in errors.
    package init(data: Data, path: String = "<timeline>") throws {
        func fail(_ problem: String) -> TimelineError { TimelineError(path: path, problem: problem) }
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            throw fail("empty file")
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            let looksCut = data.first == UInt8(ascii: "{") && data.last != UInt8(ascii: "}") && data.last != 0x0A
            throw fail(looksCut ? "truncated JSON (the file ends mid-way)" : "not JSON")
        }
        guard let root = object as? [String: Any] else { throw fail("not a Coldstart timeline (top level is not an object)") }
        guard let section = root["coldstart"] as? [String: Any] else {
            throw fail("not a Coldstart timeline (no \"coldstart\" section; a plain Chrome trace?)")
        }
        guard let version = section["version"] as? Int else { throw fail("not a Coldstart timeline (no format version)") }
        guard version <= Timeline.formatVersion else {
            throw fail("format version \(version) is newer than this coldstart reads (\(Timeline.formatVersion)); update coldstart")
        }
        func decode<T: Decodable>(_ type: T.Type, _ key: String, required: Bool = true) throws -> T? {
            guard let value = section[key], !(value is NSNull) else {
                if required { throw fail("malformed timeline: missing \"\(key)\"") }
                return nil
            }
            do {
                let bytes = try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed])
                return try JSONDecoder().decode(T.self, from: bytes)
            } catch {
                throw fail("malformed timeline: bad \"\(key)\" (\(Self.decodingSummary(error)))")
            }
        }
        launch = try decode(Launch.self, "launch")!
        process = try decode(Process.self, "process")!
        rusage = try decode([RusageSnapshot].self, "rusage") ?? []
        phases = try decode([Phase].self, "phases")!
        marks = try decode([Mark].self, "marks")!
        spans = try decode([Span].self, "spans")!
        threads = try decode([Thread].self, "threads") ?? []
        dropped = try decode(Dropped.self, "dropped", required: false) ?? Dropped(events: 0, nameBytes: 0)
        sampling = try decode(Sampling.self, "sampling", required: false)
        modules = try decode([Module].self, "modules", required: false) ?? []
        symbols = try decode([String: Symbol].self, "symbols", required: false) ?? [:]
        samples = try Self.parseSamples(section["samples"], moduleCount: modules.count, fail: fail)
        watch = try Watch.parse(section["watch"], moduleCount: modules.count, fail: fail)
        documentBox = DocumentBox(root)
        if phases.isEmpty { throw fail("malformed timeline: no phases") }
    }

    private static func parseSamples(_ value: Any?, moduleCount: Int, fail: (String) -> TimelineError) throws -> [Sample] {
        guard let value, !(value is NSNull) else { return [] }
        guard let rows = value as? [Any] else { throw fail("malformed timeline: \"samples\" is not an array") }
        var samples: [Sample] = []
        samples.reserveCapacity(rows.count)
        for (index, row) in rows.enumerated() {
            guard let fields = row as? [Any], fields.count == 3,
                  let ns = (fields[0] as? NSNumber)?.int64Value,
                  let tid = (fields[1] as? NSNumber)?.intValue,
                  let pairs = fields[2] as? [NSNumber], pairs.count % 2 == 0
            else { throw fail("malformed timeline: sample \(index) is not [ns, tid, [module, address, …]]") }
            var frames: [Frame] = []
            frames.reserveCapacity(pairs.count / 2)
            for i in stride(from: 0, to: pairs.count, by: 2) {
                let module = pairs[i].intValue
                guard module >= -1, module < moduleCount else {
                    throw fail("malformed timeline: sample \(index) names module \(module) of \(moduleCount)")
                }
                frames.append(Frame(module: module, address: pairs[i + 1].uint64Value))
            }
            samples.append(Sample(ns: ns, tid: tid, frames: frames))
        }
        return samples
    }

    private static func decodingSummary(_ error: Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): return "missing \"\(key.stringValue)\""
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "wrong type" : "wrong type at \(path)"
        default: return "unreadable"
        }
    }

    /// The whole launch: process start to its end (ready, exit or signal).
    package var launchDurationNs: Int64 { launch.endNs }
}
