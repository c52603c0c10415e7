// The launch's work, shared by both start-up patterns (main.swift).
import Coldstart
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

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("AsyncService: \(message)\n".utf8))
    exit(1)
}

/// One measured figure, as the tests read it: `name ms`.
func report(_ name: String, _ ms: Double) {
    print(name, String(format: "%.3f", ms))
}

let sink = Atomic<UInt64>(0)

/// Runs until this thread has had `ms` of CPU; returns (CPU ms, wall ms).
/// Counting CPU time keeps the figure right on a loaded machine.
@inline(never)
func burnCPU(milliseconds ms: Double) -> (cpu: Double, wall: Double) {
    let start = monotonicNs(), cpuStart = threadCPUNs()
    var x: UInt64 = 7
    while milliseconds(threadCPUNs() - cpuStart) < ms {
        for _ in 0..<20_000 { x = x &* 2862933555777941757 &+ 3037000493 }
    }
    sink.store(x, ordering: .relaxed)
    return (milliseconds(threadCPUNs() - cpuStart), milliseconds(monotonicNs() - start))
}

/// A FIFO whose data a helper thread writes after a delay: reading it blocks
/// the reader in `read` for that long.
struct LateFIFO {
    let path: String
    let fd: Int32

    init(path: String) {
        self.path = path
        unlink(path)
        guard mkfifo(path, 0o600) == 0 else { fail("cannot create the FIFO \(path): errno \(errno)") }
        // Opened for reading and writing so that neither this open nor the
        // writer's blocks: only the read waits.
        fd = open(path, O_RDWR)
        guard fd >= 0 else { fail("cannot open \(path): errno \(errno)") }
    }

    /// Starts the writer: it writes one line `ms` from now.
    func writeLater(milliseconds ms: Int) {
        let path = self.path
        Thread {
            var request = timespec(tv_sec: 0, tv_nsec: ms * 1_000_000), remaining = timespec()
            while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
            let fd = open(path, O_WRONLY)
            guard fd >= 0 else { fail("cannot open \(path) for writing") }
            let text = Array("configuration arrives late\n".utf8)
            _ = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }.start()
    }

    /// Blocks in `read` until the writer's line arrives; returns wall ms.
    @inline(never)
    func readBlocking() -> Double {
        let start = monotonicNs()
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { fail(n < 0 && errno == EINTR ? "read was interrupted (EINTR)" : "read failed: errno \(errno)") }
        let ms = milliseconds(monotonicNs() - start)
        close(fd)
        unlink(path)
        return ms
    }
}

/// A store opened by parallel child tasks, off the main actor.
actor Store {
    private(set) var shards: [UInt64] = []

    func open(shardCount: Int) async {
        shards = await withTaskGroup(of: UInt64.self) { group in
            for shard in 0..<shardCount {
                group.addTask { UInt64(shard) &+ UInt64(burnCPU(milliseconds: 10).cpu) }
            }
            var loaded: [UInt64] = []
            for await shard in group { loaded.append(shard) }
            return loaded
        }
    }
}

/// The launch: config (an await on a timer), store (child tasks), warm-up
/// (CPU), settings (a blocking read), each its own phase. It runs on the
/// caller's actor: the main actor from an async main, the cooperative pool
/// from a detached task.
func launch(fifo: LateFIFO, isolation: isolated (any Actor)? = #isolation) async {
    let start = monotonicNs()
    // Begun on the thread running the caller and ended wherever the
    // continuation resumes: an async main's first thread parks at this await.
    let config = Coldstart.beginSpan("load config")
    try? await Task.sleep(nanoseconds: 40_000_000)
    config.end()
    report("sleep", milliseconds(monotonicNs() - start))
    Coldstart.mark("config loaded", isPhaseBoundary: true)

    let store = Store(), storeStart = monotonicNs()
    await Coldstart.span("open store") { await store.open(shardCount: 4) }
    report("group", milliseconds(monotonicNs() - storeStart))
    Coldstart.mark("store opened", isPhaseBoundary: true)

    let burn = burnCPU(milliseconds: 80)
    report("burn", burn.cpu)
    report("burn-wall", burn.wall)
    Coldstart.mark("warmed up", isPhaseBoundary: true)

    fifo.writeLater(milliseconds: 35)
    report("read", fifo.readBlocking())
    Coldstart.mark("settings read", isPhaseBoundary: true)
}

/// The synchronous-main pattern: a Task does the work while this thread
/// waits on a semaphore.
func startAndWait(fifo: LateFIFO) {
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        await launch(fifo: fifo, isolation: nil)
        done.signal()
    }
    done.wait()
}
