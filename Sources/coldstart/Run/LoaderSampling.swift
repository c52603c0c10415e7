import CLauncher
import ColdstartAnalysis
import Foundation

/// `coldstart run`'s launcher-side sampling (docs/before-main.md): the app is
/// forked and held on a pipe while perf events are attached to it, so the
/// dynamic loader is sampled from the first instruction after exec; an
/// LD_AUDIT module times each library it loads. An app linked with Coldstart
/// gets the loader's samples added to its own timeline; any other program
/// gets a timeline made from the launcher's samples alone.
struct LoaderSampling {
    /// Task-clock samples per CPU second (--hz). Nil: an app linked with
    /// Coldstart at its own default's boosted rate (`linkedHz`), which the merge
    /// thins to the rate its file ends with (`LauncherTimeline.merged`), so
    /// every sample of the timeline stands for the same time; any other
    /// program at 10 kHz, since its whole profile comes from here (~5 µs a
    /// sample, FACTS).
    var hz: Int?
    /// The boosted start's rate of the Coldstart the app links (CS_BOOST_HZ
    /// in CSupport/CColdstart/config.h).
    static let linkedHz = 3000
    /// One page-fault sample per this many faults.
    var faultPeriod = 1
    /// libColdstartAudit.so, nil when it is not installed beside coldstart.
    var auditModule: String?

    /// The executable carries Coldstart (checked once: the file can be large).
    var linked: Bool
    /// Why perf events are refused here (then the launcher traces the
    /// program instead), nil when they open.
    let perfRefusal: PerfRefusal?
    /// The kernel's perf code (`LauncherCapture.kernelPerfCode`), read once.
    let kernelPerfCode: [Range<UInt64>]
    /// The lines said once per `coldstart run`, not once per launch.
    private let said = Said()
    private final class Said { var lines: Set<String> = [] }

    init(hz: Int?, executable: String) {
        self.hz = hz
        linked = Self.linksColdstart(executable)
        auditModule = Self.findAuditModule()
        perfRefusal = PerfAccess.refusal()
        kernelPerfCode = Self.readKernelPerfCode()
    }

    private static func readKernelPerfCode() -> [Range<UInt64>] {
        var pairs = [UInt64](repeating: 0, count: 2 * 4096)
        let count = cs_launch_kernel_perf_ranges(&pairs, pairs.count / 2)
        guard count > 0 else { return [] }
        return (0..<Int(count)).map { pairs[2 * $0]..<pairs[2 * $0 + 1] }
    }

    /// Where perf is refused the launcher samples by tracing: a stop per
    /// sample costs the program more than a perf sample, so the default is
    /// lower (measured in docs/containers.md).
    static let tracedHz = 4000

    private func sayOnce(_ line: String) {
        if said.lines.insert(line).inserted { printError(line) }
    }

    /// In `../lib/coldstart/` (an installed layout, or the plain-C build
    /// `make audit-module` puts there), else next to the coldstart executable
    /// (SwiftPM's build, which also loads libswiftCore into the audit
    /// namespace: ~2.5 ms more per launch, docs/before-main.md).
    static func findAuditModule() -> String? {
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        let directory = (executable as NSString).deletingLastPathComponent
        return [directory + "/../lib/coldstart/libColdstartAudit.so", directory + "/libColdstartAudit.so"]
            .map { ($0 as NSString).standardizingPath }
            .first { FileManager.default.fileExists(atPath: $0) }
    }

    /// Whether the file carries Coldstart's capture layer (its environment
    /// variable's name is in the binary). Scanned in C: a toolchain binary
    /// with debug info is ~100 MB, which Data.firstRange took 30 s to scan
    /// in a debug build.
    static func linksColdstart(_ executable: String) -> Bool {
        cs_file_contains(executable, "COLDSTART_SPAWN_NS") != 0
    }

    /// One launch, like `Launcher.launch`, and then the timeline written (or
    /// completed) from what the launcher saw.
    func launch(_ launcher: Launcher, label: String, timeline: String, stopAfterReady: Bool, timeout: Double?) throws -> RunRecord {
        let linked = self.linked
        let hz = self.hz ?? (perfRefusal != nil ? Self.tracedHz : linked ? Self.linkedHz : 10_000)
        let auditFile = (timeline as NSString).deletingLastPathComponent + "/.\(label).audit.\(getpid())"
        try? FileManager.default.removeItem(atPath: auditFile)
        defer { try? FileManager.default.removeItem(atPath: auditFile) }
        var environment = launcher.environment
        environment["COLDSTART"] = timeline
        // Traced, the launcher samples the whole launch; the app's own
        // fallback (POSIX timers at the kernel tick) would only add signals.
        if perfRefusal != nil && linked && environment["COLDSTART_SAMPLER"] == nil { environment["COLDSTART_SAMPLER"] = "off" }
        // An LD_AUDIT of the user's own is left alone: two would both see every library.
        let audited = auditModule != nil && (environment["LD_AUDIT"] ?? "").isEmpty
        if audited {
            environment["LD_AUDIT"] = auditModule
            environment["COLDSTART_AUDIT_OUT"] = auditFile
        }

        // The child writes its exec time over the digits.
        let strings = ChildStrings(arguments: launcher.arguments, environment: environment, extra: ["COLDSTART_SPAWN_NS=000000000000000000000"])
        defer { strings.free() }
        let (argv, envp) = (strings.argv, strings.envp)
        var launch = cs_launch()
        let rc = cs_launch_start(&launch, launcher.path, argv, envp + [nil], envp.last!, launcher.stdoutToStderr ? STDERR_FILENO : -1,
                                 UInt32(hz), UInt32(faultPeriod), UInt32(CS_LAUNCH_TRACE_IF_REFUSED))
        guard rc == 0 else { throw CommandError(message: "cannot launch \(launcher.path): \(String(cString: strerror(rc)))") }
        func text<T>(_ tuple: T) -> String { withUnsafeBytes(of: tuple) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) } }
        if launch.sampling == 0 {
            sayOnce("coldstart run: loader not sampled (\(text(launch.error)))")
        } else if launch.tracing != 0 {
            sayOnce("coldstart run: \(text(launch.perf_error)); sampling by tracing the program instead (ptrace, \(hz) Hz of its CPU time, loader included; `coldstart report` says why perf is refused and what to do)")
        }
        var records = cs_records()
        defer { cs_records_free(&records); cs_launch_close(&launch) }
        let (status, usage, timedOut, stopped) = wait(&launch, records: &records, linked: linked, auditFile: audited ? auditFile : nil,
                                                      timeline: timeline, stopAfterReady: stopAfterReady, timeout: timeout)
        let endNs = cs_launch_monotonic_ns()
        _ = cs_launch_drain(&launch, &records)

        if launch.sampling != 0 {
            var capture = LauncherCapture(
                pid: Int(launch.pid), executable: launcher.path, hz: Double(hz), faultPeriod: launch.faults != 0 ? faultPeriod : 0,
                perCPU: launch.per_cpu != 0, kernelSampling: launch.kernel_samples != 0, releaseNs: launch.release_ns, endNs: endNs,
                bootMinusMonotonicNs: cs_launch_boottime_ns() &- cs_launch_monotonic_ns(), waitStatus: status, rusage: usage,
                records: records.bytes.map { Array(UnsafeBufferPointer(start: $0, count: records.count)) } ?? [],
                clockIDs: Self.ids(launch.clock_ids, count: Int(launch.ncpus)),
                faultIDs: launch.faults != 0 ? Self.ids(launch.fault_ids, count: Int(launch.ncpus)) : [],
                auditText: audited ? try? String(contentsOfFile: auditFile, encoding: .utf8) : nil,
                kernelRelease: Self.kernelRelease(), realtimeMinusMonotonicNs: Self.realtimeMinusMonotonicNs())
            if launch.tracing != 0 {
                var samples: UInt64 = 0, failures: UInt64 = 0, stopped: UInt64 = 0
                cs_trace_counts(&launch, &samples, &failures, &stopped)
                capture.tracing = true
                capture.clockIDs = [UInt64(CS_TRACE_SAMPLE_ID)]
                capture.perCPU = true
                capture.tracerStoppedNs = stopped
                capture.unwindFailures = Int(failures)
            }
            capture.perfRefusal = launch.perf_errno != 0 ? PerfAccess.refusal(errno: launch.perf_errno) : nil
            capture.kernelPerfCode = kernelPerfCode
            try write(capture, linked: linked, to: timeline)
        }
        return Launcher.record(label: label, file: timeline, waitStatus: status, timedOut: timedOut, stoppedAfterReady: stopped)
    }

    /// Whether the user's environment asks glibc's loader for debugging
    /// output of its own: a statistics reference launch would change it, so
    /// the run makes none.
    static func userSetsLoaderDebugging(_ environment: [String: String]) -> Bool {
        !(environment["LD_DEBUG"] ?? "").isEmpty || !(environment["LD_DEBUG_OUTPUT"] ?? "").isEmpty
    }

    /// One launch of a program without Coldstart that times its loader
    /// undisturbed (docs/before-main.md): no perf event, no LD_AUDIT module;
    /// glibc's ld.so writes its statistics (`LD_DEBUG=statistics`) to a FIFO
    /// the launcher made for the child's pid, and the span is the child's
    /// release to exec → their arrival, both CLOCK_MONOTONIC. `ns` is nil
    /// when they never came (not glibc's loader, or a secure-execution
    /// program, whose ld.so ignores LD_DEBUG_OUTPUT). The program's output
    /// is discarded.
    func statisticsLaunch(_ launcher: Launcher, directory: String, timeout: Double?) throws -> (ns: Int64?, status: Int32) {
        // A directory of its own: a child process of the program inherits
        // LD_DEBUG and writes PREFIX.<its pid> as a regular file.
        let scratch = "\(directory)/.ld-statistics-\(getpid())"
        try? FileManager.default.removeItem(atPath: scratch)
        do {
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CommandError(message: "cannot create \(scratch): \(error.localizedDescription)")
        }
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let prefix = scratch + "/ld"
        var environment = launcher.environment
        environment["LD_DEBUG"] = "statistics"
        environment["LD_DEBUG_OUTPUT"] = prefix

        let strings = ChildStrings(arguments: launcher.arguments, environment: environment)
        defer { strings.free() }
        var launch = cs_launch()
        var fifo: Int32 = -1
        let rc = cs_launch_reference(&launch, launcher.path, strings.argv, strings.envp + [nil], prefix, &fifo)
        guard rc == 0 else { throw CommandError(message: "cannot launch \(launcher.path): \(String(cString: strerror(rc)))") }
        defer { close(fifo) }  // only once the child is reaped: its exit statistics go there too

        var arrival: UInt64 = 0, length = 0
        var text = [CChar](repeating: 0, count: 4096)
        var status: Int32 = 0
        var usage = rusage()
        var stop = ChildStop(pid: launch.pid, timeout: timeout)
        while cs_launch_statistics_wait(&launch, fifo, 50, &arrival, &text, text.count, &length, &status, &usage) == 0 {
            stop.check()
        }
        let exitStatus = Launcher.exitStatus(status)
        let received = String(decoding: text.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard arrival > launch.release_ns, received.contains("runtime linker statistics") else { return (nil, exitStatus) }
        return (Int64(arrival - launch.release_ns), exitStatus)
    }

    /// The last measured launch's time before main, when the launcher sampled it.
    static func summary(_ records: [RunRecord]) -> String? {
        guard let record = records.last(where: { $0.timeline != nil }), let timeline = record.timeline,
              let beforeMain = BeforeMain(timeline) else { return nil }
        let statistics = LoaderStatistics(timeline)
        return beforeMain.text(statistics: statistics).replacingOccurrences(of: "Before main (", with: "Before main, \(record.label) (")
            + (statistics.map { "\n  " + $0.summary } ?? "")
    }

    private func write(_ capture: LauncherCapture, linked: Bool, to path: String) throws {
        let content = LauncherTimeline(capture)
        let document: [String: Any]
        if FileManager.default.fileExists(atPath: path) {
            guard let own = try? Timeline(contentsOf: path) else { return }  // reported as unreadable by the caller
            document = content.merged(into: own)
        } else if !linked {
            document = content.document()
        } else {
            return  // linked but wrote nothing: the caller says profiling failed inside the app
        }
        do {
            try OutputFile.write(try LauncherTimeline.encode(document), to: path)
        } catch let error as CommandError {
            throw error
        } catch {
            throw CommandError(message: "\(path): cannot encode the launcher's samples (\(error))")
        }
    }

    /// Waits for the app while draining the rings; stops the clock events
    /// once an app linked with Coldstart reached la_preinit (its own sampler
    /// takes over there), and the app itself on --timeout / --stop-after-ready.
    private func wait(_ launch: inout cs_launch, records: inout cs_records, linked: Bool, auditFile: String?, timeline: String,
                      stopAfterReady: Bool, timeout: Double?) -> (Int32, Timeline.Rusage, Bool, Bool) {
        var status: Int32 = 0
        var usage = rusage()
        var stop = ChildStop(pid: launch.pid, readyFile: stopAfterReady ? timeline : nil, timeout: timeout)
        var samplingStopped = false
        while true {
            if launch.tracing != 0 {
                if cs_trace_wait(&launch, &records, 1, &status, &usage) != 0 { break }
            } else {
                let r = wait4(launch.pid, &status, WNOHANG, &usage)
                if r == launch.pid || (r < 0 && errno != EINTR) { break }
            }
            if launch.tracing == 0 && cs_launch_drain(&launch, &records) < 0 {
                printError("coldstart run: out of memory for the launcher's samples; sampling stopped")
                cs_launch_stop_sampling(&launch)
            }
            if linked && !samplingStopped && launch.tracing == 0, let auditFile,
               let text = try? String(contentsOfFile: auditFile, encoding: .utf8), text.contains("\nP ") {
                cs_launch_stop_sampling(&launch)
                samplingStopped = true
            }
            stop.check()
            if launch.tracing == 0 { cs_launch_poll(&launch, 1) }
        }
        func ns(_ t: timeval) -> UInt64 { UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_usec) * 1000 }
        let total = Timeline.Rusage.launcher(
            minorFaults: UInt64(usage.ru_minflt), majorFaults: UInt64(usage.ru_majflt), voluntarySwitches: UInt64(usage.ru_nvcsw),
            involuntarySwitches: UInt64(usage.ru_nivcsw), userNs: ns(usage.ru_utime), systemNs: ns(usage.ru_stime))
        return (status, total, stop.timedOut, stop.stoppedAfterReady)
    }

    private static func ids<T>(_ tuple: T, count: Int) -> Set<UInt64> {
        withUnsafeBytes(of: tuple) { Set($0.bindMemory(to: UInt64.self).prefix(count)) }
    }

    /// The wall clock's offset from the monotonic clock, now (nil if unreadable).
    private static func realtimeMinusMonotonicNs() -> Int64? {
        var realtime = timespec()
        guard clock_gettime(CLOCK_REALTIME, &realtime) == 0 else { return nil }
        let wallNs = Int64(realtime.tv_sec) * 1_000_000_000 + Int64(realtime.tv_nsec)
        return wallNs - Int64(bitPattern: cs_launch_monotonic_ns())
    }

    private static func kernelRelease() -> String {
        var name = utsname()
        uname(&name)
        return withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}

/// A child's argv (nil-terminated) and environment strings (not), copied for
/// C; `free()` releases them.
private struct ChildStrings {
    let argv: [UnsafeMutablePointer<CChar>?]
    let envp: [UnsafeMutablePointer<CChar>?]

    init(arguments: [String], environment: [String: String], extra: [String] = []) {
        argv = arguments.map { strdup($0) } + [nil]
        envp = environment.map { strdup("\($0.key)=\($0.value)") } + extra.map { strdup($0) }
    }

    func free() { (argv + envp).forEach { Foundation.free($0) } }
}
