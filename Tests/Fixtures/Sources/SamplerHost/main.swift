// A host for the sampler tests: each mode exercises something the profiler
// must not disturb, and prints what it observed on stdout.
//
//     SamplerHost burn MS [DEPTH [SLEEP]]  burn MS ms of CPU DEPTH frames deep, sleep SLEEP ms, then ready()
//     SamplerHost settle SLEEP MS   sleep SLEEP ms, then burn MS ms of CPU (its clock armed by then), then ready()
//     SamplerHost sleep             usleep(50 ms) and a blocking read while another thread burns
//     SamplerHost waits             poll and epoll_wait with 50 ms timeouts, and one a pipe ends, while another thread burns
//     SamplerHost exception N       throw and catch N C++ exceptions and N Swift errors
//     SamplerHost threads           three threads, started one after another, each burning 100 ms
//     SamplerHost stress SECONDS    dlopen/dlclose, dl_iterate_phdr, malloc/free, throwing, thread churn
//     SamplerHost maps              whether libunwind is mapped into this process (within 300 ms of main)
//     SamplerHost disposition       SIGURG's and SIGPROF's handlers (the sampler's signals) during the launch and once the timeline is written
//     SamplerHost exit CODE         print a line and exit(CODE) before ready()
//     SamplerHost stop PIDFILE      write the pid to PIDFILE, raise(SIGSTOP) while another thread burns, then burn 100 ms
import Coldstart
import CxxThrow
import HostWaits
import Glibc

let arguments = Array(CommandLine.arguments.dropFirst())
let mode = arguments.first ?? ""
func argument(_ index: Int, default value: Int) -> Int { arguments.count > index ? Int(arguments[index]) ?? value : value }

switch mode {
case "burn":
    burnAtDepth(argument(2, default: 0), milliseconds: UInt64(argument(1, default: 300)))
    usleep(UInt32(argument(3, default: 0)) * 1000)
    Coldstart.ready()
    print("burned")

case "settle":
    usleep(UInt32(argument(1, default: 0)) * 1000)
    burnCPU(milliseconds: UInt64(argument(2, default: 300)))
    Coldstart.ready()
    print("burned")

case "sleep":
    // Another thread keeps the sampler busy; this one sleeps and reads.
    let burner = startThread { burnCPU(milliseconds: 400) }
    burnCPU(milliseconds: 20)
    var slept: [String] = []
    for _ in 0..<3 {
        let start = monotonicNanoseconds()
        usleep(50_000)
        slept.append(String((monotonicNanoseconds() - start) / 1_000))
    }
    var fds: [Int32] = [0, 0]
    pipe(&fds)
    let writer = fds[1]
    let feeder = startThread {
        usleep(60_000)
        var byte: UInt8 = 42
        _ = write(writer, &byte, 1)
    }
    var byte: UInt8 = 0
    let got = read(fds[0], &byte, 1)
    let readErrno = got < 0 ? errno : 0
    pthread_join(feeder, nil)
    pthread_join(burner, nil)
    Coldstart.ready()
    print("{\"sleptUs\":[\(slept.joined(separator: ","))],\"read\":\(got),\"readErrno\":\(readErrno),\"byte\":\(byte)}")

case "waits":
    // What a service's event loop does: each wait must last its timeout and
    // never return EINTR, whatever samples the profiler takes meanwhile.
    let burner = startThread { burnCPU(milliseconds: 400) }
    burnCPU(milliseconds: 20)
    var fds: [Int32] = [0, 0]
    pipe(&fds)
    let epoll = host_epoll_on(fds[0])
    var results: [String] = []
    func timed(_ name: String, _ wait: () -> Int32) {
        let start = monotonicNanoseconds()
        let got = wait()
        let failure = got < 0 ? errno : 0
        results.append("{\"call\":\"\(name)\",\"us\":\((monotonicNanoseconds() - start) / 1_000),\"result\":\(got),\"errno\":\(failure)}")
    }
    for _ in 0..<3 {
        var entry = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
        timed("poll") { poll(&entry, 1, 50) }
        timed("epoll_wait") { host_epoll_wait(epoll, 50) }
    }
    // And a wait that data ends: the byte arrives after 60 ms.
    let writer = fds[1]
    let feeder = startThread {
        usleep(60_000)
        var byte: UInt8 = 42
        _ = write(writer, &byte, 1)
    }
    timed("epoll_wait-data") { host_epoll_wait(epoll, 5_000) }
    pthread_join(feeder, nil)
    pthread_join(burner, nil)
    Coldstart.ready()
    print("[" + results.joined(separator: ",") + "]")

case "exception":
    let count = argument(1, default: 1000)
    struct Failure: Error { let index: Int }
    func fail(_ i: Int) throws { if i >= 0 { throw Failure(index: i) } }
    // Keep throwing for 200 ms of CPU so that many samples land in the unwinders.
    let start = threadCPUNanoseconds()
    var rounds = 0, allCaught = true
    while threadCPUNanoseconds() - start < 200_000_000 || rounds == 0 {
        allCaught = allCaught && cxx_throw_and_catch(Int32(count)) == count
        var swiftCaught = 0
        for i in 0..<count {
            do { try fail(i) } catch let failure as Failure where failure.index == i { swiftCaught += 1 } catch {}
        }
        allCaught = allCaught && swiftCaught == count
        rounds += 1
    }
    Coldstart.ready()
    print("every exception caught: \(allCaught)")

case "threads":
    var threads: [pthread_t] = []
    for _ in 0..<3 {
        threads.append(startThread { burnCPU(milliseconds: 100) })
        usleep(30_000)
    }
    for thread in threads { pthread_join(thread, nil) }
    Coldstart.ready()
    print("threads done")

case "stress":
    let seconds = UInt64(argument(1, default: 1))
    let deadline = monotonicNanoseconds() + seconds * 1_000_000_000
    nonisolated(unsafe) var counts = [Int](repeating: 0, count: 5)
    let workers: [(Int, () -> Void)] = [
        (0, {
            // The loader's lock, taken and released all the time.
            if let handle = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL) {
                _ = dlsym(handle, "zlibVersion")
                dlclose(handle)
            }
        }),
        (1, {
            // A dl_iterate_phdr callback that allocates while holding the lock.
            _ = iterate_objects_allocating()
        }),
        (2, {
            for size in [16, 256, 4096, 65536] { free(malloc(size)) }
        }),
        (3, { _ = cxx_throw_and_catch(5) }),
        (4, {
            // New threads all the time: each must be found and sampled.
            let t = startThread { burnCPU(milliseconds: 1) }
            pthread_join(t, nil)
        }),
    ]
    var threads: [pthread_t] = []
    for (index, work) in workers {
        threads.append(startThread {
            while monotonicNanoseconds() < deadline {
                work()
                counts[index] += 1
            }
        })
    }
    for thread in threads { pthread_join(thread, nil) }
    Coldstart.ready()
    print("stress done: \(counts.allSatisfy { $0 > 0 })")

case "maps":
    // Coldstart's scan thread loads libunwind after main starts: give it 300 ms.
    var maps = ""
    for _ in 0..<60 {
        maps = (try? String(decoding: readAll("/proc/self/maps"), as: UTF8.self)) ?? ""
        if maps.contains("libunwind") { break }
        usleep(5_000)
    }
    usleep(50_000)   // mapped is not yet checked and usable: let it finish
    Coldstart.ready()
    print("libunwind mapped: \(maps.contains("libunwind") ? "yes" : "no")")

case "disposition":
    // Both sampling signals: SIGURG, and SIGPROF for threads that block SIGURG.
    func handled(_ signal: Int32) -> Bool {
        var action = sigaction()
        sigaction(signal, nil, &action)
        return unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self) != 0
    }
    burnCPU(milliseconds: 20)
    let during = handled(SIGURG) && handled(SIGPROF)
    Coldstart.ready()
    // The timeline is written on a background thread; the handler goes after it.
    var after = true
    for _ in 0..<400 where after {
        usleep(5_000)
        after = handled(SIGURG) || handled(SIGPROF)
    }
    print("during: \(during ? "handled" : "default"), after: \(after ? "handled" : "default")")

case "exit":
    print("exiting before ready")
    exit(Int32(argument(1, default: 3)))

case "stop":
    // A group stop, as ^Z or `kill -STOP` gives: the test sees the whole
    // process stopped (a thread burning then too) until it sends SIGCONT.
    // The pid goes to PIDFILE by a rename, so the test never reads half of it.
    let pidFile = arguments.count > 1 ? arguments[1] : "stop.pid"
    let pid = Array("\(getpid())".utf8)
    let temporary = pidFile + ".tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0, write(fd, pid, pid.count) == pid.count, close(fd) == 0, rename(temporary, pidFile) == 0 else {
        fputs("SamplerHost stop: cannot write \(pidFile)\n", stderr)
        exit(70)
    }
    let burner = startThread { burnCPU(milliseconds: 150) }
    burnCPU(milliseconds: 20)
    raise(SIGSTOP)
    print("continued")
    burnCPU(milliseconds: 100)   // samples after the stop: the tracer samples on
    pthread_join(burner, nil)
    Coldstart.ready()

default:
    fputs("usage: SamplerHost burn|sleep|waits|exception|threads|stress|maps|disposition|exit|stop …\n", stderr)
    exit(64)
}

func readAll(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        bytes += buffer[0..<n]
    }
    return bytes
}
