import CLauncher
import Foundation
import XCTest

/// Facts about this machine that decide whether a test may skip, each read
/// without the code under test (docs/ARCHITECTURE.md, "Skips"): a test that
/// took its skip from Coldstart's own output would turn a regression of
/// exactly what it checks into a skip.
enum MachineProbes {
    /// 0 when this process may open a task-clock event on itself, else the
    /// errno: one perf_event_open, nothing of the sampler's. The fixtures are
    /// this process's children, under the same seccomp filter and
    /// perf_event_paranoid, so they may too.
    static let perfErrno: Int32 = cs_launch_perf_errno()

    static var perfAllowed: Bool { perfErrno == 0 }

    /// Skips unless perf_event_open is allowed here; when it is, the caller
    /// asserts that the perf path was taken.
    static func requirePerf() throws {
        guard perfAllowed else {
            throw XCTSkip("perf_event_open is refused on this machine (errno \(perfErrno), \(String(cString: strerror(perfErrno))))")
        }
    }

    /// /proc/sys/kernel/perf_event_paranoid (2, the kernel's default, when unreadable).
    static let paranoid: Int = (try? String(contentsOfFile: "/proc/sys/kernel/perf_event_paranoid", encoding: .utf8))
        .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 2

    /// CAP_PERFMON (38) or CAP_SYS_ADMIN (21) in this process's effective
    /// set: what the kernel's perfmon_capable() asks.
    static let perfmonCapable: Bool = {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
              let caps = UInt64(line.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
        return caps & (1 << 38) != 0 || caps & (1 << 21) != 0
    }()

    /// Kernel-mode samples of a task are allowed (the kernel's
    /// perf_allow_kernel: paranoid ≤ 1 or perfmon_capable), and perf at all.
    static var kernelSamplesAllowed: Bool { perfAllowed && (paranoid <= 1 || perfmonCapable) }

    /// CPU-wide events (the bridge) are allowed (perf_allow_cpu: paranoid ≤ 0 or perfmon_capable).
    static var cpuWideAllowed: Bool { perfAllowed && (paranoid <= 0 || perfmonCapable) }

    static func requireKernelSamples() throws {
        try requirePerf()
        guard kernelSamplesAllowed else {
            throw XCTSkip("kernel-mode samples need perf_event_paranoid <= 1 or CAP_PERFMON (paranoid is \(paranoid))")
        }
    }

    /// The one-minute load average and the CPUs online, for a failure's figures.
    static func loadAverage() -> String {
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?"
        return "load \(load) on \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs"
    }

    /// The separate debug file of `path` under /usr/lib/debug/.build-id
    /// (libc6-dbg installs glibc's), found from the build-id readelf prints,
    /// not from the symbolizer's own reading; nil when there is none.
    static func separateDebugFile(of path: String) throws -> String? {
        guard let readelf = ["/usr/bin/readelf", "/opt/swift/usr/bin/llvm-readelf"].first(where: {
            FileManager.default.isExecutableFile(atPath: $0)
        }) else { throw XCTSkip("no readelf to read \(path)'s build-id with") }
        let notes = try runProcess(readelf, ["-n", path]).stdout
        guard let id = notes.split(separator: "\n").first(where: { $0.contains("Build ID:") })?.split(separator: " ").last,
              id.count > 2 else { return nil }
        let file = "/usr/lib/debug/.build-id/\(id.prefix(2))/\(id.dropFirst(2)).debug"
        return FileManager.default.fileExists(atPath: file) ? file : nil
    }

    /// Skips unless `path` has a separate debug file installed.
    static func requireSeparateDebugFile(of path: String) throws {
        guard try separateDebugFile(of: path) != nil else {
            throw XCTSkip("no separate debug file for \(path) under /usr/lib/debug (install libc6-dbg)")
        }
    }

    /// Skips unless the file system holding `path` drops a file's pages at
    /// posix_fadvise(POSIX_FADV_DONTNEED): a 1 MiB file of the test's own
    /// beside it, written, synced (dirty pages stay), read in, advised away,
    /// and its pages counted with mincore before and after.
    static func requireEviction(beside path: String) throws {
        let probe = URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent(".evict-probe-\(getpid())").path
        defer { unlink(probe) }
        let size = 1 << 20
        let fd = open(probe, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw XCTSkip("cannot write a probe file beside \(path): errno \(errno)") }
        defer { close(fd) }
        let bytes = [UInt8](repeating: 0x5A, count: size)
        guard write(fd, bytes, size) == size, fsync(fd) == 0 else { throw XCTSkip("cannot write a probe file beside \(path)") }
        var back = [UInt8](repeating: 0, count: size)
        _ = pread(fd, &back, size, 0)
        func resident() -> Int {
            guard let map = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else { return -1 }
            defer { munmap(map, size) }
            let page = Int(sysconf(Int32(_SC_PAGESIZE)))
            var vector = [UInt8](repeating: 0, count: (size + page - 1) / page)
            guard mincore(map, size, &vector) == 0 else { return -1 }
            return vector.filter { $0 & 1 != 0 }.count
        }
        let before = resident()
        _ = posix_fadvise(fd, 0, off_t(size), POSIX_FADV_DONTNEED)
        let after = resident()
        guard before > 0, after >= 0, after < before else {
            throw XCTSkip("the file system under \(path) kept a file's pages after POSIX_FADV_DONTNEED (resident pages before \(before), after \(after))")
        }
    }
}
