// A service that starts from an `async` main, as most Swift services on Linux
// do — for the critical-path tests (issue 11). After its first await the
// process's first thread parks in dispatch_main (rt_sigsuspend) and the main
// actor runs on a dispatch worker. Phases (marks), each printing its own
// measured figure on stdout as `name ms`:
//
//   "main → config loaded"           awaits a 40 ms Task.sleep (span across the await)  `sleep`
//   "config loaded → store opened"   an actor opens a store with 4 TaskGroup children    `group`
//   "store opened → warmed up"       80 ms of CPU on the main actor                       `burn` (CPU), `burn-wall`
//   "warmed up → settings read"      a blocking read of a FIFO on the main actor, ~35 ms  `read`
//
// With --sync-semaphore it starts the same work the other common way: a
// synchronous main starts a Task and blocks on a semaphore until it is done
// (the work then runs on the cooperative pool, never on the main thread).
//
//     AsyncService FIFO_PATH [--sync-semaphore]
import Coldstart
import Foundation

let arguments = CommandLine.arguments.dropFirst()
guard let fifoPath = arguments.first(where: { !$0.hasPrefix("--") }),
      arguments.allSatisfy({ !$0.hasPrefix("--") || $0 == "--sync-semaphore" })
else { fail("usage: AsyncService FIFO_PATH [--sync-semaphore]") }
let fifo = LateFIFO(path: fifoPath)

if arguments.contains("--sync-semaphore") {
    // Nothing above or here awaits, so the first thread runs this as a
    // plain synchronous main would: it blocks in the semaphore's futex.
    startAndWait(fifo: fifo)
    Coldstart.ready()
    exit(0)
}

await launch(fifo: fifo)
Coldstart.ready()
