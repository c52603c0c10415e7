import Foundation

/// The thread that carried the launch's own work at each moment, from `main`
/// to the launch's end (issue 11).
///
/// An `async` main runs on the process's first thread only until its first
/// await; then that thread parks in `dispatch_main()` and the main actor's
/// jobs run on dispatch workers. So the path starts on the main thread and
/// follows the threads that recorded the launch's marks, span begins and span
/// ends: between two such events on different threads the work moved from
/// one to the other, at the moment the first went off the CPU for good (or
/// the second woke up, when the first kept running other work).
package struct CriticalPath: Sendable, Equatable {
    /// One stretch of the path on one thread: [startNs, endNs), offsets from
    /// the process start.
    package struct Piece: Sendable, Equatable {
        package var tid: Int
        package var startNs: Int64
        package var endNs: Int64

        package init(tid: Int, startNs: Int64, endNs: Int64) {
            self.tid = tid
            self.startNs = startNs
            self.endNs = endNs
        }
    }

    /// Something the launch's own code did on a thread at a time: a mark, a
    /// span's begin or its end.
    package struct Event: Sendable, Equatable {
        package var ns: Int64
        package var tid: Int
        /// The thread's CPU time at the event, when the file has it.
        package var threadCpuNs: UInt64?

        package init(ns: Int64, tid: Int, threadCpuNs: UInt64? = nil) {
            self.ns = ns
            self.tid = tid
            self.threadCpuNs = threadCpuNs
        }
    }

    /// A thread's CPU time when the watcher first looked at it.
    package struct FirstLook: Sendable, Equatable {
        package var ns: Int64
        package var cpuNs: UInt64
    }

    /// Contiguous and in time order; empty when the launch has no `main`.
    package var pieces: [Piece]

    /// The path from `startNs` (main) to `endNs`, through `events`.
    /// `segments` are the watcher's, by thread, in time order, and
    /// `firstLooks` each thread's CPU time when the watcher first saw it;
    /// without them the work moves at the first event of the new thread.
    package init(mainTid: Int, from startNs: Int64, to endNs: Int64, events: [Event],
                 segments: [Int: [Timeline.Segment]] = [:], firstLooks: [Int: FirstLook] = [:]) {
        guard endNs > startNs else { pieces = []; return }
        let ordered = events.filter { $0.ns >= startNs && $0.ns <= endNs }.sorted { ($0.ns, $0.tid) < ($1.ns, $1.tid) }
        var pieces: [Piece] = []
        var current = Event(ns: startNs, tid: mainTid)
        // `current` is the last event so far: the work cannot have left its
        // thread before it.
        for event in ordered {
            if event.tid != current.tid {
                let handover = Self.handover(from: current, to: event, segments: segments, firstLooks: firstLooks)
                pieces.append(Piece(tid: current.tid, startNs: pieces.last?.endNs ?? startNs, endNs: handover))
            }
            current = event
        }
        pieces.append(Piece(tid: current.tid, startNs: pieces.last?.endNs ?? startNs, endNs: endNs))
        self.pieces = pieces.filter { $0.endNs > $0.startNs }
    }

    /// When the work moved from `from.tid` (last seen at `from.ns`) to
    /// `to.tid` (first seen at `to.ns`).
    static func handover(from: Event, to: Event, segments: [Int: [Timeline.Segment]],
                         firstLooks: [Int: FirstLook] = [:]) -> Int64 {
        func covering(_ tid: Int, _ ns: Int64) -> Timeline.Segment? {
            segments[tid]?.last { $0.startNs <= ns && ns < $0.endNs } ?? segments[tid]?.last { $0.startNs <= ns && ns <= $0.endNs }
        }
        // Without the watcher's word, at the new thread's first event.
        var at = to.ns
        if let old = covering(from.tid, to.ns), old.cause != .running {
            // Off the CPU when the new thread took over: the work left when it stopped.
            at = old.startNs
        } else if let new = covering(to.tid, to.ns), new.cause == .running {
            // Still running (other work): the work arrived when the new thread woke.
            at = new.startNs
        } else if let look = firstLooks[from.tid], look.ns >= to.ns, let cpuAtFrom = from.threadCpuNs,
                  look.cpuNs >= cpuAtFrom, let seen = segments[from.tid]?.first, seen.cause != .running {
            // The watcher first saw the old thread after the handover, off
            // the CPU: it had run only its CPU time since its last event
            // (a loaded machine that started the watcher late).
            at = from.ns + Int64(look.cpuNs - cpuAtFrom)
        }
        return min(max(at, from.ns), to.ns)
    }

    /// The thread on the path at `ns`, if the path covers it.
    package func thread(at ns: Int64) -> Int? {
        let low = pieces.partitionPoint { $0.endNs <= ns }
        return low < pieces.count && pieces[low].startNs <= ns ? pieces[low].tid : nil
    }

    /// The pieces inside [from, to), clipped to it.
    package func pieces(from: Int64, to: Int64) -> [Piece] {
        pieces.compactMap { piece in
            let start = max(piece.startNs, from), end = min(piece.endNs, to)
            return end > start ? Piece(tid: piece.tid, startNs: start, endNs: end) : nil
        }
    }
}

extension CriticalPath {
    /// The path of a timeline's launch: from `main` to its end, through its
    /// marks, the begins and ends of its spans, and `ready()`.
    package init(_ timeline: Timeline) {
        var events = timeline.marks.filter { !$0.extended }.map { Event(ns: $0.ns, tid: $0.tid, threadCpuNs: $0.threadCpuNs) }
        for span in timeline.spans where span.extended != true {
            events.append(Event(ns: span.beginNs, tid: span.tid, threadCpuNs: span.beginThreadCpuNs))
            if !span.unfinished { events.append(Event(ns: span.endNs, tid: span.endTid, threadCpuNs: span.endThreadCpuNs)) }
        }
        if let ready = timeline.launch.readyNs, let tid = timeline.launch.readyTid { events.append(Event(ns: ready, tid: tid)) }
        let segments = Dictionary(grouping: timeline.watch?.segments ?? [], by: \.tid)
        let looks = Dictionary((timeline.watch?.threads ?? []).map { ($0.tid, FirstLook(ns: $0.firstNs, cpuNs: $0.cpuBeforeNs)) },
                               uniquingKeysWith: { first, _ in first })
        self.init(mainTid: timeline.process.pid, from: timeline.launch.mainNs, to: timeline.launch.endNs,
                  events: events, segments: segments, firstLooks: looks)
    }
}
