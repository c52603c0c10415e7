import Foundation

/// An interval of the launch (a phase, or the whole launch) on its critical
/// path: the wall time split into running, waiting for a CPU, blocked (a
/// thread of the path stuck in a call while running the launch's code) and
/// suspended (no thread of the path had launch work to run: it was awaiting).
///
/// CPU and run-queue times are the kernel's schedstat counters, exact; the
/// rest of a segment's wall time is blocked or suspended by what the watcher
/// saw, so a boundary is good to one look.
struct CriticalPathSplit: Sendable {
    var wallNs: Double = 0
    var runningNs: Double = 0
    var runQueueNs: Double = 0
    var blockedNs: Double = 0
    var suspendedNs: Double = 0
    /// Before the watcher's first look or after its last.
    var notWatchedNs: Double = 0
    /// The blocked time, one entry per segment (clipped): the caller names
    /// and groups them. A `running` segment here holds blocks shorter than a
    /// look.
    var blocks: [(segment: Timeline.Segment, ns: Double)] = []
    /// The stretches in which the path was suspended.
    var suspensions: [(startNs: Int64, endNs: Int64)] = []
    /// CPU the other threads of the launch used while the path was suspended:
    /// near zero means it awaited something outside the process (a timer, I/O).
    var othersCPUWhileSuspendedNs: Double = 0
    /// Time the main thread spent parked in `dispatch_main()`.
    var mainParkedNs: Double = 0
    /// Time on the path per thread, in order of first appearance.
    var threads: [(tid: Int, ns: Int64)] = []
    /// The stretches in which the path's thread was runnable (clipped).
    var runnableStretches: [(startNs: Int64, endNs: Int64)] = []
    /// Page faults of the path's threads, shared between intervals by time.
    var minorFaults: Double = 0
    var majorFaults: Double = 0

    /// The split of [from, to) along `path`; time the path does not cover
    /// (before `main`) is the main thread's. `segments` are the watcher's by
    /// thread, each thread's in time order; `kind` classifies one; threads in `ignoring` (Coldstart's own)
    /// never count as "other threads". `cpuSamples` (sample times by
    /// thread, sorted, from a CPU-time clock) share a runnable segment's CPU
    /// time between intervals by where its samples fell rather than by wall
    /// time: a segment that ran child tasks, then a burn, is not one even rate.
    /// `threadCPU` (each thread's CPU time at its marks and span ends, by
    /// thread, in time order) is better still: a stretch of the path that
    /// begins and ends at its thread's own events gets exactly that CPU time.
    init(path: CriticalPath, from: Int64, to: Int64, mainTid: Int, watched: (startNs: Int64, stopNs: Int64)?,
                 segments: [Int: [Timeline.Segment]], ignoring: Set<Int> = [], cpuSamples: [Int: [Int64]] = [:],
                 threadCPU: [Int: [CPUReading]] = [:], kind: (Timeline.Segment) -> WaitKind) {
        wallNs = Double(max(0, to - from))
        guard to > from else { return }
        var pieces = path.pieces(from: from, to: to)
        if pieces.isEmpty {
            pieces = [.init(tid: mainTid, startNs: from, endNs: to)]
        } else if pieces[0].startNs > from {
            pieces.insert(.init(tid: mainTid, startNs: from, endNs: pieces[0].startNs), at: 0)
        }
        for piece in pieces {
            if let index = threads.firstIndex(where: { $0.tid == piece.tid }) {
                threads[index].ns += piece.endNs - piece.startNs
            } else {
                threads.append((piece.tid, piece.endNs - piece.startNs))
            }
            add(piece, watched: watched, segments: segments[piece.tid] ?? [], samples: cpuSamples[piece.tid] ?? [],
                readings: threadCPU[piece.tid] ?? [], kind: kind)
        }
        for segment in segments[mainTid] ?? [] where kind(segment) == .parked {
            mainParkedNs += Double(Splitter.overlap(segment, from: from, to: to).ns)
        }
        for suspension in suspensions {
            let onPath = path.thread(at: suspension.startNs)
            for (tid, list) in segments where tid != onPath && !ignoring.contains(tid) {
                for segment in list[Self.first(in: list, endingAfter: suspension.startNs)...] {
                    if segment.startNs >= suspension.endNs { break }
                    othersCPUWhileSuspendedNs += Double(segment.runNs)
                        * Splitter.overlap(segment, from: suspension.startNs, to: suspension.endNs).fraction
                }
            }
        }
    }

    private mutating func add(_ piece: CriticalPath.Piece, watched: (startNs: Int64, stopNs: Int64)?,
                              segments: [Timeline.Segment], samples: [Int64], readings: [CPUReading],
                              kind: (Timeline.Segment) -> WaitKind) {
        guard let watched, case let lo = max(piece.startNs, watched.startNs), case let hi = min(piece.endNs, watched.stopNs),
              hi > lo
        else {
            notWatchedNs += Double(piece.endNs - piece.startNs)
            return
        }
        notWatchedNs += Double((piece.endNs - piece.startNs) - (hi - lo))
        var cursor = lo
        var run = 0.0, queued = 0.0
        defer {
            // The thread's own clock moves time between running and queued
            // only: past the runnable time it would make the row longer than
            // its wall time (a reading taken up to 0.1 ms outside the piece).
            if let exact = Self.exactCPU(readings, from: lo, to: hi) {
                let runnable = run + queued
                run = min(exact, runnable)
                queued = runnable - run
            }
            runningNs += run
            runQueueNs += queued
        }
        for segment in segments[Self.first(in: segments, endingAfter: lo)...] {
            if segment.startNs >= hi { break }
            let (ns, fraction) = Splitter.overlap(segment, from: lo, to: hi)
            guard ns > 0 else { continue }
            // A gap before this segment: the thread did not exist yet.
            suspend(from: cursor, to: max(cursor, segment.startNs))
            cursor = max(cursor, min(segment.endNs, hi))
            // A thread waits for a CPU only while it wants one: its runnable
            // time (CPU and run queue) goes where its samples put its CPU,
            // and the rest of the wall time inside is blocked. By wall share
            // a stretch that spun, then took page faults, gave the faults'
            // interval run-queue time that was the spinning's (on a busy
            // machine, most of their blocked time). The schedstat counters
            // are read at the looks, not at the segment's ends, so they may
            // pass its length: the runnable time is capped there, and the
            // segment's time inside adds up to exactly `ns`.
            let cpuShare = Self.cpuFraction(segment, from: lo, to: hi, samples: samples, wall: fraction)
            let runnable = min(Double(ns), (Double(segment.runNs) + Double(segment.waitNs)) * cpuShare)
            let cpu = min(runnable, Double(segment.runNs) * cpuShare)
            run += cpu
            queued += runnable - cpu
            minorFaults += Double(segment.minorFaults) * fraction
            majorFaults += Double(segment.majorFaults) * fraction
            if segment.cause == .running { runnableStretches.append((max(segment.startNs, lo), min(segment.endNs, hi))) }
            let off = Double(ns) - runnable
            guard off > 0 else { continue }
            switch kind(segment) {
            case .running, .blocked:
                blockedNs += off
                blocks.append((segment, off))
            case .idle, .parked:
                suspendedNs += off
                suspensions.append((max(segment.startNs, lo), min(segment.endNs, hi)))
            }
        }
        suspend(from: cursor, to: hi)
    }

    /// A thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`) at one of its events.
    struct CPUReading: Sendable, Equatable {
        var ns: Int64
        var cpuNs: UInt64

        init(ns: Int64, cpuNs: UInt64) {
            self.ns = ns
            self.cpuNs = cpuNs
        }
    }

    /// The thread's CPU time over [from, to) when it recorded events at
    /// both ends (within 0.1 ms): the difference of its own clock.
    static func exactCPU(_ readings: [CPUReading], from: Int64, to: Int64) -> Double? {
        let slack: Int64 = 100_000
        guard let start = readings.last(where: { $0.ns <= from + slack && $0.ns >= from - slack }),
              let end = readings.first(where: { $0.ns >= to - slack && $0.ns <= to + slack }),
              end.ns > start.ns, end.cpuNs >= start.cpuNs
        else { return nil }
        return Double(end.cpuNs - start.cpuNs)
    }

    /// The share of `segment`'s CPU time inside [from, to): by its samples
    /// when it has enough of them (four), else by wall time.
    static func cpuFraction(_ segment: Timeline.Segment, from: Int64, to: Int64, samples: [Int64], wall: Double) -> Double {
        guard wall < 1, segment.cause == .running else { return wall }
        let all = samples.partitionPoint { $0 < segment.endNs } - samples.partitionPoint { $0 < segment.startNs }
        guard all >= 4 else { return wall }
        let inside = samples.partitionPoint { $0 < min(segment.endNs, to) } - samples.partitionPoint { $0 < max(segment.startNs, from) }
        return Double(inside) / Double(all)
    }

    /// The first of a thread's segments (contiguous, in time order) that
    /// ends after `ns`.
    private static func first(in segments: [Timeline.Segment], endingAfter ns: Int64) -> Int {
        segments.partitionPoint { $0.endNs <= ns }
    }


    private mutating func suspend(from: Int64, to: Int64) {
        guard to > from else { return }
        suspendedNs += Double(to - from)
        suspensions.append((from, to))
    }
}
