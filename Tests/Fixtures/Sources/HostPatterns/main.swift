// Host patterns Coldstart must leave exactly as they are without it (issue 14):
// each mode does what a real program does with signals, threads, descriptors
// or its own image, and prints what it observed on stdout.
//
//     HostPatterns term-chain before|after  its SIGTERM handler chains to the previous one; kill itself; its
//                                           CPU affinity after the handler
//     HostPatterns int-if-default           after ready(): install a SIGINT handler only over SIG_DFL; raise SIGINT
//     HostPatterns int-disposition          SIGINT's action at main ("ignored" when the parent ignored it)
//     HostPatterns prof-handler             its own SIGPROF handler while it burns 300 ms; how many it got
//     HostPatterns urg-handler              its own SIGURG handler while it burns 300 ms; how many it got
//     HostPatterns block-reset              block SIGPROF and SIGURG, burn, reset both to default, unblock
//     HostPatterns sigwait                  a thread with every signal blocked burns, then sigtimedwait(all, 200 ms)
//     HostPatterns dispatch-mask MODE       a thread with libdispatch's signal mask (all blocked but SIGPROF and the
//                                           fault signals) burns; MODE: plain; prof (the host's SIGPROF handler first);
//                                           late-prof (installed while it burns); busy-ready (ready() while it burns)
//     HostPatterns short-threads N          N threads living ~15 ms each, 50 at a time; its open descriptors after
//     HostPatterns never-ready MS           burn and sleep MS ms without ready(), exit 0
//     HostPatterns exec-self                ready(), then exec itself ("second" image: ready(), exit)
//     HostPatterns daemonize PATH           fork before ready(); the parent exits, the child calls ready() and writes PATH
//     HostPatterns wait-file PATH           ready() never; exit 0 once PATH exists
//     HostPatterns crash                    a sleeping thread, then a Swift runtime crash
//     HostPatterns rss                      resident memory (kB) before ready() and the lowest within 5 s after
//     HostPatterns wait-children            waitpid(-1) while it burns, then its children left 300 ms after ready()
//     HostPatterns busy N                   N threads burning CPU until it is killed (never ready())
//     HostPatterns relay N                  N threads one after another, each started as the previous one ended
//                                           (the thread count stays the same), each named relay-I, sleeping 40 ms;
//                                           ready(); their tids
//     HostPatterns utf8-names DIR           strings that are not clean UTF-8 (issue 23, item 3): threads named
//                                           "aaaaaaaaaaaaaaé" (the kernel cuts it inside é) and "caf\xE9" (Latin-1),
//                                           a mark of 200 "é" (400 bytes), and threads blocked opening FIFOs in
//                                           DIR: one at a 249-byte path with an é at bytes 239-240, one named
//                                           "caf\xE9-fifo"; ready()
//     HostPatterns exit-race N              N threads call exit(3) at the same moment, before ready()
//     HostPatterns drop-user UID ready|exit a daemon started as root: burns, drops to user and group UID (setgid,
//                                           setuid), burns, then ready() (and exits 300 ms later) or exits
//     HostPatterns open-files N [early]     N threads asleep (Coldstart samples and watches them), then as many
//                                           files as RLIMIT_NOFILE lets it open: how many; ready(). early: opens
//                                           them first thing in main and holds them 300 ms, then N threads, ready()
//     HostPatterns close-all MS             what daemons do first: closes descriptors 3-1023, again and again for MS
//                                           ms from the start of main (the watcher's first look falls in it); ready()
//     HostPatterns log-daemon DIR           a daemon's start: burn 150 ms, close fds 3–1023, open 4 log files in DIR,
//                                           write 20 rounds of lines to them while 2 threads burn; the lines read back
//     HostPatterns stack-edge BYTES         a thread burns 100 ms with only BYTES of stack left below its frame
//     HostPatterns fork-fds MS              forks a child first thing in main and another after MS ms of CPU (both
//                                           before ready()); each child counts the perf events and /proc files
//                                           among its descriptors; prints the parent's and each child's counts
//     HostPatterns span-after-ready         ready(), then at once a span of 50 ms of CPU (the report's own advice:
//                                           "touch it after ready()"), open while the timeline is written
//     HostPatterns fsize BYTES              lowers its own file size limit (RLIMIT_FSIZE) to BYTES, burns 30 ms,
//                                           writes "written" to stdout, exits 0 without ready()
//     HostPatterns main-exit MS             a thread that burns MS ms then prints "thread done"; the main thread
//                                           ends at once with pthread_exit (the process exits 0 after the thread)
//     HostPatterns unshare user|mnt|seccomp a sandbox's start: burns 20 ms, then unshare(CLONE_NEWUSER), or setns into
//                                           its own mount namespace (both need a single-threaded process), or a seccomp
//                                           allow-list on every thread (TSYNC; any other call kills); the result
//     HostPatterns supervise                a supervisor's start: forks 2 workers (exiting after 30 and 60 ms),
//                                           reaps with waitpid(-1, __WALL) until ECHILD: how many were its own
//     HostPatterns sleeps                   20 sleeps of 5 ms on the main thread (nanosleep) while 2 threads burn;
//                                           how many were cut short (EINTR) or ended early
//     HostPatterns ns-threads MS            2 threads burn MS ms of CPU while the main thread does; ready(); the
//                                           three tids as this pid namespace numbers them (NSpid's last id: /proc
//                                           may be a parent namespace's, as under `unshare -p -f`)
import Coldstart
import Glibc
import StackEdge

let arguments = Array(CommandLine.arguments.dropFirst())
let mode = arguments.first ?? ""

func burnCPU(milliseconds: UInt64) {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    let end = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec) + milliseconds * 1_000_000
    var x: UInt64 = 1
    repeat {
        for i in 0..<10_000 { x = x &* 6364136223846793005 &+ UInt64(i) }
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    } while UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec) < end && x != 0
}

func handlerAddress(_ signal: Int32) -> Int {
    var action = sigaction()
    sigaction(signal, nil, &action)
    return unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self)
}

func install(_ signal: Int32, _ handler: @escaping @convention(c) (Int32) -> Void, previous: UnsafeMutablePointer<sigaction>? = nil) {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = handler
    sigemptyset(&action.sa_mask)
    sigaction(signal, &action, previous)
}

func startThread(_ body: @escaping () -> Void) -> pthread_t {
    final class Box { let body: () -> Void; init(_ body: @escaping () -> Void) { self.body = body } }
    var thread = pthread_t()
    pthread_create(&thread, nil, { raw in
        Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
        return nil
    }, Unmanaged.passRetained(Box(body)).toOpaque())
    return thread
}

/// The line of the calling thread's /proc status that begins with `key`, or "".
func threadStatus(_ key: String) -> String {
    let fd = open("/proc/thread-self/status", O_RDONLY)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: 8192)
    let count = read(fd, &bytes, bytes.count)
    let text = String(decoding: bytes.prefix(max(0, count)), as: UTF8.self)
    return text.split(separator: "\n").first { $0.hasPrefix(key) }.map(String.init) ?? ""
}

/// The CPUs the calling thread may run on ("Cpus_allowed_list: 0-1").
func cpuAffinity() -> String { threadStatus("Cpus_allowed_list:") }

nonisolated(unsafe) var previousTerm = sigaction()
nonisolated(unsafe) var handled: Int32 = 0
nonisolated(unsafe) var signalCount: Int32 = 0

switch mode {
case "log-daemon":
    let directory = arguments.count > 1 ? arguments[1] : "/tmp"
    burnCPU(milliseconds: 150)
    for fd in Int32(3)..<1024 { close(fd) }
    let paths = (0..<4).map { "\(directory)/log\($0).txt" }
    let logs = paths.map { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600) }
    nonisolated(unsafe) var stop: Int32 = 0
    let burners = (0..<2).map { _ in startThread { while stop == 0 { burnCPU(milliseconds: 1) } } }
    var failed = 0
    for round in 0..<20 {
        for (i, fd) in logs.enumerated() {
            let line = Array("log \(i) round \(round)\n".utf8)
            if write(fd, line, line.count) != line.count { failed += 1 }
        }
        burnCPU(milliseconds: 5)
    }
    stop = 1
    for burner in burners { pthread_join(burner, nil) }
    logs.forEach { close($0) }
    Coldstart.ready()
    var lines = 0
    for path in paths {
        let fd = open(path, O_RDONLY)
        var bytes = [UInt8](repeating: 0, count: 65536)
        let count = fd >= 0 ? read(fd, &bytes, bytes.count) : 0
        if fd >= 0 { close(fd) }
        lines += bytes.prefix(max(0, count)).filter { $0 == 10 }.count
    }
    print("lines: \(lines) of 80, failed writes: \(failed)")

case "stack-edge":
    let left = arguments.count > 1 ? Int(arguments[1]) ?? 4096 : 4096
    print(stack_edge_burn(left, 100) == 0 ? "survived" : "no thread")

case "sleeps":
    nonisolated(unsafe) var stop: Int32 = 0
    let burners = (0..<2).map { _ in startThread { while stop == 0 { burnCPU(milliseconds: 1) } } }
    var short = 0
    for _ in 0..<20 {
        var request = timespec(tv_sec: 0, tv_nsec: 5_000_000)
        var start = timespec(), end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        let rc = nanosleep(&request, nil)
        clock_gettime(CLOCK_MONOTONIC, &end)
        let ns = (end.tv_sec - start.tv_sec) * 1_000_000_000 + (end.tv_nsec - start.tv_nsec)
        if rc != 0 || ns < 5_000_000 { short += 1 }
        burnCPU(milliseconds: 2)
    }
    stop = 1
    for burner in burners { pthread_join(burner, nil) }
    Coldstart.ready()
    print("sleeps cut short: \(short)")

case "ns-threads":
    let milliseconds = arguments.count > 1 ? UInt64(arguments[1]) ?? 100 : 100
    /// The calling thread's id in its own pid namespace: the last id of
    /// NSpid (gettid is not in Swift's Glibc module, and /proc/thread-self
    /// names the thread as /proc's namespace numbers it).
    func ownTid() -> String {
        threadStatus("NSpid:").split(whereSeparator: { $0 == "\t" || $0 == " " }).dropFirst().last.map(String.init) ?? "?"
    }
    nonisolated(unsafe) var tids = ["?", "?"]
    let burners = (0..<2).map { index in startThread { tids[index] = ownTid(); burnCPU(milliseconds: milliseconds) } }
    burnCPU(milliseconds: milliseconds)
    for burner in burners { pthread_join(burner, nil) }
    Coldstart.ready()
    print("tids: \(ownTid()) \(tids.joined(separator: " "))")

case "term-chain":
    let afterReady = arguments.count > 1 && arguments[1] == "after"
    if afterReady { Coldstart.ready() }
    install(SIGTERM, { signal in
        // Graceful shutdown, then "let the previous handler do its part" as
        // many servers and frameworks do.
        let previous = unsafeBitCast(previousTerm.__sigaction_handler.sa_handler, to: Int.self)
        if previous > 1 { previousTerm.__sigaction_handler.sa_handler?(signal) }
        handled = 1
    }, previous: &previousTerm)
    let affinity = cpuAffinity()
    kill(getpid(), SIGTERM)
    for _ in 0..<400 where handled == 0 { usleep(5_000) }
    if !afterReady { Coldstart.ready() }
    print("graceful: \(handled == 1)")
    // The timeline was written on this thread, pinned to one CPU meanwhile.
    print("affinity kept: \(cpuAffinity() == affinity)")
    exit(0)

case "int-if-default":
    Coldstart.ready()
    let wasDefault = handlerAddress(SIGINT) == 0
    if wasDefault { install(SIGINT, { _ in handled = 1 }) }
    raise(SIGINT)
    print("installed: \(wasDefault), handled: \(handled == 1)")
    exit(0)

case "int-disposition":
    let address = handlerAddress(SIGINT)
    Coldstart.ready()
    print(address == 1 ? "ignored" : address == 0 ? "default" : "handled")

case "prof-handler", "urg-handler":
    install(mode == "prof-handler" ? SIGPROF : SIGURG, { _ in signalCount += 1 })
    burnCPU(milliseconds: 300)
    Coldstart.ready()
    print("host handler calls: \(signalCount)")

case "block-reset":
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGPROF)
    sigaddset(&set, SIGURG)
    pthread_sigmask(SIG_BLOCK, &set, nil)
    burnCPU(milliseconds: 100)
    signal(SIGPROF, SIG_DFL)
    signal(SIGURG, SIG_DFL)
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
    burnCPU(milliseconds: 20)
    Coldstart.ready()
    print("alive")

case "sigwait":
    // Created with every signal blocked, like a signal-handling thread.
    var all = sigset_t()
    var old = sigset_t()
    sigfillset(&all)
    pthread_sigmask(SIG_SETMASK, &all, &old)
    var result: Int32 = 0
    let waiter = startThread {
        // Past the first 50 ms of sampling (the kernel's stacks, no signal),
        // so that scans after them see it blocking every signal.
        burnCPU(milliseconds: 120)
        var every = sigset_t()
        sigfillset(&every)
        var timeout = timespec(tv_sec: 0, tv_nsec: 200_000_000)
        let got = sigtimedwait(&every, nil, &timeout)
        result = got < 0 ? -errno : got
    }
    pthread_sigmask(SIG_SETMASK, &old, nil)
    burnCPU(milliseconds: 100)
    pthread_join(waiter, nil)
    Coldstart.ready()
    print(result == -EAGAIN ? "timed out" : "got signal \(result)")

case "dispatch-mask":
    let variant = arguments.count > 1 ? arguments[1] : "plain"
    let countCalls: @convention(c) (Int32) -> Void = { _ in signalCount += 1 }
    if variant == "prof" { install(SIGPROF, countCalls) }
    // libdispatch's _dispatch_sigmask, which its workers are created with.
    var mask = sigset_t()
    var old = sigset_t()
    sigfillset(&mask)
    for kept in [SIGILL, SIGTRAP, SIGFPE, SIGBUS, SIGSEGV, SIGSYS, SIGPIPE, SIGPROF] { sigdelset(&mask, kept) }
    pthread_sigmask(SIG_SETMASK, &mask, &old)
    nonisolated(unsafe) var stop: Int32 = 0
    let worker = startThread {
        if variant == "busy-ready" {
            while stop == 0 { burnCPU(milliseconds: 1) }
        } else {
            burnCPU(milliseconds: 200)
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, nil)
    if variant == "late-prof" {
        // After the first 50 ms of sampling, whose stacks the kernel records
        // without a signal: by then the worker is sampled with SIGPROF.
        usleep(100_000)
        install(SIGPROF, countCalls)
    }
    if variant == "busy-ready" {
        usleep(100_000)
        Coldstart.ready()
        usleep(300_000)   // the timeline is written and SIGPROF given back while it burns
        stop = 1
    }
    pthread_join(worker, nil)
    Coldstart.ready()
    print("alive, host handler calls: \(signalCount)")

case "short-threads":
    var limit = rlimit(rlim_cur: 1024, rlim_max: 1024)
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    let total = arguments.count > 1 ? Int(arguments[1]) ?? 300 : 300
    var started = 0
    while started < total {
        var batch: [pthread_t] = []
        for _ in 0..<min(50, total - started) {
            batch.append(startThread { burnCPU(milliseconds: 2); usleep(15_000) })
        }
        for thread in batch { pthread_join(thread, nil) }
        started += batch.count
        usleep(10_000)   // the scan notices they have ended
    }
    var open = 0
    if let directory = opendir("/proc/self/fd") {
        while readdir(directory) != nil { open += 1 }
        closedir(directory)
    }
    Coldstart.ready()
    print("threads: \(started), open descriptors: \(open - 3)")   // ".", "..", the listing's own

case "never-ready":
    let milliseconds = arguments.count > 1 ? UInt64(arguments[1]) ?? 1000 : 1000
    var elapsed: UInt64 = 0
    while elapsed < milliseconds {
        burnCPU(milliseconds: 5)
        usleep(45_000)
        elapsed += 50
    }
    print("served")

case "exec-self":
    if arguments.count > 1 && arguments[1] == "second" {
        burnCPU(milliseconds: 20)
        Coldstart.ready()
        print("second image")
        exit(0)
    }
    burnCPU(milliseconds: 20)
    Coldstart.ready()
    usleep(200_000)   // the first image's timeline is written by now
    let path = CommandLine.arguments[0]
    var argv: [UnsafeMutablePointer<CChar>?] = [strdup(path), strdup("exec-self"), strdup("second"), nil]
    execv("/proc/self/exe", &argv)
    print("exec failed")
    exit(1)

case "daemonize":
    let marker = arguments.count > 1 ? arguments[1] : "/dev/null"
    burnCPU(milliseconds: 20)
    if fork() != 0 { exit(0) }   // the parent: the launch ends here
    setsid()
    burnCPU(milliseconds: 30)
    Coldstart.mark("daemon mark", isPhaseBoundary: true)
    Coldstart.ready()
    usleep(200_000)
    let fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    close(fd)
    exit(0)

case "wait-file":
    let path = arguments.count > 1 ? arguments[1] : "/nonexistent"
    print("waiting")
    fflush(stdout)
    for _ in 0..<2000 where access(path, F_OK) != 0 { usleep(5_000) }
    print("done")

case "crash":
    _ = startThread { while true { sleep(1) } }
    burnCPU(milliseconds: 20)
    let values: [Int] = []
    print(values[Int(getpid()) % 7 + 1])

case "wait-children":
    // A program that reaps "any child" must never get one of Coldstart's,
    // and none may be left once Coldstart is done.
    burnCPU(milliseconds: 30)
    var status: Int32 = 0
    let waited = waitpid(-1, &status, WNOHANG)
    let waitErrno = errno
    Coldstart.ready()
    usleep(300_000)
    var children = 0
    if let tasks = opendir("/proc/self/task") {
        while let entry = readdir(tasks) {
            let tid = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            guard tid.first?.isNumber == true, let file = fopen("/proc/self/task/\(tid)/children", "r") else { continue }
            var line = [CChar](repeating: 0, count: 256)
            while fgets(&line, 256, file) != nil {
                children += String(cString: line).split(whereSeparator: { $0 == " " || $0 == "\n" }).count
            }
            fclose(file)
        }
        closedir(tasks)
    }
    print("waitpid: \(waited < 0 && waitErrno == ECHILD ? "no child" : "got \(waited)"), children left: \(children)")

case "rss":
    func residentKB() -> Int {
        guard let file = fopen("/proc/self/status", "r") else { return -1 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, 256, file) != nil {
            let text = String(cString: line)
            if text.hasPrefix("VmRSS:") { return Int(text.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1 }
        }
        return -1
    }
    burnCPU(milliseconds: 30)
    usleep(300_000)   // the scan thread faults in what the samples use, and a little ahead
    let before = residentKB()
    Coldstart.ready()
    // The writer runs on its own thread: the lowest figure within 5 s.
    var after = residentKB()
    for _ in 0..<100 where after > before / 2 {
        usleep(50_000)
        after = min(after, residentKB())
    }
    print("rss before: \(before), after: \(after)")

case "busy":
    let count = arguments.count > 1 ? Int(arguments[1]) ?? 8 : 8
    for _ in 0..<count { _ = startThread { while true { burnCPU(milliseconds: 1000) } } }
    print("busy")
    fflush(stdout)
    while true { burnCPU(milliseconds: 1000) }

case "relay":
    let count = arguments.count > 1 ? Int(arguments[1]) ?? 8 : 8
    var tids: [String] = []
    for index in 0..<count {
        var tid: pid_t = 0
        pthread_join(startThread {
            // Its tid and its name through /proc (gettid and
            // pthread_setname_np are not in Swift's Glibc module).
            var link = [CChar](repeating: 0, count: 64)
            _ = readlink("/proc/thread-self", &link, link.count - 1)
            tid = pid_t(String(cString: link).split(separator: "/").last ?? "") ?? 0
            let fd = open("/proc/thread-self/comm", O_WRONLY)
            _ = "relay-\(index)".withCString { write(fd, $0, strlen($0)) }
            close(fd)
            usleep(40_000)
        }, nil)
        tids.append(String(tid))
    }
    Coldstart.ready()
    print("relay tids: \(tids.joined(separator: " "))")

case "utf8-names":
    let directory = arguments.count > 1 ? arguments[1] : "/tmp"
    /// A path of raw bytes (a Swift String cannot hold Latin-1).
    func fifo(_ bytes: [UInt8]) -> [CChar] {
        let path = Array(directory.utf8) + [UInt8(ascii: "/")] + bytes
        var raw = path.map { CChar(bitPattern: $0) }
        raw.append(0)
        unlink(raw)
        mkfifo(raw, 0o600)
        return raw
    }
    let prefix = directory.utf8.count + 1
    let long = fifo([UInt8](repeating: UInt8(ascii: "p"), count: 239 - prefix) + Array("é".utf8)
        + [UInt8](repeating: UInt8(ascii: "q"), count: 8))   // 249 bytes in all
    let latin1 = fifo(Array("caf".utf8) + [0xE9] + Array("-fifo".utf8))
    /// Names the calling thread with raw bytes; the kernel keeps 15.
    func name(_ bytes: [UInt8]) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
    var blocked: [pthread_t] = []
    for (path, threadName) in [(long, Array("aaaaaaaaaaaaaa".utf8) + Array("é".utf8)), (latin1, Array("caf".utf8) + [0xE9])] {
        blocked.append(startThread {
            name(threadName)
            Coldstart.mark("named")
            let fd = open(path, O_RDONLY)   // blocks until the writer below opens it
            var byte: UInt8 = 0
            _ = read(fd, &byte, 1)
            close(fd)
        })
    }
    Coldstart.mark(String(repeating: "é", count: 200))
    usleep(150_000)   // the watcher sees both threads blocked in open
    for path in [long, latin1] {
        let fd = open(path, O_WRONLY)
        var byte: UInt8 = 1
        _ = write(fd, &byte, 1)
        close(fd)
    }
    for thread in blocked { pthread_join(thread, nil) }
    // Alive when the timeline is written, so the writer reads their names.
    let keep = startThread { name(Array("aaaaaaaaaaaaaa".utf8) + Array("é".utf8)); Coldstart.mark("kept"); usleep(2_000_000) }
    _ = keep
    usleep(20_000)
    Coldstart.ready()
    usleep(200_000)
    print("utf8 done")

case "exit-race":
    let count = arguments.count > 1 ? Int(arguments[1]) ?? 3 : 3
    nonisolated(unsafe) let barrier = UnsafeMutablePointer<pthread_barrier_t>.allocate(capacity: 1)
    pthread_barrier_init(barrier, nil, UInt32(count))
    burnCPU(milliseconds: 20)
    for _ in 0..<count {
        _ = startThread {
            pthread_barrier_wait(barrier)   // all released together
            exit(3)
        }
    }
    while true { sleep(1) }

case "close-all":
    let milliseconds = arguments.count > 1 ? UInt64(arguments[1]) ?? 5 : 5
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let end = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec) + milliseconds * 1_000_000
    repeat {
        for fd in Int32(3)..<1024 { close(fd) }
        clock_gettime(CLOCK_MONOTONIC, &now)
    } while UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec) < end
    burnCPU(milliseconds: 20)
    usleep(20_000)
    Coldstart.ready()
    print("closed")

case "drop-user":
    let uid = arguments.count > 1 ? UInt32(arguments[1]) ?? 65534 : 65534
    burnCPU(milliseconds: 30)
    guard setgroups(0, nil) == 0, setgid(uid) == 0, setuid(uid) == 0 else { print("cannot drop to \(uid)"); exit(2) }
    burnCPU(milliseconds: 20)
    Coldstart.mark("dropped", isPhaseBoundary: true)
    if arguments.count > 2 && arguments[2] == "exit" { print("uid \(getuid())"); exit(0) }
    Coldstart.ready()
    usleep(300_000)
    print("uid \(getuid())")

case "open-files":
    let count = arguments.count > 1 ? Int(arguments[1]) ?? 0 : 0
    let early = arguments.count > 2 && arguments[2] == "early"
    func openAll() -> [Int32] {
        var files: [Int32] = []
        while true {
            let fd = open("/dev/null", O_RDONLY)
            if fd < 0 { return files }
            files.append(fd)
        }
    }
    let held = early ? openAll() : []
    if early { burnCPU(milliseconds: 300) }
    for _ in 0..<count { _ = startThread { usleep(1_500_000) } }
    burnCPU(milliseconds: 30)
    usleep(150_000)   // found by the sampler's scan and the watcher
    let files = early ? held : openAll()
    let opened = files.count
    for fd in files { close(fd) }
    Coldstart.ready()
    usleep(100_000)
    print("opened \(opened)")

case "fork-fds":
    // What a forked child inherits: a worker the host forks must get none of
    // Coldstart's perf events (issue 35, item 1) nor its /proc files.
    let milliseconds = arguments.count > 1 ? UInt64(arguments[1]) ?? 30 : 30
    func descriptorKinds() -> (perf: Int, proc: Int) {
        var perf = 0, proc = 0
        guard let directory = opendir("/proc/self/fd") else { return (-1, -1) }
        let own = dirfd(directory)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            guard let fd = Int32(name), fd != own else { continue }
            var target = [CChar](repeating: 0, count: 512)
            let n = readlink("/proc/self/fd/\(name)", &target, 511)
            guard n > 0 else { continue }
            let link = String(cString: target)
            if link == "anon_inode:[perf_event]" { perf += 1 }
            if link.hasPrefix("/proc/") { proc += 1 }
        }
        closedir(directory)
        return (perf, proc)
    }
    func forkAndCount(_ label: String) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { print("\(label): no pipe"); return }
        let parent = descriptorKinds()
        let child = fork()
        if child == 0 {
            close(fds[0])
            let kinds = descriptorKinds()
            var message = Array("\(kinds.perf) \(kinds.proc)".utf8)
            _ = write(fds[1], &message, message.count)
            _exit(0)
        }
        close(fds[1])
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = read(fds[0], &buffer, 64)
        close(fds[0])
        var status: Int32 = 0
        waitpid(child, &status, 0)
        print("\(label): parent perf \(parent.perf) proc \(parent.proc), child perf/proc \(String(decoding: buffer.prefix(max(0, n)), as: UTF8.self))")
    }
    forkAndCount("start")
    burnCPU(milliseconds: milliseconds)
    forkAndCount("later")
    Coldstart.ready()

case "span-after-ready":
    burnCPU(milliseconds: 20)
    Coldstart.ready()
    Coldstart.span("warm caches") { burnCPU(milliseconds: 50) }
    print("done")

case "fsize":
    let bytes = arguments.count > 1 ? UInt(arguments[1]) ?? 4096 : 4096
    var limit = rlimit(rlim_cur: bytes, rlim_max: bytes)
    guard setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit) == 0 else { print("cannot set RLIMIT_FSIZE"); exit(2) }
    burnCPU(milliseconds: 30)
    print("written")

case "main-exit":
    let milliseconds = arguments.count > 1 ? UInt64(arguments[1]) ?? 100 : 100
    _ = startThread {
        burnCPU(milliseconds: milliseconds)
        print("thread done")
        fflush(stdout)
    }
    pthread_exit(nil)

case "unshare":
    let what = arguments.count > 1 ? arguments[1] : "user"
    burnCPU(milliseconds: 20)
    let error = what == "user" ? sandbox_unshare_user() : what == "mnt" ? sandbox_setns_own_mount() : sandbox_seccomp_all_threads()
    print("\(what): \(error == 0 ? "ok" : "errno \(error)")")
    burnCPU(milliseconds: 20)

case "supervise":
    // Supervisors that also trace or clone reap with __WALL: every child,
    // whatever its exit signal (Coldstart's helper sends none).
    let all = Int32(bitPattern: 0x4000_0000)   // __WALL
    var mine: Set<pid_t> = []
    for milliseconds in [30, 60] as [UInt32] {
        let child = fork()
        if child == 0 { usleep(milliseconds * 1000); _exit(0) }
        mine.insert(child)
    }
    var own = 0, other = 0
    while true {
        var status: Int32 = 0
        let reaped = waitpid(-1, &status, all)
        if reaped < 0 { break }
        if mine.contains(reaped) { own += 1 } else { other += 1 }
    }
    Coldstart.ready()
    print("reaped \(own) own, \(other) other")

default:
    fputs("unknown mode \(mode)\n", stderr)
    exit(64)
}
