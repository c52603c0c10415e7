// A launch with THREADS threads parked on a condition variable while the main
// thread sleeps for MS milliseconds, then ready(): what the off-CPU watcher
// costs per watched thread (scripts/bench-watcher.sh).
//
//     ParkedThreads THREADS MS
import Coldstart
import Foundation

let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
guard arguments.count == 2, arguments[0] >= 0, arguments[1] >= 0 else {
    FileHandle.standardError.write(Data("usage: ParkedThreads THREADS MS\n".utf8))
    exit(2)
}
let release = NSCondition()
var released = false
for _ in 0..<arguments[0] {
    Thread {
        release.lock()
        while !released { release.wait() }
        release.unlock()
    }.start()
}
usleep(UInt32(arguments[1] * 1000))
Coldstart.ready()
release.lock()
released = true
release.broadcast()
release.unlock()
