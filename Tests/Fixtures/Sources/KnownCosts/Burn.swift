import Glibc

func threadCPUNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// The CPU time `body` took on this thread, in nanoseconds.
func measure(_ body: () -> Void) -> UInt64 {
    let start = threadCPUNanoseconds()
    body()
    return threadCPUNanoseconds() - start
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
