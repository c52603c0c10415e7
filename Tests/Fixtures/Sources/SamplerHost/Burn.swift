import Glibc

/// This thread's CPU time, in nanoseconds.
func threadCPUNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// CLOCK_MONOTONIC, in nanoseconds.
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

nonisolated(unsafe) var burnSink: UInt64 = 0

/// Burns `milliseconds` of this thread's CPU time in user code.
@inline(never)
func burnCPU(milliseconds: UInt64) {
    let start = threadCPUNanoseconds()
    var x = burnSink
    while threadCPUNanoseconds() - start < milliseconds * 1_000_000 {
        // A plain loop, no Range iterator: in a debug build it stays in this
        // function. Reading the CPU clock is a system call: not too often.
        var i = 0
        while i < 200_000 {
            x = x &* 6364136223846793005 &+ 1442695040888963407
            i &+= 1
        }
    }
    burnSink = x
}

/// Calls itself `depth` times, then burns: a stack `depth` frames deeper.
@inline(never)
func burnAtDepth(_ depth: Int, milliseconds: UInt64) {
    if depth <= 0 {
        burnCPU(milliseconds: milliseconds)
    } else {
        burnAtDepth(depth - 1, milliseconds: milliseconds)
    }
    burnSink &+= 1   // not a tail call: every level keeps its frame
}

/// Starts a POSIX thread running `body`.
func startThread(_ body: @escaping () -> Void) -> pthread_t {
    final class Box { let body: () -> Void; init(_ body: @escaping () -> Void) { self.body = body } }
    var thread = pthread_t()
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    let rc = pthread_create(&thread, nil, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        box.body()
        return nil
    }, box)
    precondition(rc == 0, "pthread_create failed")
    return thread
}
