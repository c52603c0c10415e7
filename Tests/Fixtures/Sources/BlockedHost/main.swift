// A launch whose main thread is kept off the CPU in known ways, in a known
// order, each in its own phase — for the off-CPU watcher's tests:
//
//   "setup done → fifo read"   reads a FIFO that a helper fills after ~40 ms
//   "fifo read → lock taken"   waits ~50 ms for a mutex a background thread holds
//   "lock taken → slept"       sleeps 30 ms
//   "slept → computed"         runs 60 ms of CPU while four CPU-bound threads compete,
//                              all five pinned to one CPU
//   "computed → paged in"      touches a 16 MB file mapped cold: major page faults
//
// It prints what it measured itself as one JSON line, so a test can compare
// the profiler's attribution with the truth, and fails (exit 1) if a read or
// a sleep was cut short (EINTR) — a profiler must not signal the host.
//
//     BlockedHost FIFO_PATH
import Coldstart
import CPUPin
import Foundation
import Synchronization

func monotonicNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func threadCPUNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func milliseconds(_ ns: UInt64) -> Double { Double(ns) / 1_000_000 }

/// This thread's time on a CPU and waiting for one (schedstat's first two
/// fields, ns): what a wall-clock stretch holds besides blocked time.
func threadScheduledNs() -> UInt64 {
    let fd = open("/proc/thread-self/schedstat", O_RDONLY)
    guard fd >= 0 else { return 0 }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 128)
    let n = read(fd, &buffer, buffer.count - 1)
    guard n > 0 else { return 0 }
    let fields = String(decoding: buffer[0..<n], as: UTF8.self).split(separator: " ").prefix(2).compactMap { UInt64($0) }
    return fields.reduce(0, +)
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("BlockedHost: \(message)\n".utf8))
    exit(1)
}

/// Sleeps without retrying: an interrupted sleep is an error here.
func sleepExactly(milliseconds ms: Int) -> Bool {
    var request = timespec(tv_sec: 0, tv_nsec: ms * 1_000_000)
    return nanosleep(&request, nil) == 0
}

/// Names the calling thread as the kernel shows it (what a profiler reads).
func nameThisThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY)
    guard fd >= 0 else { return }
    _ = name.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
    close(fd)
}

/// A counting semaphore on a pthread mutex + condition variable.
final class Signal: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var condition = pthread_cond_t()
    private var raised = false
    init() {
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&condition, nil)
    }
    func raise() {
        pthread_mutex_lock(&mutex)
        raised = true
        pthread_cond_signal(&condition)
        pthread_mutex_unlock(&mutex)
    }
    func wait() {
        pthread_mutex_lock(&mutex)
        while !raised { pthread_cond_wait(&condition, &mutex) }
        pthread_mutex_unlock(&mutex)
    }
}

/// The lock the main thread waits for. Heap-allocated: a pthread mutex must not move.
let sharedLock: UnsafeMutablePointer<pthread_mutex_t> = {
    let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    pthread_mutex_init(lock, nil)
    return lock
}()

let stopSpinning = Atomic<Bool>(false)
let sink = Atomic<UInt64>(0)

@inline(never)
func spin() {
    var x: UInt64 = 1
    while !stopSpinning.load(ordering: .relaxed) {
        for _ in 0..<10_000 { x = x &* 6364136223846793005 &+ 1442695040888963407 }
    }
    sink.store(x, ordering: .relaxed)
}

@inline(never)
func readFromFIFO(path: String) -> (ms: Double, bytes: Int) {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { fail("cannot open \(path): errno \(errno)") }
    defer { close(fd) }
    let start = monotonicNs()
    var buffer = [UInt8](repeating: 0, count: 4096)
    var total = 0
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n < 0 { fail(errno == EINTR ? "read was interrupted (EINTR)" : "read failed: errno \(errno)") }
        if n == 0 { break }
        total += n
    }
    return (milliseconds(monotonicNs() - start), total)
}

@inline(never)
func waitForLock() -> Double {
    let start = monotonicNs()
    pthread_mutex_lock(sharedLock)
    let waited = monotonicNs() - start
    pthread_mutex_unlock(sharedLock)
    return milliseconds(waited)
}

@inline(never)
func sleepBriefly() -> Double {
    let start = monotonicNs()
    guard sleepExactly(milliseconds: 30) else { fail(errno == EINTR ? "sleep was interrupted (EINTR)" : "nanosleep failed") }
    return milliseconds(monotonicNs() - start)
}

/// Major faults of the process so far (only the main thread touches cold pages).
func majorFaults() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_majflt
}

/// A file written and dropped from the page cache, mapped: touching it
/// later takes major faults.
struct ColdFile {
    let base: UnsafeMutableRawPointer
    let size: Int

    init(path: String, megabytes: Int) {
        size = megabytes << 20
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { fail("cannot create \(path)") }
        defer { close(fd); unlink(path) }
        let chunk = [UInt8](repeating: 0x5A, count: 1 << 20)
        for _ in 0..<megabytes { guard write(fd, chunk, chunk.count) == chunk.count else { fail("cannot write \(path)") } }
        fsync(fd)
        posix_fadvise(fd, 0, off_t(size), Int32(POSIX_FADV_DONTNEED))
        guard let map = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), map != MAP_FAILED else { fail("cannot map \(path)") }
        madvise(map, size, Int32(MADV_RANDOM))
        base = map
    }
}

/// Touches one byte every 7 pages of a cold file: each touch is a major
/// fault the thread waits for in uninterruptible sleep (state D, outside any
/// syscall). Returns (wall ms, of which blocked ms, major faults): on a busy
/// machine the wall time also holds waits for a CPU, which are not blocked time.
@inline(never)
func touchColdPages(_ file: ColdFile) -> (ms: Double, blockedMs: Double, faults: Int) {
    let bytes = file.base.assumingMemoryBound(to: UInt8.self)
    let faults = majorFaults(), scheduled = threadScheduledNs(), start = monotonicNs()
    var sum = 0
    for offset in stride(from: 0, to: file.size, by: 4096 * 7) { sum &+= Int(bytes[offset]) }
    sink.store(UInt64(sum), ordering: .relaxed)
    let wall = monotonicNs() - start, onOrWaitingForCPU = threadScheduledNs() - scheduled
    return (milliseconds(wall), milliseconds(wall - min(wall, onOrWaitingForCPU)), majorFaults() - faults)
}

/// Runs until this thread has had `ms` of CPU; returns (CPU ms, wall ms).
@inline(never)
func computeWhileOthersCompete(cpuMilliseconds ms: Double) -> (cpu: Double, wall: Double) {
    let start = monotonicNs(), cpuStart = threadCPUNs()
    var x: UInt64 = 7
    while milliseconds(threadCPUNs() - cpuStart) < ms {
        for _ in 0..<20_000 { x = x &* 2862933555777941757 &+ 3037000493 }
    }
    sink.store(x, ordering: .relaxed)
    return (milliseconds(threadCPUNs() - cpuStart), milliseconds(monotonicNs() - start))
}

guard CommandLine.arguments.count == 2 else { fail("usage: BlockedHost FIFO_PATH") }
let fifoPath = CommandLine.arguments[1]
unlink(fifoPath)
guard mkfifo(fifoPath, 0o600) == 0 else { fail("cannot create the FIFO \(fifoPath): errno \(errno)") }
defer { unlink(fifoPath) }

// The FIFO's writer: opens it (waiting for the reader), then fills it after 40 ms.
let writer = Thread {
    nameThisThread("fifo-writer")
    let fd = open(fifoPath, O_WRONLY)
    guard fd >= 0 else { fail("cannot open \(fifoPath) for writing") }
    guard sleepExactly(milliseconds: 40) else { fail("writer's sleep was interrupted") }
    let text = Array("configuration arrives late\n".utf8)
    _ = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

// The lock holder: takes the lock now, and holds it for 50 ms once told to go.
let locked = Signal(), go = Signal()
let holder = Thread {
    nameThisThread("lock-holder")
    pthread_mutex_lock(sharedLock)
    locked.raise()
    go.wait()
    _ = sleepExactly(milliseconds: 50)
    pthread_mutex_unlock(sharedLock)
}
let coldFile = ColdFile(path: fifoPath + ".pages", megabytes: 16)
holder.start()
locked.wait()
writer.start()
Coldstart.mark("setup done", isPhaseBoundary: true)

let fifo = readFromFIFO(path: fifoPath)
Coldstart.mark("fifo read", isPhaseBoundary: true)

go.raise()
let lockWait = waitForLock()
Coldstart.mark("lock taken", isPhaseBoundary: true)

let slept = sleepBriefly()
Coldstart.mark("slept", isPhaseBoundary: true)

// The main thread and the spinners on the CPU it is on: it waits for that
// CPU however many others the machine has idle.
let contended = cpu_pin_current()
guard contended >= 0, cpu_pin_to(contended) == 0 else { fail("cannot pin the main thread to CPU \(contended): errno \(errno)") }
let spinners = (0..<4).map { index in
    Thread {
        nameThisThread("spinner-\(index)")
        guard cpu_pin_to(contended) == 0 else { fail("cannot pin spinner-\(index) to CPU \(contended): errno \(errno)") }
        spin()
    }
}
spinners.forEach { $0.start() }
let compute = computeWhileOthersCompete(cpuMilliseconds: 60)
stopSpinning.store(true, ordering: .relaxed)
guard cpu_pin_release() == 0 else { fail("cannot unpin the main thread: errno \(errno)") }
Coldstart.mark("computed", isPhaseBoundary: true)

let paged = touchColdPages(coldFile)
Coldstart.mark("paged in", isPhaseBoundary: true)
Coldstart.ready()

print("{\"fifoReadMs\":\(fifo.ms),\"fifoBytes\":\(fifo.bytes),\"lockWaitMs\":\(lockWait),\"sleepMs\":\(slept),"
    + "\"cpuMs\":\(compute.cpu),\"cpuWallMs\":\(compute.wall),\"pageInMs\":\(paged.ms),\"pageInBlockedMs\":\(paged.blockedMs),\"majorFaults\":\(paged.faults),"
    + "\"fifoPath\":\"\(fifoPath)\"}")
