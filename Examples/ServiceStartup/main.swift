// A service start-up in miniature, instrumented with Coldstart: it reads a
// config file, opens a store, warms a cache through a lazily initialised
// global, and declares itself ready to serve.
//
//     COLDSTART=1 swift run ServiceStartup
//
// Flags for Coldstart's own tests: `--wait-before-ready` blocks before ready()
// (to be stopped by a signal), `--fail-before-ready` exits with status 3,
// `--no-ready` never calls ready(), like a command-line tool,
// `--crash-before-ready` dies in fatalError (SIGILL, no timeline),
// `--keep-serving` stays up after the first response like a real service, and
// SERVICE_EXTRA_OPEN_MS=N sleeps N ms inside "open store" and
// SERVICE_BUSY_OPEN_MS=N spins the CPU for N ms there (regressions for
// `coldstart compare` to find).
import Coldstart
import Foundation

let arguments = Set(CommandLine.arguments.dropFirst())

let config = Coldstart.span("read config") { ServiceConfig.load() }
Coldstart.mark("config loaded", isPhaseBoundary: true)

let store = Coldstart.span("open store") {
    if let extra = ProcessInfo.processInfo.environment["SERVICE_EXTRA_OPEN_MS"].flatMap(UInt32.init) { usleep(extra * 1000) }
    if let busy = ProcessInfo.processInfo.environment["SERVICE_BUSY_OPEN_MS"].flatMap(Double.init) {
        let end = Date().addingTimeInterval(busy / 1000)
        while Date() < end {}
    }
    return Store.open(recordCount: config.recordCount)
}
Coldstart.mark("store opened", isPhaseBoundary: true)

if arguments.contains("--fail-before-ready") {
    FileHandle.standardError.write(Data("service: cannot bind port \(config.port)\n".utf8))
    exit(3)
}
if arguments.contains("--crash-before-ready") {
    fatalError("service: simulated crash while starting")
}
if arguments.contains("--wait-before-ready") {
    print("waiting before ready", terminator: "\n")
    fflush(stdout)
    while true { sleep(1) }
}

let warmed = Coldstart.span("warm cache") { store.warm(using: routingTable) }
if !arguments.contains("--no-ready") { Coldstart.ready() }
print("ready to serve on port \(config.port): \(store.recordCount) records, \(warmed) cache entries")

// The first request completes after ready(): an extended mark.
let response = store.lookup(key: "record-42")
Coldstart.mark("first request served")
print("first response: \(response)")
if arguments.contains("--keep-serving") {
    fflush(stdout)
    while true { sleep(1) }
}
