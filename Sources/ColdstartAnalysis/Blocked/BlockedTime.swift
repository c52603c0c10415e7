import Foundation

extension LaunchReport {
    /// Why the launch's critical path was not running, from the off-CPU
    /// watcher: per phase, its wall time split into running, waiting for a
    /// CPU, blocked by cause and suspended (awaiting); the call sites that
    /// blocked it; the files the launch waited on; and one line per thread.
    /// The path is the main thread until the work moves (an async main's
    /// first await), then the threads that recorded the launch's marks and
    /// spans (`CriticalPath`). Keys: docs/report.md, "blockedTime".
    ///
    /// CPU and run-queue times are the kernel's schedstat counters (exact);
    /// blocked time is the rest of the wall time, attributed to what the
    /// watcher saw at its looks, so a cause is known to one look period.
    package struct BlockedTime: Codable, Sendable {
        package var watcher: Watcher
        package var mainTid: Int
        /// The app's launch from the watcher's first look to the end, then each phase.
        package var launch: PhaseSplit
        package var phases: [PhaseSplit]
        /// Where the launch's work ran: the critical path's stretches.
        package var path: [PathPiece]
        /// The main thread parked in `dispatch_main()` while the launch went
        /// on elsewhere (an async main); never a cause.
        package var firstThreadParked: FirstThreadParked?
        /// Where the critical path blocked during the launch, longest first.
        package var callSites: [CallSite]
        /// Off-CPU time of the critical path by function: every function on
        /// the stack of a block, with the block's time (not CPU time).
        package var offCPUFunctions: [OffCPUFunction]
        /// Files any thread waited on during the launch, longest first.
        package var files: [FileRow]
        /// Every thread the launch had, main first.
        package var threads: [ThreadRow]

        package struct Watcher: Codable, Sendable {
            package var requestedHz: Double
            package var effectiveHz: Double
            /// The watcher looked from here to `stopMs` (ms from process start).
            package var startMs: Double
            package var stopMs: Double
            /// Causes are attributed per look: this is how far off a cause's
            /// start or end can be (one look period).
            package var lookPeriodMs: Double
            /// The watcher's own CPU time, and per second it ran.
            package var cpuMs: Double
            package var cpuMsPerSecond: Double
            package var tickMedianUs: Double
            package var tickP99Us: Double
            package var cpus: Int?
            /// "libunwind-remote", "unavailable" or "none-needed".
            package var stackUnwinder: String
            /// Things the report may be missing, one sentence each.
            package var notes: [String]
            /// When the launch had ended: the watcher saw none of it if it
            /// started later (its rate and CPU per second are then over a
            /// stretch too short to mean anything, and the tables are empty).
            package var launchEndMs: Double
            package var watchedTheLaunch: Bool { startMs < launchEndMs && stopMs > startMs }
        }

        /// One phase (or the whole launch) on the critical path.
        package struct PhaseSplit: Codable, Sendable {
            package var name: String
            package var wallMs: Double
            /// On a CPU.
            package var runningMs: Double
            /// Runnable but waiting for a CPU (contention).
            package var runQueueMs: Double
            /// Average number of runnable threads of the process while the
            /// main thread was runnable (itself included).
            package var runnableThreads: Double?
            /// Off the CPU and not runnable in a call made by the launch's
            /// code, every cause together.
            package var blockedMs: Double
            /// No thread of the path had launch work: it was awaiting (a
            /// timer, I/O done elsewhere, another task).
            package var suspendedMs: Double
            /// CPU time the launch's other threads used while it was
            /// suspended: near zero means it awaited something outside the process.
            package var othersCPUWhileSuspendedMs: Double
            /// The main thread's time parked in `dispatch_main()`.
            fileprivate var mainParkedMs: Double
            /// The threads on the path, and for how long.
            package var onPath: [PathShare]
            /// Before the watcher's first look or after its last.
            package var notWatchedMs: Double
            /// Blocked time by cause and target, longest first.
            package var blocked: [BlockedRow]
            package var minorFaults: UInt64
            package var majorFaults: UInt64
        }

        package struct BlockedRow: Codable, Sendable {
            /// A `Timeline.Cause` name ("unknown" for one this reader does not
            /// know), or "short" (blocks shorter than a
            /// look, between two looks that saw the thread runnable).
            package var cause: String
            /// What a person reads: "file read /etc/app.conf", "lock wait (futex 0x55…)".
            package var what: String
            package var ms: Double
            /// Share of the phase's wall time.
            package var percent: Double
        }

        package struct CallSite: Codable, Sendable {
            package var cause: String
            package var what: String
            package var ms: Double
            /// How many separate blocks.
            package var count: Int
            /// The innermost frame outside system libraries (or the innermost
            /// frame at all), when a stack was unwound and named.
            package var function: String?
            /// The thread it blocked (readable name and tid), e.g.
            /// "dispatch worker (overcommit) 4243".
            package var thread: String
            /// Leaf first, as names when the timeline is symbolized, else
            /// "module+0xoffset".
            package var stack: [String]
        }

        package struct OffCPUFunction: Codable, Sendable {
            package var name: String
            /// The module's file name; "" outside every module.
            package var module: String
            /// Blocked time with this function on the stack (inclusive).
            package var ms: Double
            /// Of the main thread's blocked time that has a stack.
            package var percent: Double
            package var blocks: Int
        }

        package struct FileRow: Codable, Sendable {
            package var path: String
            /// Time threads spent blocked on it.
            package var ms: Double
            package var calls: Int
            /// The syscalls: "read", "openat", …
            package var operations: [String]
            package var threads: [Int]
        }

        package struct ThreadRow: Codable, Sendable {
            package var tid: Int
            /// Readable: "main thread", "dispatch worker (default QoS)", … (`ThreadLabel`).
            package var name: String
            /// As the kernel has it (15 bytes).
            fileprivate var kernelName: String
            /// Time on the launch's critical path.
            package var onPathMs: Double
            /// From the thread's creation to the launch's end: on a CPU, waiting
            /// for one (both exact), and blocked while watched.
            package var cpuMs: Double
            package var runQueueMs: Double
            package var blockedMs: Double
            /// The longest blocked row of this thread, if any.
            package var mostlyBlockedOn: String?
            package var exited: Bool
            /// False when the watcher had no room to watch this thread.
            package var watched: Bool
        }
    }
}

extension LaunchReport.BlockedTime {
    /// The blocked-time section, or nil when the timeline has no watch.
    /// `frameName` names a frame (a symbolizer); by default the timeline's own symbols.
    init?(_ timeline: Timeline, frameName: ((Timeline.Frame) -> String?)? = nil) {
        guard var watch = timeline.watch else { return nil }
        // The capture layer names only the calls it reasons about.
        let isX86_64 = SyscallNames.isX86_64(timeline)
        for index in watch.segments.indices {
            watch.segments[index].syscall = watch.segments[index].syscall.map { SyscallNames.named($0, isX86_64: isX86_64) }
        }
        let mainTid = timeline.process.pid
        let endNs = timeline.launch.endNs
        let namer = FrameNamer(timeline: timeline, name: frameName)
        self.mainTid = mainTid
        watcher = Watcher(watch, launchEndNs: endNs)

        var byThread: [Int: [Timeline.Segment]] = [:]
        for segment in watch.segments { byThread[segment.tid, default: []].append(segment) }
        for tid in byThread.keys { byThread[tid]!.sort { $0.startNs < $1.startNs } }
        let split = Splitter(watch: watch, namer: namer)
        let onPath = PathSplitter(timeline, watch: watch, segments: byThread, namer: namer)

        let launchStart = max(0, min(watch.startNs, endNs))
        let whole = onPath.split(from: launchStart, to: endNs)
        launch = split.phase(name: "launch (watched part)", whole, names: onPath.names)
        phases = timeline.phases.map { split.phase(name: $0.name, onPath.split(from: $0.startNs, to: $0.endNs), names: onPath.names) }
        path = onPath.path.pieces.map {
            PathPiece(tid: $0.tid, thread: onPath.names.label($0.tid),
                      startMs: LaunchReport.milliseconds($0.startNs), endMs: LaunchReport.milliseconds($0.endNs))
        }
        firstThreadParked = onPath.firstThreadParked(until: endNs)
        let blocks = onPath.split(from: 0, to: endNs).blocks
        callSites = split.callSites(blocks, names: onPath.names)
        offCPUFunctions = split.offCPUFunctions(blocks)
        files = split.files(watch.segments, until: endNs)
        threads = split.threads(byThread, mainTid: mainTid, until: endNs, path: onPath)
    }
}

extension LaunchReport.BlockedTime.Watcher {
    init(_ watch: Timeline.Watch, launchEndNs: Int64) {
        requestedHz = watch.requestedHz
        effectiveHz = watch.effectiveHz
        startMs = LaunchReport.milliseconds(watch.startNs)
        stopMs = LaunchReport.milliseconds(watch.stopNs)
        lookPeriodMs = watch.requestedHz > 0 ? 1000 / watch.requestedHz : 0
        cpuMs = LaunchReport.milliseconds(watch.cpuNs)
        let seconds = Double(watch.stopNs - watch.startNs) / 1e9
        cpuMsPerSecond = seconds > 0 ? cpuMs / seconds : 0
        launchEndMs = LaunchReport.milliseconds(launchEndNs)
        tickMedianUs = Double(watch.tickMedianNs) / 1000
        tickP99Us = Double(watch.tickP99Ns) / 1000
        cpus = watch.cpus
        stackUnwinder = watch.unwinder
        var notes: [String] = []
        if !watch.syscallFile { notes.append("/proc/<tid>/syscall was not readable: blocked time has no causes") }
        if !watch.complete { notes.append("the watcher had not stopped when the timeline was written: the last stretch of each thread is missing") }
        if watch.unwinder == "unavailable" { notes.append("libunwind-x86_64.so.8 could not be loaded: no stacks for blocked calls") }
        for (what, count) in watch.dropped.sorted(by: { $0.key < $1.key }) where count > 0 {
            notes.append("the watcher ran out of room for \(count) \(what)")
        }
        if watch.startNs > 0 {
            notes.append("the watcher started \(Figure.format(startMs, decimals: 2)) ms after the process start: time before that is \"not watched\"")
        }
        if launchEndNs > watch.stopNs {
            let why = ["time-limit": " (its 2-minute limit)", "buffer-full": " (its buffers were full)"][watch.stopReason] ?? ""
            notes.append("the watcher stopped before the launch ended\(why): time after \(Figure.format(stopMs, decimals: 2)) ms is \"not watched\"")
        }
        self.notes = notes
    }
}

/// Names stack frames: the caller's symbolizer, else the timeline's symbols,
/// else "module+0xoffset".
struct FrameNamer {
    let timeline: Timeline
    let name: ((Timeline.Frame) -> String?)?

    func callAsFunction(_ frame: Timeline.Frame) -> String {
        name?(frame) ?? timeline.symbols[frame.key]?.name ?? Symbolizer.fallbackName(for: frame, modules: timeline.modules)
    }

    /// A frame in the C library, the Swift runtime, Foundation or another
    /// system library: not where an app's code chose to block.
    func isSystem(_ frame: Timeline.Frame) -> Bool {
        guard frame.module >= 0, frame.module < timeline.modules.count else { return false }
        let path = timeline.modules[frame.module].path
        if path.hasPrefix("/lib/") || path.hasPrefix("/lib64/") || path.hasPrefix("/usr/lib/") || path.hasPrefix("[") { return true }
        let file = (path as NSString).lastPathComponent
        let runtime = ["libswift", "libFoundation", "lib_Foundation", "libdispatch", "libBlocksRuntime", "libXCTest", "ld-linux"]
        return runtime.contains { file.hasPrefix($0) }
    }
}

/// The arithmetic: clipping segments to intervals and grouping them.
struct Splitter {
    let watch: Timeline.Watch
    let namer: FrameNamer

    /// The part of `segment` inside [from, to), as a fraction of it.
    static func overlap(_ segment: Timeline.Segment, from: Int64, to: Int64) -> (ns: Int64, fraction: Double) {
        let ns = max(0, min(segment.endNs, to) - max(segment.startNs, from))
        guard ns > 0 else { return (0, 0) }
        return (ns, Double(ns) / Double(max(segment.durationNs, 1)))
    }

    /// The cause a segment's blocked time counts as. A runnable stretch's
    /// few blocked nanoseconds are blocks no look saw; when the thread took
    /// major faults in it, they are the faults' disk waits, which are
    /// shorter than a look.
    static func rowCause(_ segment: Timeline.Segment) -> String {
        guard segment.cause == .running else { return causeName(segment.cause) }
        return segment.majorFaults > 0 ? Timeline.Cause.pageFault.name : "short"
    }

    /// A cause as a row names it: "unknown" for one this reader does not
    /// know (`what` says which).
    static func causeName(_ cause: Timeline.Cause) -> String {
        if case .unknown = cause { return "unknown" }
        return cause.name
    }

    /// A short label of what the segment was blocked on.
    func what(_ segment: Timeline.Segment) -> String {
        let path = segment.path.map { watch.paths[$0] }
        let call = segment.syscall ?? "unknown call"
        switch segment.cause {
        case .running where segment.majorFaults > 0: return "page faults"
        case .running: return "short blocks between looks"
        case .fileRead: return "file read " + (path ?? "(\(call))")
        case .fileWrite: return "file write " + (path ?? "(\(call))")
        case .fileSystem: return "file system: \(call)" + (path.map { " " + $0 } ?? "")
        case .lock:
            if segment.syscall == "futex", let address = segment.args.first {
                return "lock wait (futex 0x\(String(address, radix: 16)))"
            }
            return "lock wait (\(call)" + (path.map { " " + $0 } ?? "") + ")"
        case .events: return "waiting for events (\(call)" + (path.map { " " + $0 } ?? "") + ")"
        case .network: return "network: \(call)" + (path.map { " " + $0 } ?? "")
        case .pipe: return "pipe: \(call)"
        case .sleep: return "sleep (\(call))"
        case .pageFault: return "page faults"
        case .child: return "waiting for a child process (\(call))"
        case .memory: return "memory map: \(call)"
        case .stopped: return "stopped (signal or debugger)"
        case .other: return segment.syscall.map { $0.hasPrefix("syscall ") ? $0 : "syscall \($0)" } ?? "blocked (unknown call)"
        case .unknown(let name): return "unknown cause \"\(name)\" (\(call)" + (path.map { " " + $0 } ?? "") + ")"
        }
    }

    /// One interval of the critical path (`CriticalPathSplit`) as a report row.
    func phase(name: String, _ split: CriticalPathSplit, names: ThreadNames) -> LaunchReport.BlockedTime.PhaseSplit {
        var runnableTime = 0.0, runnableWeighted = 0.0
        for (lo, hi) in split.runnableStretches where hi > lo {
            runnableWeighted += averageRunnable(from: lo, to: hi) * Double(hi - lo)
            runnableTime += Double(hi - lo)
        }
        var rows: [String: (cause: String, ns: Double)] = [:]
        for (segment, ns) in split.blocks {
            rows[what(segment), default: (Self.rowCause(segment), 0)].ns += ns
        }
        let wall = split.wallNs
        func ms(_ ns: Double) -> Double { ns / 1_000_000 }
        return .init(
            name: name,
            wallMs: ms(wall),
            runningMs: ms(split.runningNs),
            runQueueMs: ms(split.runQueueNs),
            runnableThreads: runnableTime > 0 ? runnableWeighted / runnableTime : nil,
            blockedMs: ms(split.blockedNs),
            suspendedMs: ms(split.suspendedNs),
            othersCPUWhileSuspendedMs: ms(split.othersCPUWhileSuspendedNs),
            mainParkedMs: ms(split.mainParkedNs),
            onPath: split.threads.map { .init(tid: $0.tid, thread: names.label($0.tid), ms: ms(Double($0.ns))) },
            notWatchedMs: ms(split.notWatchedNs),
            blocked: rows.map { .init(cause: $0.value.cause, what: $0.key, ms: ms($0.value.ns), percent: wall > 0 ? $0.value.ns / wall * 100 : 0) }
                .sorted { ($0.ms, $1.what) > ($1.ms, $0.what) },
            // A hostile file's counts may add past what UInt64 holds.
            minorFaults: UInt64(exactly: split.minorFaults.rounded()) ?? .max,
            majorFaults: UInt64(exactly: split.majorFaults.rounded()) ?? .max
        )
    }

    /// Time-weighted number of runnable threads over [from, to).
    func averageRunnable(from: Int64, to: Int64) -> Double {
        guard to > from, !watch.runnable.isEmpty else { return 0 }
        var total = 0.0
        for (index, point) in watch.runnable.enumerated() {
            let next = index + 1 < watch.runnable.count ? watch.runnable[index + 1].ns : Int64.max
            let lo = max(point.ns, from), hi = min(next, to)
            if hi > lo { total += Double(point.count) * Double(hi - lo) }
        }
        return total / Double(to - from)
    }

    /// The blocks (of the critical path) grouped by what blocked and where.
    func callSites(_ blocks: [(segment: Timeline.Segment, ns: Double)], names: ThreadNames,
                   limit: Int = 10) -> [LaunchReport.BlockedTime.CallSite] {
        struct Key: Hashable { var what: String; var stack: Int?; var tid: Int }
        var sites: [Key: (cause: String, ns: Double, count: Int)] = [:]
        for (segment, blocked) in blocks where segment.cause != .running {
            let key = Key(what: what(segment), stack: segment.stack, tid: segment.tid)
            sites[key, default: (Self.causeName(segment.cause), 0, 0)].ns += blocked
            sites[key]!.count += 1
        }
        return sites.sorted { ($0.value.ns, $1.key.what) > ($1.value.ns, $0.key.what) }
            .prefix(limit)
            .map { key, value in
                let frames = key.stack.map { watch.stacks[$0] } ?? []
                let function = frames.dropFirst().first { !namer.isSystem($0) } ?? frames.first
                return .init(
                    cause: value.cause, what: key.what, ms: value.ns / 1_000_000, count: value.count,
                    function: function.map { namer($0) },
                    thread: names.label(key.tid),
                    stack: frames.prefix(16).map { namer($0) }
                )
            }
    }

    /// Inclusive off-CPU time per function over the critical path's blocks
    /// that have a stack; a function twice on one stack counts once.
    func offCPUFunctions(_ blocks: [(segment: Timeline.Segment, ns: Double)], limit: Int = 15) -> [LaunchReport.BlockedTime.OffCPUFunction] {
        struct Key: Hashable { var name: String; var module: Int }
        var totals: [Key: (ns: Double, blocks: Int)] = [:]
        var all = 0.0
        for (segment, blocked) in blocks where segment.cause != .running {
            guard let stack = segment.stack else { continue }
            all += blocked
            let keys = Set(watch.stacks[stack].map { Key(name: namer($0), module: $0.module) })
            for key in keys { totals[key, default: (0, 0)].ns += blocked; totals[key]!.blocks += 1 }
        }
        let modules = namer.timeline.modules
        return totals.sorted { ($0.value.ns, $1.key.name) > ($1.value.ns, $0.key.name) }
            .prefix(limit)
            .map { key, value in
                .init(name: key.name,
                      module: key.module >= 0 && key.module < modules.count ? Symbolizer.moduleName(modules[key.module].path) : "",
                      ms: value.ns / 1_000_000, percent: all > 0 ? value.ns / all * 100 : 0, blocks: value.blocks)
            }
    }

    func files(_ segments: [Timeline.Segment], until end: Int64) -> [LaunchReport.BlockedTime.FileRow] {
        var files: [Int: (ns: Double, calls: Int, ops: Set<String>, threads: Set<Int>)] = [:]
        for segment in segments {
            guard let path = segment.path, [.fileRead, .fileWrite, .fileSystem].contains(segment.cause) else { continue }
            let (ns, fraction) = Self.overlap(segment, from: 0, to: end)
            guard ns > 0 else { continue }
            var entry = files[path] ?? (0, 0, [], [])
            entry.ns += Double(segment.blockedNs) * fraction
            entry.calls += 1
            if let call = segment.syscall { entry.ops.insert(call) }
            entry.threads.insert(segment.tid)
            files[path] = entry
        }
        return files.map { path, entry in
            .init(path: watch.paths[path], ms: entry.ns / 1_000_000, calls: entry.calls,
                  operations: entry.ops.sorted(), threads: entry.threads.sorted())
        }
        .sorted { ($0.ms, $1.path) > ($1.ms, $0.path) }
    }

    func threads(_ byThread: [Int: [Timeline.Segment]], mainTid: Int, until end: Int64,
                 path: PathSplitter) -> [LaunchReport.BlockedTime.ThreadRow] {
        var onPath: [Int: Int64] = [:]
        for piece in path.path.pieces(from: 0, to: end) { onPath[piece.tid, default: 0] += piece.endNs - piece.startNs }
        return watch.threads
            .filter { $0.firstNs <= end && !$0.name.hasPrefix("coldstart-") }
            .map { thread -> LaunchReport.BlockedTime.ThreadRow in
                // What it used before the watcher first saw it, then each segment.
                var cpu = Double(thread.cpuBeforeNs), queued = Double(thread.runQueueBeforeNs), blocked = 0.0
                var causes: [String: Double] = [:]
                for segment in byThread[thread.tid] ?? [] {
                    let (ns, fraction) = Self.overlap(segment, from: 0, to: end)
                    guard ns > 0 else { continue }
                    cpu += Double(segment.runNs) * fraction
                    queued += Double(segment.waitNs) * fraction
                    let b = Double(segment.blockedNs) * fraction
                    blocked += b
                    if segment.cause != .running { causes[what(segment), default: 0] += b }
                }
                if !thread.watched {
                    cpu = Double(thread.cpuNs)
                    queued = Double(thread.runQueueNs)
                }
                let top = causes.max { ($0.value, $1.key) < ($1.value, $0.key) }
                let onPathMs: Double = Double(onPath[thread.tid] ?? 0) / 1_000_000
                return .init(
                    tid: thread.tid, name: path.names.readable(thread.tid), kernelName: thread.name,
                    onPathMs: onPathMs,
                    cpuMs: cpu / 1_000_000, runQueueMs: queued / 1_000_000, blockedMs: blocked / 1_000_000,
                    mostlyBlockedOn: top.flatMap { $0.value > 0 ? $0.key : nil },
                    exited: thread.exited, watched: thread.watched
                )
            }
            .sorted { ($0.tid == mainTid ? 0 : 1, $0.tid) < ($1.tid == mainTid ? 0 : 1, $1.tid) }
    }
}
