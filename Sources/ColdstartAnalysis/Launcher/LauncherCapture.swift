import Foundation

/// What `coldstart run`'s launcher saw of a program it started with perf
/// events attached before exec (docs/before-main.md): raw ring-buffer
/// records, the LD_AUDIT module's lines, and how the program ended. Pure
/// data: turning it into timeline content reads only the modules' ELF files.
package struct LauncherCapture {
    package var pid: Int
    package var executable: String
    /// Task-clock samples per CPU second asked for.
    package var hz: Double
    /// One page-fault sample per this many faults; 0 when not sampled.
    package var faultPeriod: Int
    /// One inherited event per CPU (every thread) rather than the exec'ing thread only.
    package var perCPU: Bool
    /// The task clock sampled kernel mode too (perf_event_paranoid allowed it).
    package var kernelSampling: Bool
    /// CLOCK_MONOTONIC just before the child was released to exec.
    package var releaseNs: UInt64
    /// CLOCK_MONOTONIC when `waitpid` returned.
    package var endNs: UInt64
    package var bootMinusMonotonicNs: UInt64
    /// CLOCK_REALTIME less CLOCK_MONOTONIC, read by the launcher: the start
    /// on the wall clock (`startRealtimeUs`, which OTLP and fleet views need).
    package var realtimeMinusMonotonicNs: Int64?
    package var waitStatus: Int32
    /// `wait4`'s usage of the whole run.
    package var rusage: Timeline.Rusage
    package var records: [UInt8]
    package var clockIDs: Set<UInt64>
    package var faultIDs: Set<UInt64>
    /// The audit module's file (coldstart_audit.h), nil when it did not run.
    package var auditText: String?
    package var kernelRelease: String
    /// Sampled by tracing the program (ptrace interrupts, DWARF-unwound
    /// stack copies) because the kernel refused perf events.
    package var tracing = false
    /// Why perf_event_open was refused, when it was.
    package var perfRefusal: PerfRefusal?
    /// Tracing only: the time the program's threads spent stopped for
    /// samples, and samples whose unwind failed at the interrupted frame.
    package var tracerStoppedNs: UInt64 = 0
    package var unwindFailures = 0
    /// The kernel's perf code (`cs_launch_kernel_perf_ranges`), sorted: a
    /// kernel-mode sample there was the kernel writing the launcher's
    /// records on the program's thread. Empty when unknown.
    package var kernelPerfCode: [Range<UInt64>] = []

    package init(
        pid: Int, executable: String, hz: Double, faultPeriod: Int, perCPU: Bool, kernelSampling: Bool, releaseNs: UInt64, endNs: UInt64,
        bootMinusMonotonicNs: UInt64, waitStatus: Int32, rusage: Timeline.Rusage, records: [UInt8],
        clockIDs: Set<UInt64>, faultIDs: Set<UInt64>, auditText: String?, kernelRelease: String, realtimeMinusMonotonicNs: Int64? = nil
    ) {
        self.realtimeMinusMonotonicNs = realtimeMinusMonotonicNs
        self.pid = pid; self.executable = executable; self.hz = hz; self.faultPeriod = faultPeriod
        self.perCPU = perCPU; self.kernelSampling = kernelSampling; self.releaseNs = releaseNs; self.endNs = endNs
        self.bootMinusMonotonicNs = bootMinusMonotonicNs; self.waitStatus = waitStatus; self.rusage = rusage
        self.records = records; self.clockIDs = clockIDs; self.faultIDs = faultIDs; self.auditText = auditText
        self.kernelRelease = kernelRelease
    }
}

/// Why the kernel refused `perf_event_open` (docs/timeline-format.md,
/// "perfRefused"), as the process that was refused saw itself.
package struct PerfRefusal: Codable, Sendable, Equatable {
    /// perf_event_open's errno (Linux numbering: EPERM 1, EACCES 13, ENOSYS 38).
    package var errno: Int
    /// `/proc/sys/kernel/perf_event_paranoid`, nil when unreadable.
    package var paranoid: Int?
    /// `Seccomp:` of `/proc/self/status`: 0 none, 1 strict, 2 filter.
    package var seccomp: Int?
    /// The effective capabilities: CAP_PERFMON (38), CAP_SYS_ADMIN (21).
    package var capPerfmon: Bool?
    package var capSysAdmin: Bool?

    package init(errno: Int, paranoid: Int?, seccomp: Int?, capPerfmon: Bool?, capSysAdmin: Bool?) {
        self.errno = errno; self.paranoid = paranoid; self.seccomp = seccomp
        self.capPerfmon = capPerfmon; self.capSysAdmin = capSysAdmin
    }

    package init?(json: Any?) {
        guard let d = json as? [String: Any], let number = (d["errno"] as? NSNumber)?.intValue else { return nil }
        self.init(errno: number, paranoid: (d["paranoid"] as? NSNumber)?.intValue, seccomp: (d["seccomp"] as? NSNumber)?.intValue,
                  capPerfmon: (d["capPerfmon"] as? NSNumber)?.boolValue, capSysAdmin: (d["capSysAdmin"] as? NSNumber)?.boolValue)
    }

    /// The errno's name, as `perf_event_open(2)` lists them.
    package var errnoName: String {
        [1: "EPERM", 2: "ENOENT", 13: "EACCES", 19: "ENODEV", 22: "EINVAL", 24: "EMFILE", 38: "ENOSYS"][errno] ?? "errno \(errno)"
    }

    package var json: [String: Any] {
        var d: [String: Any] = ["errno": errno]
        if let paranoid { d["paranoid"] = paranoid }
        if let seccomp { d["seccomp"] = seccomp }
        if let capPerfmon { d["capPerfmon"] = capPerfmon }
        if let capSysAdmin { d["capSysAdmin"] = capSysAdmin }
        return d
    }
}

/// The records of a capture, decoded (`linux/perf_event.h`).
package struct PerfRecords {
    package struct Mapping {
        package var start: UInt64
        package var length: UInt64
        package var fileOffset: UInt64
        package var path: String
        package var ns: UInt64
        package var isExecutable: Bool
    }

    package struct Sample {
        package var ns: UInt64
        package var tid: Int
        /// Leaf first: the interrupted instruction, then return addresses.
        package var addresses: [UInt64]
    }

    /// A task-clock sample taken in kernel mode: only when and on which thread.
    package struct KernelSample {
        package var ns: UInt64
        package var tid: Int
        /// Where the kernel was, and the user-mode stack under it.
        package var ip: UInt64 = 0
        package var userAddresses: [UInt64] = []
    }

    package struct Fault {
        package var ns: UInt64
        package var tid: Int
        package var instruction: UInt64
        package var address: UInt64
    }

    /// A thread's kernel name from then on (PERF_RECORD_COMM: at exec and
    /// at each `prctl(PR_SET_NAME)` / `pthread_setname_np`).
    package struct Name {
        package var ns: UInt64
        package var pid: Int
        package var tid: Int
        package var name: String
    }

    /// A new thread or process (PERF_RECORD_FORK): it has its creator's
    /// name until it renames itself.
    package struct Fork {
        package var ns: UInt64
        package var pid: Int
        package var tid: Int
        package var parentTid: Int
    }

    package var mappings: [Mapping] = []
    package var names: [Name] = []
    package var forks: [Fork] = []
    package var samples: [Sample] = []
    package var kernelSamples: [KernelSample] = []
    package var faults: [Fault] = []
    /// Records the kernel could not write because a ring was full.
    package var lost: UInt64 = 0

    /// Each thread of process `pid`'s kernel name at its end: the last name
    /// a COMM record gave it, else its creator's name when it was created
    /// (a thread inherits it), followed through the records in time order.
    /// Threads with no name in any record are absent.
    package func threadNames(pid: Int) -> [Int: String] {
        enum Event { case name(Name), fork(Fork) }
        let events = (names.filter { $0.pid == pid }.map { (ns: $0.ns, order: 1, event: Event.name($0)) }
            + forks.filter { $0.pid == pid && $0.tid != pid }.map { (ns: $0.ns, order: 0, event: Event.fork($0)) })
            .sorted { ($0.ns, $0.order) < ($1.ns, $1.order) }
        var current: [Int: String] = [:]
        for entry in events {
            switch entry.event {
            case .name(let name): current[name.tid] = name.name
            case .fork(let fork): if let inherited = current[fork.parentTid] { current[fork.tid] = inherited }
            }
        }
        return current
    }

    /// Decodes records made with the sample types cs_launcher.c asks for:
    /// IDENTIFIER|IP|TID|TIME|CALLCHAIN (clock) and IDENTIFIER|IP|TID|TIME|ADDR
    /// (faults), `sample_id_all` set. A record that does not fit is skipped.
    package init(bytes: [UInt8], clockIDs: Set<UInt64>, faultIDs: Set<UInt64>) {
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> UInt32 { UInt32(u16(at)) | UInt32(u16(at + 2)) << 16 }
        func u64(_ at: Int) -> UInt64 { UInt64(u32(at)) | UInt64(u32(at + 4)) << 32 }
        var offset = 0
        while offset + 8 <= bytes.count {
            let type = u32(offset), misc = u16(offset + 4), size = u16(offset + 6)
            guard size >= 8, offset + size <= bytes.count else { break }
            let body = offset + 8, end = offset + size
            defer { offset = end }
            switch type {
            case 1 where size >= 8 + 32 + 24:  // PERF_RECORD_MMAP, trailer tid, time, identifier
                var nameEnd = body + 32
                while nameEnd < end - 24 && bytes[nameEnd] != 0 { nameEnd += 1 }
                let path = String(decoding: bytes[(body + 32)..<nameEnd], as: UTF8.self)
                mappings.append(Mapping(
                    start: u64(body + 8), length: u64(body + 16), fileOffset: u64(body + 24), path: path,
                    ns: u64(end - 16), isExecutable: misc & 0x2000 == 0))
            case 2 where size >= 8 + 16:  // PERF_RECORD_LOST
                lost += u64(body + 8)
            case 3 where size >= 8 + 8 + 8 + 24:  // PERF_RECORD_COMM: pid, tid, name, trailer
                var nameEnd = body + 8
                while nameEnd < end - 24 && bytes[nameEnd] != 0 { nameEnd += 1 }
                names.append(Name(ns: u64(end - 16), pid: Int(u32(body)), tid: Int(u32(body + 4)),
                                  name: String(decoding: bytes[(body + 8)..<nameEnd], as: UTF8.self)))
            case 7 where size >= 8 + 24 + 24:  // PERF_RECORD_FORK: pid, ppid, tid, ptid, time, trailer
                forks.append(Fork(ns: u64(body + 16), pid: Int(u32(body)), tid: Int(u32(body + 8)), parentTid: Int(u32(body + 12))))
            case 9 where size >= 8 + 32:  // PERF_RECORD_SAMPLE
                let id = u64(body), ip = u64(body + 8), tid = Int(u32(body + 20)), ns = u64(body + 24)
                if faultIDs.contains(id), size >= 8 + 40 {
                    faults.append(Fault(ns: ns, tid: tid, instruction: ip, address: u64(body + 32)))
                } else if clockIDs.contains(id), size >= 8 + 40 {
                    let count = Int(u64(body + 32))
                    guard count >= 0, body + 40 + count * 8 <= end else { continue }
                    // Context markers (PERF_CONTEXT_USER …) sit at the top of the address space.
                    let addresses = (0..<count).map { u64(body + 40 + $0 * 8) }.filter { $0 < 0xFFFF_FFFF_FFFF_F000 }
                    if misc & 7 == 1 {  // PERF_RECORD_MISC_KERNEL: the chain is the user stack under it
                        kernelSamples.append(KernelSample(ns: ns, tid: tid, ip: ip, userAddresses: addresses))
                    } else {
                        samples.append(Sample(ns: ns, tid: tid, addresses: addresses.isEmpty ? [ip] : addresses))
                    }
                } else if clockIDs.contains(id), misc & 7 == 1 {
                    kernelSamples.append(KernelSample(ns: ns, tid: tid, ip: ip))
                }
            default:
                break
            }
        }
    }
}

/// The audit module's lines (coldstart_audit.h).
package struct AuditLog {
    package struct Object {
        package var path: String
        package var ns: UInt64
    }

    package var versionNs: UInt64?
    package var objects: [Object] = []
    package var preinitNs: UInt64?
    package var preinitUsage: Timeline.Rusage?

    package init(text: String) {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count >= 2, let ns = UInt64(fields[1]) else { continue }
            switch fields[0] {
            case "V": versionNs = ns
            case "O" where fields.count == 3: objects.append(Object(path: String(fields[2]), ns: ns))
            case "P":
                preinitNs = ns
                let counts = line.split(separator: " ").dropFirst(2).compactMap { UInt64($0) }
                if counts.count == 6 {
                    preinitUsage = Timeline.Rusage(
                        minorFaults: counts[2], majorFaults: counts[3], voluntarySwitches: counts[4],
                        involuntarySwitches: counts[5], userNs: counts[0], systemNs: counts[1])
                }
            default: break
            }
        }
    }
}

/// Maps absolute addresses to `(module index, ELF virtual address)` over a
/// module table, the way the in-process writer encodes frames.
struct FrameEncoder {
    var modules: [Timeline.Module]

    /// Builds modules from the executable mappings the kernel reported; the
    /// load bias comes from each file's program headers.
    init(mappings: [PerfRecords.Mapping]) {
        // A path can be loaded twice (the audit module's namespace has its
        // own libc): one module per path and load bias.
        var byLoad: [String: Int] = [:]
        var files: [String: (ELFFile.Header, [ELFFile.ProgramHeader], String?)?] = [:]
        var modules: [Timeline.Module] = []
        for mapping in mappings where mapping.isExecutable && (mapping.path.hasPrefix("/") || mapping.path == "[vdso]") {
            if files[mapping.path] == nil {
                files[mapping.path] = mapping.path.hasPrefix("/") ? Self.readHeaders(mapping.path) : .some(nil)
            }
            var base = mapping.start
            var buildID: String?
            if let (_, headers, id) = files[mapping.path] ?? nil {
                if let segment = headers.first(where: {
                    $0.type == 1 && $0.offset <= mapping.fileOffset && mapping.fileOffset < $0.offset + max($0.filesz, 1)
                }) {
                    base = mapping.start &- (segment.vaddr &+ (mapping.fileOffset - segment.offset))
                }
                buildID = id
            }
            let end = mapping.start + mapping.length
            let key = "\(mapping.path)@\(base)"
            if let index = byLoad[key] {
                modules[index].start = min(modules[index].start, mapping.start)
                modules[index].end = max(modules[index].end, end)
                continue
            }
            byLoad[key] = modules.count
            modules.append(Timeline.Module(path: mapping.path, buildId: buildID, base: base, start: mapping.start, end: end))
        }
        self.modules = modules
    }

    private static func readHeaders(_ path: String) -> (ELFFile.Header, [ELFFile.ProgramHeader], String?)? {
        guard let file = try? ELFFile(path: path), let header = try? file.header(),
              let headers = try? file.programHeaders(header) else { return nil }
        let id = try? file.buildID(programHeaders: headers, sections: (try? file.sections(header)) ?? [])
        return (header, headers, id ?? nil)
    }

    init(modules: [Timeline.Module]) { self.modules = modules }

    func module(containing address: UInt64) -> Int? {
        modules.firstIndex { $0.start <= address && address < $0.end }
    }

    /// Leaf first; a return address is looked up one byte back.
    func encode(_ addresses: [UInt64]) -> [Timeline.Frame] {
        addresses.enumerated().map { index, address in
            guard let m = module(containing: index == 0 ? address : address &- 1) else {
                return Timeline.Frame(module: -1, address: address)
            }
            return Timeline.Frame(module: m, address: address &- modules[m].base)
        }
    }
}

extension Timeline.Rusage {
    /// Counters from `getrusage`/`wait4`, for the launcher (its fields are
    /// otherwise only decoded from files).
    package static func launcher(
        minorFaults: UInt64, majorFaults: UInt64, voluntarySwitches: UInt64, involuntarySwitches: UInt64,
        userNs: UInt64, systemNs: UInt64
    ) -> Timeline.Rusage {
        Timeline.Rusage(
            minorFaults: minorFaults, majorFaults: majorFaults, voluntarySwitches: voluntarySwitches,
            involuntarySwitches: involuntarySwitches, userNs: userNs, systemNs: systemNs)
    }
}
