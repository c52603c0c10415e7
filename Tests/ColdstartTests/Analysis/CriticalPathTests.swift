@testable import ColdstartAnalysis
import XCTest

/// The launch's critical path and its split into running, waiting for a CPU,
/// blocked and suspended, on hand-made watcher segments shaped like an async
/// main's (issue 11): the first thread parks at the first await and the main
/// actor continues on dispatch workers.
final class CriticalPathTests: XCTestCase {
    private let main = 100, worker = 101, other = 102
    private let ms: Int64 = 1_000_000

    private func segment(_ tid: Int, _ start: Int64, _ end: Int64, _ cause: Timeline.Cause = .running,
                         syscall: String? = nil, run: Int64 = 0, wait: Int64 = 0, stack: Int? = nil) -> Timeline.Segment {
        Timeline.Segment(tid: tid, startNs: start * ms, endNs: end * ms, state: cause == .running ? "R" : "S",
                         cause: cause, syscall: syscall, runNs: UInt64(run * ms), waitNs: UInt64(wait * ms),
                         minorFaults: 0, majorFaults: 0, path: nil, stack: stack, args: [])
    }

    private func events(_ list: [(Int64, Int)]) -> [CriticalPath.Event] {
        list.map { CriticalPath.Event(ns: $0.0 * ms, tid: $0.1) }
    }

    private func piecesInMs(_ path: CriticalPath) -> [[Int64]] {
        path.pieces.map { [Int64($0.tid), $0.startNs / ms, $0.endNs / ms] }
    }

    func testWithoutEventsOnOtherThreadsThePathIsTheMainThread() {
        let path = CriticalPath(mainTid: main, from: 10 * ms, to: 50 * ms, events: events([(20, main), (30, main)]))
        XCTAssertEqual(piecesInMs(path), [[100, 10, 50]])
        XCTAssertEqual(path.thread(at: 49 * ms), main)
        XCTAssertNil(path.thread(at: 50 * ms), "the path ends at the launch's end")
        XCTAssertNil(path.thread(at: 9 * ms), "and starts at main")
    }

    func testWorkMovesWhenTheFirstThreadParks() {
        // main begins a span at 20, parks at 22 (dispatch_main); the worker,
        // idle until 60, ends the span at 61 and marks at 80.
        let segments: [Int: [Timeline.Segment]] = [
            main: [segment(main, 10, 22, run: 12), segment(main, 22, 100, .other, syscall: "rt_sigsuspend")],
            worker: [segment(worker, 15, 60, .lock, syscall: "futex"), segment(worker, 60, 100, run: 40)],
        ]
        let path = CriticalPath(mainTid: main, from: 10 * ms, to: 90 * ms,
                                events: events([(20, main), (61, worker), (80, worker)]), segments: segments)
        XCTAssertEqual(piecesInMs(path), [[100, 10, 22], [101, 22, 90]])
    }

    func testWorkMovesWhenTheNewThreadWokeIfTheOldOneKeptRunning() {
        // The old thread went on running other work: the new one took over when it woke.
        let segments: [Int: [Timeline.Segment]] = [
            main: [segment(main, 0, 10, run: 10), segment(main, 10, 100, .lock, syscall: "futex")],
            worker: [segment(worker, 0, 100, run: 100)],
            other: [segment(other, 0, 40, .lock, syscall: "futex"), segment(other, 40, 100, run: 60)],
        ]
        let path = CriticalPath(mainTid: main, from: 0, to: 100 * ms,
                                events: events([(10, worker), (50, other)]), segments: segments)
        XCTAssertEqual(piecesInMs(path), [[100, 0, 10], [101, 10, 40], [102, 40, 100]])
    }

    func testAWatcherStartedAfterTheHandoverStillPlacesItByTheOldThreadsCPU() {
        // main begins a span at 20 with 5 ms of CPU; a loaded machine starts
        // the watcher at 70, after the worker ended the span at 61, and it
        // finds main parked with 7 ms of CPU: main left the path at 22.
        let segments: [Int: [Timeline.Segment]] = [
            main: [segment(main, 70, 100, .other, syscall: "rt_sigsuspend")],
            worker: [segment(worker, 70, 100, run: 30)],
        ]
        let looks = [main: CriticalPath.FirstLook(ns: 70 * ms, cpuNs: UInt64(7 * ms)),
                     worker: CriticalPath.FirstLook(ns: 70 * ms, cpuNs: UInt64(1 * ms))]
        let begin = CriticalPath.Event(ns: 20 * ms, tid: main, threadCpuNs: UInt64(5 * ms))
        let end = CriticalPath.Event(ns: 61 * ms, tid: worker, threadCpuNs: UInt64(ms / 2))
        let path = CriticalPath(mainTid: main, from: 10 * ms, to: 90 * ms, events: [begin, end],
                                segments: segments, firstLooks: looks)
        XCTAssertEqual(piecesInMs(path), [[100, 10, 22], [101, 22, 90]])
        // A span over [20, 61) therefore ran on both threads.
        XCTAssertEqual(Set(path.pieces(from: 20 * ms, to: 61 * ms).map(\.tid)), [main, worker])
    }

    func testWithoutSegmentsWorkMovesAtTheNewThreadsFirstEvent() {
        let path = CriticalPath(mainTid: main, from: 0, to: 100 * ms, events: events([(30, worker), (60, main), (70, main)]))
        XCTAssertEqual(piecesInMs(path), [[100, 0, 30], [101, 30, 60], [100, 60, 100]])
    }

    func testEventsOutsideTheLaunchAreIgnored() {
        let path = CriticalPath(mainTid: main, from: 10 * ms, to: 50 * ms, events: events([(5, worker), (60, worker)]))
        XCTAssertEqual(piecesInMs(path), [[100, 10, 50]])
        XCTAssertEqual(CriticalPath(mainTid: main, from: 10 * ms, to: 10 * ms, events: []).pieces, [])
    }

    // MARK: - What a blocked stretch meant

    func testParkedFirstThreadIdleWorkerAndBlockedJobAreToldApartByTheirStacks() {
        let parked = ["__sigsuspend", "_dispatch_sigsuspend", "_dispatch_sig_thread", "__libc_start_call_main", "_start"]
        let idle = ["__futex_abstimed_wait_common", "_dispatch_sema4_timedwait", "_dispatch_semaphore_wait_slow",
                    "_dispatch_worker_thread", "start_thread", "clone3"]
        let blockedInJob = ["read", "App.LateFIFO.readBlocking() -> Double", "swift_job_run",
                            "_dispatch_lane_serial_drain", "_dispatch_worker_thread", "start_thread"]
        let semaphoreInMain = ["__futex_abstimed_wait_common", "_dispatch_semaphore_wait_slow", "App.startAndWait()",
                               "swift_job_run", "App_main", "__libc_start_main"]
        let sigsuspend = segment(main, 0, 10, .other, syscall: "rt_sigsuspend")
        let futex = segment(worker, 0, 10, .lock, syscall: "futex")
        let read = segment(worker, 0, 10, .fileRead, syscall: "read")
        XCTAssertEqual(WaitKind.of(sigsuspend, stack: parked, isMainThread: true, isDispatchWorker: false), .parked)
        XCTAssertEqual(WaitKind.of(futex, stack: idle, isMainThread: false, isDispatchWorker: true), .idle)
        XCTAssertEqual(WaitKind.of(read, stack: blockedInJob, isMainThread: false, isDispatchWorker: true), .blocked)
        XCTAssertEqual(WaitKind.of(futex, stack: semaphoreInMain, isMainThread: true, isDispatchWorker: false), .blocked,
                       "a synchronous main waiting on a semaphore is blocked, not idle")
        XCTAssertEqual(WaitKind.of(segment(worker, 0, 10, run: 10), stack: nil, isMainThread: false, isDispatchWorker: true), .running)
    }

    func testWithoutAStackTheCallDecides() {
        let futex = segment(worker, 0, 10, .lock, syscall: "futex")
        XCTAssertEqual(WaitKind.of(futex, stack: nil, isMainThread: false, isDispatchWorker: true), .idle)
        XCTAssertEqual(WaitKind.of(futex, stack: nil, isMainThread: false, isDispatchWorker: false), .blocked)
        XCTAssertEqual(WaitKind.of(segment(worker, 0, 10, .fileRead, syscall: "read"), stack: nil,
                                   isMainThread: false, isDispatchWorker: true), .blocked)
        XCTAssertEqual(WaitKind.of(segment(main, 0, 10, .other, syscall: "rt_sigsuspend"), stack: nil,
                                   isMainThread: true, isDispatchWorker: false), .parked)
    }

    // MARK: - The split

    /// main runs 10→22 then parks; a worker (born at 30) idles until 60 — a
    /// sleep — then runs 60→80 (15 ms on a CPU, 5 queued), reads a file
    /// 80→95, and runs to 100. Another worker burns 20 ms of CPU in 30→50.
    private func asyncLaunch() -> (CriticalPath, [Int: [Timeline.Segment]]) {
        let segments: [Int: [Timeline.Segment]] = [
            main: [segment(main, 10, 22, run: 12), segment(main, 22, 100, .other, syscall: "rt_sigsuspend", stack: 0)],
            worker: [segment(worker, 30, 60, .lock, syscall: "futex", stack: 1), segment(worker, 60, 80, run: 15, wait: 5),
                     segment(worker, 80, 95, .fileRead, syscall: "read", stack: 2), segment(worker, 95, 100, run: 5)],
            other: [segment(other, 30, 50, run: 20), segment(other, 50, 100, .lock, syscall: "futex", stack: 1)],
        ]
        let path = CriticalPath(mainTid: main, from: 10 * ms, to: 100 * ms,
                                events: events([(20, main), (61, worker), (99, worker)]), segments: segments)
        return (path, segments)
    }

    private func kind(_ segment: Timeline.Segment) -> WaitKind {
        let stacks: [Int: WaitKind] = [0: .parked, 1: .idle, 2: .blocked]
        return segment.cause == .running ? .running : segment.stack.flatMap { stacks[$0] } ?? .blocked
    }

    func testTheSplitFollowsThePathAndNeverBlamesTheParkedThread() {
        let (path, segments) = asyncLaunch()
        XCTAssertEqual(piecesInMs(path), [[100, 10, 22], [101, 22, 100]])
        let split = CriticalPathSplit(path: path, from: 10 * ms, to: 100 * ms, mainTid: main,
                                      watched: (0, 200 * ms), segments: segments, kind: kind)
        XCTAssertEqual(split.wallNs / 1e6, 90)
        XCTAssertEqual(split.runningNs / 1e6, 12 + 15 + 5)
        XCTAssertEqual(split.runQueueNs / 1e6, 5)
        XCTAssertEqual(split.blockedNs / 1e6, 15, "the read, and nothing of rt_sigsuspend")
        XCTAssertEqual(split.blocks.map(\.segment.syscall), ["read"])
        XCTAssertEqual(split.suspendedNs / 1e6, 8 + 30, "no worker yet (22→30), then idle (30→60)")
        XCTAssertEqual(split.runningNs + split.runQueueNs + split.blockedNs + split.suspendedNs, split.wallNs)
        XCTAssertEqual(split.othersCPUWhileSuspendedNs / 1e6, 20, accuracy: 1e-9, "the other worker ran while the path awaited")
        XCTAssertEqual(split.mainParkedNs / 1e6, 78)
        XCTAssertEqual(split.threads.map(\.tid), [main, worker])
    }

    func testAPhaseBeforeMainIsTheMainThreadsAndTimeOutsideTheWatchIsNotWatched() {
        let (path, segments) = asyncLaunch()
        let early = CriticalPathSplit(path: path, from: 0, to: 10 * ms, mainTid: main, watched: (5 * ms, 200 * ms),
                                      segments: segments, kind: kind)
        XCTAssertEqual(early.threads.map(\.tid), [main])
        XCTAssertEqual(early.notWatchedNs / 1e6, 5)
        XCTAssertEqual(early.suspendedNs / 1e6, 5, "watched, but the main thread has no segment there")
        let unwatched = CriticalPathSplit(path: path, from: 60 * ms, to: 100 * ms, mainTid: main, watched: nil,
                                          segments: segments, kind: kind)
        XCTAssertEqual(unwatched.notWatchedNs, unwatched.wallNs)
        XCTAssertEqual(unwatched.runningNs, 0)
    }
}

extension CriticalPathTests {
    func testARunnableSegmentsCPUIsSharedByWhereItsSamplesFell() {
        // One runnable stretch 0→100 with 60 ms of CPU: 10 samples in 0→50
        // (light child tasks, mostly queued), 50 in 50→100 (a burn).
        let segments = [worker: [segment(worker, 0, 100, run: 60, wait: 40)]]
        let samples = [worker: (0..<10).map { Int64($0) * 5 * ms } + (0..<50).map { 50 * ms + Int64($0) * ms }]
        let path = CriticalPath(mainTid: worker, from: 0, to: 100 * ms, events: [])
        let second = CriticalPathSplit(path: path, from: 50 * ms, to: 100 * ms, mainTid: worker, watched: (0, 100 * ms),
                                       segments: segments, cpuSamples: samples, kind: kind)
        XCTAssertEqual(second.runningNs / 1e6, 50, accuracy: 1e-9, "50 of the 60 samples")
        XCTAssertEqual(second.runQueueNs / 1e6, 0, accuracy: 1e-9, "the runnable half (50 ms) less its CPU")
        let byWall = CriticalPathSplit(path: path, from: 50 * ms, to: 100 * ms, mainTid: worker, watched: (0, 100 * ms),
                                       segments: segments, kind: kind)
        XCTAssertEqual(byWall.runningNs / 1e6, 30, accuracy: 1e-9, "without samples, by wall time")
        let few = [worker: [10 * ms, 60 * ms, 70 * ms]]
        let fallback = CriticalPathSplit(path: path, from: 50 * ms, to: 100 * ms, mainTid: worker, watched: (0, 100 * ms),
                                         segments: segments, cpuSamples: few, kind: kind)
        XCTAssertEqual(fallback.runningNs / 1e6, 30, accuracy: 1e-9, "three samples are too few to go by")
    }
}

extension CriticalPathTests {
    func testAStretchBetweenTheThreadsOwnEventsGetsItsExactCPU() {
        // The segment says 60 ms of CPU over 0→100 (by wall: 30 in 50→100);
        // the thread's own clock at its marks says 45 ms in 50→100.
        let segments = [worker: [segment(worker, 0, 100, run: 60, wait: 40)]]
        let readings = [worker: [CriticalPathSplit.CPUReading(ns: 50 * ms, cpuNs: UInt64(10 * ms)),
                                 CriticalPathSplit.CPUReading(ns: 100 * ms, cpuNs: UInt64(55 * ms))]]
        let path = CriticalPath(mainTid: worker, from: 0, to: 100 * ms, events: [])
        let split = CriticalPathSplit(path: path, from: 50 * ms, to: 100 * ms, mainTid: worker, watched: (0, 100 * ms),
                                      segments: segments, threadCPU: readings, kind: kind)
        XCTAssertEqual(split.runningNs / 1e6, 45, accuracy: 1e-9)
        XCTAssertEqual(split.runQueueNs / 1e6, 5, accuracy: 1e-9, "the runnable 50 ms less the exact CPU")
        let unbounded = CriticalPathSplit(path: path, from: 40 * ms, to: 100 * ms, mainTid: worker, watched: (0, 100 * ms),
                                          segments: segments, threadCPU: readings, kind: kind)
        XCTAssertEqual(unbounded.runningNs / 1e6, 36, accuracy: 1e-9, "no event at 40 ms: by wall time")
    }
}

extension CriticalPathTests {
    func testTheWorkLeavesAThreadNoEarlierThanItsLastEvent() {
        // The worker marks at 30 and 60, idles from 40 (by the watcher's
        // look) — an imprecise boundary — and main calls ready() at 70.
        let segments: [Int: [Timeline.Segment]] = [
            main: [segment(main, 0, 20, run: 20), segment(main, 20, 100, .lock, syscall: "futex")],
            worker: [segment(worker, 10, 40, run: 30), segment(worker, 40, 100, .lock, syscall: "futex")],
        ]
        let path = CriticalPath(mainTid: main, from: 0, to: 100 * ms,
                                events: events([(30, worker), (60, worker), (70, main)]), segments: segments)
        XCTAssertEqual(piecesInMs(path), [[100, 0, 20], [101, 20, 60], [100, 60, 100]])
    }
}
