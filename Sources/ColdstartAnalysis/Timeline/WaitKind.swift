import Foundation

/// What a thread's stretch of time (a watcher segment) meant for the launch
/// when that thread was on the critical path.
enum WaitKind: String, Sendable, Codable, CaseIterable {
    /// Runnable: on a CPU, or waiting for one.
    case running
    /// Stuck in a call while running the launch's code: a synchronous read,
    /// a lock, a sleep on the main actor — the classic async start-up mistake.
    case blocked
    /// A dispatch worker with nothing to run: the launch was awaiting (a
    /// timer, I/O done elsewhere, another task).
    case idle
    /// The process's first thread parked in `dispatch_main()`
    /// (`rt_sigsuspend`): an async main's first await moved the main actor
    /// to dispatch workers. Never a cause.
    case parked

    /// Frames of code that runs a job (a Swift task's partial function or a
    /// dispatch block): a thread blocked with one on its stack was doing work.
    static let jobFrames: Set<String> = [
        "swift_job_run", "_dispatch_continuation_pop", "_dispatch_lane_invoke", "_dispatch_lane_serial_drain",
        "_dispatch_client_callout", "_dispatch_call_block_and_release", "_dispatch_async_redirect_invoke",
        "_dispatch_main_queue_drain", "_dispatch_main_queue_callback_4CF",
    ]
    /// A dispatch worker's own loop: blocked here with no job, it is idle.
    static let workerLoops: Set<String> = ["_dispatch_worker_thread", "_dispatch_mgr_thread", "_dispatch_root_queue_drain"]
    /// `dispatch_main()` parking the first thread.
    static let parking: Set<String> = ["_dispatch_sigsuspend", "_dispatch_sig_thread"]

    /// Classifies one segment of thread `segment.tid`. `stack` is the
    /// segment's blocked stack as function names, leaf first (nil when the
    /// watcher did not unwind it); `isDispatchWorker` says whether the
    /// thread's name is a dispatch queue's.
    static func of(_ segment: Timeline.Segment, stack: [String]?, isMainThread: Bool,
                           isDispatchWorker: Bool) -> WaitKind {
        guard segment.cause != .running else { return .running }
        if let stack, !stack.isEmpty {
            if stack.contains(where: parking.contains) { return .parked }
            if !stack.contains(where: jobFrames.contains), stack.contains(where: workerLoops.contains) { return .idle }
            return .blocked
        }
        // No stack (the watcher unwinds one block of a thread other than
        // main per look): judge by the call.
        if isMainThread, segment.syscall == "rt_sigsuspend" { return .parked }
        if isDispatchWorker, segment.cause == .lock || segment.cause == .events { return .idle }
        return .blocked
    }
}
