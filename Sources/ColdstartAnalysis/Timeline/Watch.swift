import Foundation

extension Timeline {
    /// What the off-CPU watcher saw (`coldstart.watch`, docs/timeline-format.md
    /// "Off-CPU watch"): for each thread, stretches of time in which it was
    /// runnable or blocked in one call, with exact CPU and run-queue time.
    package struct Watch: Sendable {
        package var requestedHz: Double
        package var effectiveHz: Double
        package var startNs: Int64
        package var stopNs: Int64
        /// False when the writer could not wait for the watcher to stop: the
        /// segments open at that moment are missing.
        package var complete: Bool
        /// "writer" (the launch ended), "time-limit" (2 minutes) or "buffer-full".
        package var stopReason: String
        package var ticks: Int
        var missedTicks: Int
        /// CPU time of the watcher thread itself over [startNs, stopNs].
        package var cpuNs: UInt64
        var tickMedianNs: UInt64
        var tickP99Ns: UInt64
        /// CPUs the process could run on.
        package var cpus: Int?
        /// Whether `/proc/…/syscall` was readable (without it there are no causes).
        package var syscallFile: Bool
        /// "libunwind-remote", "unavailable" or "none-needed".
        package var unwinder: String
        var unwinds: Int
        var tornStacks: Int
        package var dropped: [String: Int]
        package var threads: [WatchedThread]
        package var paths: [String]
        /// Leaf first, like `Sample.frames`.
        package var stacks: [[Frame]]
        package var segments: [Segment]
        /// The number of runnable threads of the process, from each time on.
        package var runnable: [(ns: Int64, count: Int)]
    }

    package struct WatchedThread: Sendable {
        package var tid: Int
        package var name: String
        package var firstNs: Int64
        package var lastNs: Int64
        package var exited: Bool
        /// False when the watcher had no room to watch it (totals only).
        package var watched: Bool
        /// CPU and run-queue time before the watcher first saw the thread.
        var cpuBeforeNs: UInt64
        var runQueueBeforeNs: UInt64
        /// Since the thread's creation, at the last look.
        package var cpuNs: UInt64
        package var runQueueNs: UInt64
        package var switches: UInt64
    }

    /// Why a thread was not running (or `running`: runnable, on a CPU or
    /// waiting for one).
    package enum Cause: Hashable, Sendable {
        case running, fileRead, fileWrite, fileSystem, lock, events, network, pipe, sleep, pageFault, child, memory, stopped, other
        /// A name this reader does not know (a newer Coldstart's), as the
        /// timeline has it: shown as an unknown cause, never taken for another.
        case unknown(String)

        /// The known causes by number: the capture layer's table
        /// (`cs_watch_cause_name`, watcher/watchcauses.c), in its order
        /// (WaitCauseTests holds the two, and docs/timeline-format.md, to it).
        package static let known: [Cause] = [
            .running, .fileRead, .fileWrite, .fileSystem, .lock, .events, .network, .pipe, .sleep, .pageFault, .child, .memory,
            .stopped, .other,
        ]
        private static let byName = Dictionary(uniqueKeysWithValues: known.map { ($0.name, $0) })

        /// The cause the timeline names `name`.
        package init(name: String) { self = Self.byName[name] ?? .unknown(name) }

        /// Its name in the timeline.
        package var name: String {
            switch self {
            case .running: return "running"
            case .fileRead: return "file-read"
            case .fileWrite: return "file-write"
            case .fileSystem: return "file-system"
            case .lock: return "lock"
            case .events: return "events"
            case .network: return "network"
            case .pipe: return "pipe"
            case .sleep: return "sleep"
            case .pageFault: return "page-fault"
            case .child: return "child"
            case .memory: return "memory"
            case .stopped: return "stopped"
            case .other: return "other"
            case .unknown(let name): return name
            }
        }
    }

    /// A stretch of one thread's time in which every look saw the same thing.
    package struct Segment: Sendable {
        package var tid: Int
        package var startNs: Int64
        package var endNs: Int64
        /// The kernel's state letter: "R", "S", "D", "T"…
        package var state: String
        package var cause: Cause
        /// The syscall it was blocked in; nil when runnable or outside one.
        package var syscall: String?
        /// On the CPU inside the segment.
        package var runNs: UInt64
        /// Runnable but waiting for a CPU inside the segment.
        package var waitNs: UInt64
        package var minorFaults: UInt64
        package var majorFaults: UInt64
        /// Index into `Watch.paths`.
        package var path: Int?
        /// Index into `Watch.stacks`.
        package var stack: Int?
        /// The syscall's six arguments (empty when not in one).
        package var args: [UInt64]

        package var durationNs: Int64 { endNs - startNs }
        /// Off the CPU and not runnable: the wall time less CPU and run-queue time.
        var blockedNs: Int64 { max(0, durationNs - Int64(clamping: runNs) - Int64(clamping: waitNs)) }
    }
}

extension Timeline.Watch {
    /// Parses `coldstart.watch`; nil when absent.
    static func parse(_ value: Any?, moduleCount: Int, fail: (String) -> TimelineError) throws -> Self? {
        guard let value, !Timeline.isNull(value) else { return nil }
        func bad(_ what: String) -> TimelineError { fail("malformed timeline: watch: \(what)") }
        guard let object = value as? [String: Any] else { throw bad("not an object") }
        func number(_ key: String, in dict: [String: Any] = object) throws -> NSNumber {
            guard let n = dict[key] as? NSNumber else { throw bad("missing \"\(key)\"") }
            return n
        }
        let tick = object["tickNs"] as? [String: Any] ?? [:]
        var watch = Timeline.Watch(
            requestedHz: try number("requestedHz").doubleValue,
            effectiveHz: try number("effectiveHz").doubleValue,
            startNs: try number("startNs").int64Value,
            stopNs: try number("stopNs").int64Value,
            complete: object["complete"] as? Bool ?? true,
            stopReason: object["stopReason"] as? String ?? "writer",
            ticks: try number("ticks").intValue,
            missedTicks: (object["missedTicks"] as? NSNumber)?.intValue ?? 0,
            cpuNs: try number("cpuNs").uint64Value,
            tickMedianNs: (tick["median"] as? NSNumber)?.uint64Value ?? 0,
            tickP99Ns: (tick["p99"] as? NSNumber)?.uint64Value ?? 0,
            cpus: (object["cpus"] as? NSNumber)?.intValue,
            syscallFile: object["syscallFile"] as? Bool ?? true,
            unwinder: object["unwinder"] as? String ?? "unavailable",
            unwinds: (object["unwinds"] as? NSNumber)?.intValue ?? 0,
            tornStacks: (object["tornStacks"] as? NSNumber)?.intValue ?? 0,
            dropped: (object["dropped"] as? [String: NSNumber] ?? [:]).mapValues(\.intValue),
            threads: [], paths: [], stacks: [], segments: [], runnable: []
        )
        guard let threads = object["threads"] as? [[String: Any]] else { throw bad("no \"threads\"") }
        watch.threads = try threads.map { t in
            Timeline.WatchedThread(
                tid: try number("tid", in: t).intValue,
                name: t["name"] as? String ?? "",
                firstNs: try number("firstNs", in: t).int64Value,
                lastNs: try number("lastNs", in: t).int64Value,
                exited: t["exited"] as? Bool ?? false,
                watched: t["watched"] as? Bool ?? true,
                cpuBeforeNs: (t["cpuBeforeNs"] as? NSNumber)?.uint64Value ?? 0,
                runQueueBeforeNs: (t["runQueueBeforeNs"] as? NSNumber)?.uint64Value ?? 0,
                cpuNs: try number("cpuNs", in: t).uint64Value,
                runQueueNs: try number("runQueueNs", in: t).uint64Value,
                switches: (t["switches"] as? NSNumber)?.uint64Value ?? 0
            )
        }
        guard let paths = object["paths"] as? [String] else { throw bad("no \"paths\"") }
        watch.paths = paths
        guard let stacks = object["stacks"] as? [[NSNumber]] else { throw bad("no \"stacks\"") }
        watch.stacks = try stacks.enumerated().map { index, pairs in
            guard pairs.count % 2 == 0 else { throw bad("stack \(index) is not [module, address, …]") }
            return try stride(from: 0, to: pairs.count, by: 2).map { i in
                let module = pairs[i].intValue
                guard module >= -1, module < moduleCount else { throw bad("stack \(index) names module \(module) of \(moduleCount)") }
                return Timeline.Frame(module: module, address: pairs[i + 1].uint64Value)
            }
        }
        guard let segments = object["segments"] as? [[Any]] else { throw bad("no \"segments\"") }
        watch.segments = try segments.enumerated().map { index, row in
            guard row.count == 13,
                  let tid = (row[0] as? NSNumber)?.intValue,
                  let start = (row[1] as? NSNumber)?.int64Value,
                  let end = (row[2] as? NSNumber)?.int64Value, end >= start,
                  let state = row[3] as? String,
                  let causeName = row[4] as? String,
                  let run = (row[6] as? NSNumber)?.uint64Value,
                  let wait = (row[7] as? NSNumber)?.uint64Value,
                  let minor = (row[8] as? NSNumber)?.uint64Value,
                  let major = (row[9] as? NSNumber)?.uint64Value,
                  let path = (row[10] as? NSNumber)?.intValue, path >= -1, path < paths.count,
                  let stack = (row[11] as? NSNumber)?.intValue, stack >= -1, stack < stacks.count,
                  let args = row[12] as? [String]
            else { throw bad("segment \(index) is not [tid, startNs, endNs, state, cause, syscall, runNs, waitNs, minorFaults, majorFaults, path, stack, args]") }
            return Timeline.Segment(
                tid: tid, startNs: start, endNs: end, state: state,
                cause: Timeline.Cause(name: causeName),
                syscall: row[5] as? String,
                runNs: run, waitNs: wait, minorFaults: minor, majorFaults: major,
                path: path >= 0 ? path : nil, stack: stack >= 0 ? stack : nil,
                args: args.compactMap { UInt64($0.dropFirst(2), radix: 16) }
            )
        }
        guard let runnable = object["runnable"] as? [[NSNumber]] else { throw bad("no \"runnable\"") }
        watch.runnable = runnable.compactMap { $0.count == 2 ? ($0[0].int64Value, $0[1].intValue) : nil }
        return watch
    }
}

extension Timeline.Watch {
    /// The blocked threads' stacks as samples (time and thread unset), for a
    /// symbolizer: their frames use the samples' encoding.
    var stacksAsSamples: [Timeline.Sample] {
        stacks.map { Timeline.Sample(ns: 0, tid: 0, frames: $0) }
    }
}
