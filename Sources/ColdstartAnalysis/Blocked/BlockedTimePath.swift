import Foundation

extension LaunchReport.BlockedTime {
    /// A stretch of the critical path on one thread (ms from process start).
    package struct PathPiece: Codable, Sendable, Equatable {
        package var tid: Int
        /// Readable name and tid: "dispatch worker (overcommit) 4243".
        package var thread: String
        package var startMs: Double
        package var endMs: Double
    }

    /// A thread's time on the path inside one phase.
    package struct PathShare: Codable, Sendable, Equatable {
        package var tid: Int
        package var thread: String
        package var ms: Double
    }

    /// The process's first thread parked in `dispatch_main()`
    /// (`rt_sigsuspend`) after an async main's first await: main-actor work
    /// runs on dispatch workers from then on.
    package struct FirstThreadParked: Codable, Sendable, Equatable {
        /// When it parked, and for how long during the launch.
        package var atMs: Double
        package var ms: Double
        /// The call it parked in ("rt_sigsuspend").
        package var call: String
    }
}

/// Readable thread names with their tids: "main thread", "dispatch worker
/// (overcommit) 4243".
struct ThreadNames {
    let mainTid: Int
    /// Kernel names: the watcher's, then the timeline's thread list.
    let kernel: [Int: String]
    /// What a thread's blocked stacks say it is, over its kernel name: a new
    /// thread has its creator's name until it sets its own, so a dispatch
    /// worker seen early reads "AsyncService", and a thread a worker started
    /// reads "-qos.overcommit".
    let byStack: [Int: String]

    /// `frameName` names the blocked stacks' frames (nil: names from the file).
    init(_ timeline: Timeline, frameName: ((Timeline.Frame) -> String?)? = nil) {
        mainTid = timeline.process.pid
        var kernel = Dictionary(timeline.threads.map { ($0.tid, $0.name) }, uniquingKeysWith: { first, _ in first })
        for thread in timeline.watch?.threads ?? [] where !thread.name.isEmpty { kernel[thread.tid] = thread.name }
        self.kernel = kernel
        var byStack: [Int: String] = [:]
        if let watch = timeline.watch {
            let namer = FrameNamer(timeline: timeline, name: frameName)
            var seen = Set<Int>()
            for segment in watch.segments where segment.tid != mainTid {
                guard let stack = segment.stack, !seen.contains(segment.tid) else { continue }
                let names = watch.stacks[stack].map { namer($0) }
                guard names.contains("start_thread") else { continue }
                seen.insert(segment.tid)
                let name = kernel[segment.tid] ?? ""
                if names.contains("_dispatch_worker_thread") {
                    if !ThreadLabel.isDispatchWorker(name) { byStack[segment.tid] = "dispatch worker" }
                } else if ThreadLabel.isDispatchWorker(name) {
                    byStack[segment.tid] = "thread started by a dispatch worker"
                }
            }
        }
        self.byStack = byStack
    }

    /// "main", "dispatch worker (default QoS)", … (`ThreadLabel`).
    func readable(_ tid: Int) -> String {
        byStack[tid] ?? ThreadLabel.readable(kernel[tid] ?? "", tid: tid, mainTid: mainTid)
    }

    /// "main thread", or the readable name followed by the tid.
    func label(_ tid: Int) -> String { tid == mainTid ? "main thread" : "\(readable(tid)) \(tid)" }

    func isDispatchWorker(_ tid: Int) -> Bool {
        byStack[tid].map { $0 == "dispatch worker" } ?? kernel[tid].map(ThreadLabel.isDispatchWorker) ?? false
    }

    /// Coldstart's own threads (never "other threads" of the launch).
    var coldstartThreads: Set<Int> { Set(kernel.filter { $0.value.hasPrefix("coldstart-") }.keys) }
}

/// The critical path of a watched launch and how to split an interval of it.
struct PathSplitter {
    let path: CriticalPath
    let names: ThreadNames
    let mainTid: Int
    let watched: (startNs: Int64, stopNs: Int64)
    let segments: [Int: [Timeline.Segment]]
    /// Each blocked stack's function names; nil for a stack with no named
    /// frame (no symbols), which is judged by its call instead.
    private let stackNames: [[String]?]
    /// Sample times by thread, when a CPU-time clock took them.
    private let cpuSamples: [Int: [Int64]]
    /// Each thread's CPU time at its marks and span ends.
    private let threadCPU: [Int: [CriticalPathSplit.CPUReading]]

    init(_ timeline: Timeline, watch: Timeline.Watch, segments: [Int: [Timeline.Segment]], namer: FrameNamer) {
        path = CriticalPath(timeline)
        names = ThreadNames(timeline, frameName: namer.name)
        mainTid = timeline.process.pid
        watched = (watch.startNs, watch.stopNs)
        self.segments = segments
        stackNames = watch.stacks.map { stack in
            let names = stack.map { namer($0) }
            return names.contains { !$0.contains("+0x") && !$0.hasPrefix("0x") } ? names : nil
        }
        var samples: [Int: [Int64]] = [:]
        if let clock = timeline.sampling?.clock, clock != "wall-timer" {
            for sample in timeline.samples { samples[sample.tid, default: []].append(sample.ns) }
            for tid in samples.keys { samples[tid]!.sort() }
        }
        cpuSamples = samples
        var readings: [Int: [CriticalPathSplit.CPUReading]] = [:]
        func read(_ tid: Int, _ ns: Int64, _ cpu: UInt64?) {
            if let cpu { readings[tid, default: []].append(.init(ns: ns, cpuNs: cpu)) }
        }
        for mark in timeline.marks { read(mark.tid, mark.ns, mark.threadCpuNs) }
        for span in timeline.spans {
            read(span.tid, span.beginNs, span.beginThreadCpuNs)
            if !span.unfinished { read(span.endTid, span.endNs, span.endThreadCpuNs) }
        }
        threadCPU = readings.mapValues { $0.sorted { $0.ns < $1.ns } }
    }

    func kind(_ segment: Timeline.Segment) -> WaitKind {
        WaitKind.of(segment, stack: segment.stack.flatMap { stackNames[$0] }, isMainThread: segment.tid == mainTid,
                    isDispatchWorker: names.isDispatchWorker(segment.tid))
    }

    func split(from: Int64, to: Int64) -> CriticalPathSplit {
        CriticalPathSplit(path: path, from: from, to: to, mainTid: mainTid, watched: watched, segments: segments,
                          ignoring: names.coldstartThreads, cpuSamples: cpuSamples, threadCPU: threadCPU, kind: kind)
    }

    /// When and for how long the main thread sat parked in `dispatch_main()`
    /// before `endNs`; nil when it never did.
    func firstThreadParked(until endNs: Int64) -> LaunchReport.BlockedTime.FirstThreadParked? {
        let parked = (segments[mainTid] ?? []).filter { $0.startNs < endNs && kind($0) == .parked }
        guard let first = parked.first else { return nil }
        let ns = parked.reduce(0) { $0 + Splitter.overlap($1, from: 0, to: endNs).ns }
        return .init(atMs: LaunchReport.milliseconds(first.startNs), ms: LaunchReport.milliseconds(ns),
                     call: first.syscall ?? "rt_sigsuspend")
    }
}

extension CriticalPath {
    /// The path's stretches inside [from, to) as report rows, when they are
    /// on more than one thread (a span across an await); else nil.
    func stretches(from: Int64, to: Int64, names: ThreadNames) -> [LaunchReport.BlockedTime.PathPiece]? {
        let inside = pieces(from: from, to: to)
        guard Set(inside.map(\.tid)).count > 1 else { return nil }
        return inside.map {
            .init(tid: $0.tid, thread: names.label($0.tid), startMs: LaunchReport.milliseconds($0.startNs),
                  endMs: LaunchReport.milliseconds($0.endNs))
        }
    }
}
