// Built by StaticExecutableTests with `swiftc -static-executable` (not a
// SwiftPM target): burns 200 ms of CPU, then ready().
import Coldstart
import Glibc

@inline(never) func burn(_ ms: UInt64) {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    let end = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec) + ms * 1_000_000
    var x: UInt64 = 1
    repeat {
        for i in 0..<10_000 { x = x &* 6364136223846793005 &+ UInt64(i) }
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    } while UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec) < end && x != 0
}
burn(200)
Coldstart.ready()
print("static done")
