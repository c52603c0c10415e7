import Foundation

/// Turns a `LauncherCapture` into timeline content (docs/timeline-format.md,
/// "Launcher section"): a whole timeline for a program that does not link
/// Coldstart, or the loader-phase samples added to the timeline of one that
/// does. Written back with `DocumentWriter`, like `coldstart symbolize`.
package struct LauncherTimeline {
    package let capture: LauncherCapture
    package let records: PerfRecords
    package let audit: AuditLog?

    package init(_ capture: LauncherCapture) {
        self.capture = capture
        records = PerfRecords(bytes: capture.records, clockIDs: capture.clockIDs, faultIDs: capture.faultIDs)
        audit = capture.auditText.map(AuditLog.init(text:))
    }

    static func isDynamicLoader(_ path: String) -> Bool {
        let name = (path as NSString).lastPathComponent
        return name.hasPrefix("ld-linux") || name.hasPrefix("ld.so") || (name.hasPrefix("ld-") && name.contains(".so"))
    }

    static func isAuditModule(_ path: String) -> Bool { path.contains("libColdstartAudit") }

    /// ld.so loading the LD_AUDIT module and its namespace's libc (mapping,
    /// relocating, faulting them in, their initializers): from the module's
    /// first mapping to its `la_version`, offsets from process start, on the
    /// program's main thread. Work of Coldstart's that the program's own
    /// launch never does. Nil without both stamps (`launcher` is the
    /// timeline's launcher section).
    package static func auditLoading(_ launcher: [String: Any]?) -> Range<Int64>? {
        let audit = launcher?["audit"] as? [String: Any]
        guard let from = (audit?["moduleMappedNs"] as? NSNumber)?.int64Value, let to = (audit?["versionNs"] as? NSNumber)?.int64Value,
              from < to else { return nil }
        return from..<to
    }

    /// Where the loader phase ends and `main` begins, as offsets from `startNs`.
    package struct Boundaries {
        /// The first sign of a library initializer after the last object was
        /// mapped: a main-thread sample or page fault whose instruction is
        /// outside ld.so, libc and libm (the last two hold the IFUNC
        /// resolvers relocation calls). Good to one sampling period.
        fileprivate var loaderEndNs: Int64
        var loaderEndSource: String
        /// la_preinit, which glibc calls from `__libc_start_main` after every
        /// constructor, right before `main` (measured 0.1–0.2 ms after a
        /// linked app's own constructor). Without the audit module: the first
        /// main-thread sample in the executable not called by the loader.
        package var mainNs: Int64?
        var mainSource: String
    }

    func offset(_ ns: UInt64, from start: UInt64) -> Int64 { Int64(bitPattern: ns &- start) }

    /// Finds the phase boundaries of a program that does not link Coldstart.
    func boundaries(encoder: FrameEncoder) -> Boundaries {
        let start = capture.releaseNs
        let loader = Set(encoder.modules.indices.filter { Self.isDynamicLoader(encoder.modules[$0].path) })
        let relocationHelpers = loader.union(encoder.modules.indices.filter {
            let name = (encoder.modules[$0].path as NSString).lastPathComponent
            return name.hasPrefix("libc.so") || name.hasPrefix("libm.so")
        })
        let executablePath = SharedLibraries.canonicalPath(capture.executable)
        let executable = encoder.modules.firstIndex { SharedLibraries.canonicalPath($0.path) == executablePath }
        let main = records.samples.filter { $0.tid == capture.pid }.map { (ns: offset($0.ns, from: start), frames: encoder.encode($0.addresses)) }

        var mainNs: Int64?
        var mainSource = "la_preinit"
        if let preinit = audit?.preinitNs {
            mainNs = offset(preinit, from: start)
        } else {
            mainSource = "first sample in main"
            mainNs = main.first { sample in
                guard let executable else { return false }
                // Lazy binding leaves ld.so frames at the leaf end; a
                // constructor has ld.so's call_init further out.
                let rest = sample.frames.drop { loader.contains($0.module) }
                return rest.contains { $0.module == executable } && !rest.contains { loader.contains($0.module) }
            }?.ns
        }
        let limit = mainNs ?? Int64.max
        // The loader's last mapping before main: a library dlopen'ed after it
        // (libunwind, by Coldstart's own threads) is no mapping of the loader's.
        let mapped = audit?.objects.map { offset($0.ns, from: start) }.filter { $0 < limit }.max() ?? 0
        let sampleSign = main.first { $0.ns >= mapped && $0.ns < limit && !relocationHelpers.contains($0.frames.first?.module ?? -1) }?.ns
        let faultSign = records.faults.lazy.filter { $0.tid == self.capture.pid }
            .map { (ns: self.offset($0.ns, from: start), module: encoder.module(containing: $0.instruction) ?? -1) }
            .first { $0.ns >= mapped && $0.ns < limit && !relocationHelpers.contains($0.module) }?.ns
        let signs = [sampleSign, faultSign].compactMap { $0 }
        let loaderEnd = min(signs.min() ?? limit, limit == Int64.max ? (main.last?.ns ?? 0) : limit)
        return Boundaries(loaderEndNs: loaderEnd, loaderEndSource: signs.isEmpty ? "none seen" : "first initializer sample or fault",
                          mainNs: mainNs, mainSource: mainNs == nil ? "not seen" : mainSource)
    }

    /// The launcher section, with times as offsets from `startNs`.
    /// `kernelCut`: kernel samples from this offset on are left out (the
    /// linked app's own sampler takes over at its earliest init).
    func launcherSection(mode: String, startNs: UInt64, encoder: FrameEncoder, samplesWritten: Int,
                         boundaries: Boundaries?, kernelCut: Int64 = .max) -> [String: Any] {
        var section: [String: Any] = [
            "mode": mode, "requestedHz": capture.hz,
            "threads": capture.tracing ? "ptrace" : capture.perCPU ? "per-cpu-inherit" : "exec-thread",
            "samples": samplesWritten, "lostRecords": Int(records.lost), "faultPeriod": capture.faultPeriod,
        ]
        if let refusal = capture.perfRefusal { section["perfRefused"] = refusal.json }
        if capture.tracing {
            section["tracer"] = ["stoppedNs": capture.tracerStoppedNs, "unwindFailures": capture.unwindFailures] as [String: Any]
        }
        if let boundaries {
            section["loaderEndSource"] = boundaries.loaderEndSource
            section["mainSource"] = boundaries.mainSource
        }
        if let audit {
            var entry: [String: Any] = ["objects": audit.objects.map { ["path": $0.path, "ns": offset($0.ns, from: startNs)] as [String: Any] }]
            if let v = audit.versionNs { entry["versionNs"] = offset(v, from: startNs) }
            // The earliest: the program's children are not audited (la_preinit unsets LD_AUDIT).
            if let mapped = records.mappings.filter({ Self.isAuditModule($0.path) }).map(\.ns).min() {
                entry["moduleMappedNs"] = offset(mapped, from: startNs)
            }
            if let p = audit.preinitNs { entry["preinitNs"] = offset(p, from: startNs) }
            section["audit"] = entry
        }
        // A fault's file: the newest mapping that covered its address then.
        var files: [String] = []
        var fileIndex: [String: Int] = [:]
        let mappings = records.mappings.sorted { $0.ns < $1.ns }
        section["faults"] = records.faults.map { fault -> [Any] in
            let frame = encoder.encode([fault.instruction])[0]
            var file = -1, fileOffset: UInt64 = 0
            if let mapping = mappings.last(where: { $0.ns <= fault.ns && $0.start <= fault.address && fault.address < $0.start + $0.length }) {
                let path = (mapping.path.hasPrefix("/") && !mapping.path.hasPrefix("//")) || mapping.path.hasPrefix("[") ? mapping.path : "[anon]"
                if fileIndex[path] == nil { fileIndex[path] = files.count; files.append(path) }
                file = fileIndex[path]!
                fileOffset = fault.address - mapping.start + mapping.fileOffset
            }
            return [offset(fault.ns, from: startNs), fault.tid, frame.module, frame.address, file, fileOffset]
        }
        section["faultFiles"] = files
        if capture.kernelSampling {
            let audit = Set(encoder.modules.indices.filter { Self.isAuditModule(encoder.modules[$0].path) })
            let perfCode = capture.kernelPerfCode
            // Coldstart's: the kernel writing the launcher's records, or
            // the audit module's system calls.
            func isOwn(_ sample: PerfRecords.KernelSample) -> Bool {
                let index = perfCode.partitionPoint { $0.upperBound <= sample.ip }
                return (index < perfCode.count && perfCode[index].contains(sample.ip))
                    || (!audit.isEmpty && encoder.encode(sample.userAddresses).contains { audit.contains($0.module) })
            }
            section["kernelSamples"] = records.kernelSamples.filter { offset($0.ns, from: startNs) < kernelCut }
                .map { [offset($0.ns, from: startNs), $0.tid, isOwn($0) ? 1 : 0] }
        }
        return section
    }

    static func sampleRows(_ samples: [PerfRecords.Sample], startNs: UInt64, encoder: FrameEncoder) -> [Any] {
        samples.map { sample -> Any in
            let frames = encoder.encode(sample.addresses).flatMap { [$0.module, $0.address] as [Any] }
            return [Int64(bitPattern: sample.ns &- startNs), sample.tid, frames] as [Any]
        }
    }

    /// The program's own timeline (it links Coldstart) with the launcher's
    /// samples before its earliest init — the loader — added to `samples`,
    /// and on the main thread up to the program's own clock's start, and the
    /// launcher section. Its module table is extended with modules it no
    /// longer had mapped when it wrote the file.
    package func merged(into timeline: Timeline) -> [String: Any] {
        if capture.tracing { return tracedMerge(into: timeline) }
        var root = timeline.document
        var section = root["coldstart"] as? [String: Any] ?? [:]
        let startNs = timeline.launch.startNs
        let cut = timeline.launch.earliestInitNs ?? timeline.launch.mainNs
        // The program's clock on its main thread runs only from clockArmedNs
        // (its scan thread opens it 1–2 ms after the earliest init, 10–18 ms
        // on a quiet kernel): the launcher's samples cover the gap.
        let mainCut = max(cut, timeline.sampling?.sampledFromNs ?? cut)
        // One rate in the file: the launcher's samples thinned to it, per thread.
        let fileHz = timeline.sampling?.requestedHz ?? capture.hz
        let stride = fileHz > 0 && capture.hz > fileHz ? max(Int((capture.hz / fileHz).rounded()), 1) : 1
        let own = FrameEncoder(mappings: records.mappings)
        var modules = timeline.modules
        for module in own.modules where !modules.contains(where: { $0.path == module.path }) { modules.append(module) }
        let encoder = FrameEncoder(modules: modules)
        var seen: [Int: Int] = [:]
        let early = records.samples.filter { sample in
            guard Int64(bitPattern: sample.ns &- startNs) < (sample.tid == timeline.process.pid ? mainCut : cut) else { return false }
            let index = seen[sample.tid, default: 0]
            seen[sample.tid] = index + 1
            return index % stride == 0
        }
        if !early.isEmpty {
            section["modules"] = modules.map { module -> [String: Any] in
                ["path": module.path, "buildId": module.buildId ?? NSNull(), "base": module.base, "start": module.start, "end": module.end]
            }
            let rows = Self.sampleRows(early, startNs: startNs, encoder: encoder)
            section["samples"] = rows + ((section["samples"] as? [Any]) ?? [])
            if var sampling = section["sampling"] as? [String: Any] {
                sampling["startNs"] = 0
                sampling["samples"] = ((sampling["samples"] as? NSNumber)?.intValue ?? 0) + early.count
                section["sampling"] = sampling
            }
        }
        section["launcher"] = launcherSection(mode: "linked", startNs: startNs, encoder: encoder, samplesWritten: early.count,
                                              boundaries: nil, kernelCut: cut)
        section["threads"] = namedThreads(section, sampled: Set(early.map(\.tid)))
        root["coldstart"] = section
        return root
    }

    /// The sampling section of a traced capture (`clock` "ptrace"): every
    /// sample stands for 1/effectiveHz of CPU time, user and kernel mode
    /// (an interrupted system call's time is its caller's).
    func tracedSampling(startNs: Int64, stopNs: Int64) -> [String: Any] {
        let tids = Set(records.samples.map(\.tid))
        let cpuNs = capture.rusage.cpuNs
        return [
            "clock": "ptrace", "unwinder": "libunwind", "requestedHz": capture.hz,
            "effectiveHz": cpuNs > 0 ? Double(records.samples.count) / (Double(cpuNs) / 1e9) : 0,
            "startNs": startNs, "stopNs": stopNs, "cpuNs": cpuNs, "userNs": capture.rusage.userNs,
            "systemNs": capture.rusage.systemNs, "coldstartCpuNs": 0, "samples": records.samples.count, "dropped": 0,
            "threads": "per-thread", "threadsSampled": tids.count, "threadsMissed": 0, "unwindFailures": capture.unwindFailures,
            "perfRefused": capture.perfRefusal?.json ?? NSNull(),
        ]
    }

    /// A program linked with Coldstart, traced because perf was refused: its
    /// own sampler was off (COLDSTART_SAMPLER=off), so every sample of the
    /// file is the launcher's, from exec to the end.
    func tracedMerge(into timeline: Timeline) -> [String: Any] {
        var root = timeline.document
        var section = root["coldstart"] as? [String: Any] ?? [:]
        let startNs = timeline.launch.startNs
        // Every load of a path: the LD_AUDIT module's namespace has a libc of its own.
        let own = FrameEncoder(mappings: records.mappings)
        var modules = timeline.modules
        for module in own.modules where !modules.contains(where: { $0.path == module.path && $0.base == module.base }) {
            modules.append(module)
        }
        let encoder = FrameEncoder(modules: modules)
        section["modules"] = modules.map { module -> [String: Any] in
            ["path": module.path, "buildId": module.buildId ?? NSNull(), "base": module.base, "start": module.start, "end": module.end]
        }
        section["samples"] = Self.sampleRows(records.samples, startNs: startNs, encoder: encoder)
        section["sampling"] = tracedSampling(startNs: 0, stopNs: offset(capture.endNs, from: startNs))
        section["launcher"] = launcherSection(mode: "linked", startNs: startNs, encoder: encoder, samplesWritten: records.samples.count,
                                              boundaries: nil)
        section["threads"] = namedThreads(section, sampled: Set(records.samples.map(\.tid)))
        root["coldstart"] = section
        return root
    }

    /// A whole timeline for a program that does not link Coldstart: phases
    /// loader (exec → la_preinit), library initializers (→ the first sample
    /// in `main`) and main → exit, every sample of every thread.
    package func document() -> [String: Any] {
        let startNs = capture.releaseNs
        let encoder = FrameEncoder(mappings: records.mappings)
        let bounds = boundaries(encoder: encoder)
        let endNs = max(offset(capture.endNs, from: startNs), bounds.loaderEndNs)
        let mainNs = min(max(bounds.mainNs ?? endNs, bounds.loaderEndNs), endNs)
        let status = capture.waitStatus
        let signal = Int(status & 0x7F)
        let exitStatus = Int((status >> 8) & 0xFF)
        let endName = signal != 0 ? Self.signalName(signal) : "exit(\(exitStatus))"
        func usage(_ r: Timeline.Rusage) -> [String: Any] {
            ["minorFaults": r.minorFaults, "majorFaults": r.majorFaults, "voluntarySwitches": r.voluntarySwitches,
             "involuntarySwitches": r.involuntarySwitches, "userNs": r.userNs, "systemNs": r.systemNs]
        }
        // getrusage at la_preinit: the counts before main; the app phase is the rest.
        let preMain = audit?.preinitUsage
        let appUsage = preMain.map { before -> Timeline.Rusage in
            let after = capture.rusage
            return Timeline.Rusage(
                minorFaults: after.minorFaults &- before.minorFaults, majorFaults: after.majorFaults &- before.majorFaults,
                voluntarySwitches: after.voluntarySwitches &- before.voluntarySwitches,
                involuntarySwitches: after.involuntarySwitches &- before.involuntarySwitches,
                userNs: after.userNs &- before.userNs, systemNs: after.systemNs &- before.systemNs)
        }
        let phases: [[String: Any]] = [
            ["name": "kernel exec + loader", "kind": "loader", "startNs": Int64(0), "endNs": bounds.loaderEndNs, "rusage": NSNull()],
            ["name": "library initializers", "kind": "initializers", "startNs": bounds.loaderEndNs, "endNs": mainNs, "rusage": NSNull()],
            ["name": "main → \(endName)", "kind": "app", "startNs": mainNs, "endNs": endNs,
             "rusage": appUsage.map(usage) ?? NSNull()],
        ]
        var launch: [String: Any] = [
            "startNs": startNs, "startSource": "spawn-env", "startPrecisionNs": 0,
            "bootMinusMonotonicNs": capture.bootMinusMonotonicNs, "earliestInitNs": bounds.loaderEndNs,
            "mainNs": mainNs, "endNs": endNs, "completed": signal == 0 && exitStatus == 0,
            "endReason": signal != 0 ? "signal" : exitStatus == 0 ? "exit" : "error-exit",
            "endPhase": phases[2]["name"]!,
        ]
        if let offset = capture.realtimeMinusMonotonicNs, Int64(bitPattern: startNs) + offset > 0 {
            launch["startRealtimeUs"] = UInt64(Int64(bitPattern: startNs) + offset) / 1000
        }
        if signal != 0 {
            launch["signal"] = signal
            launch["signalName"] = endName
        } else {
            launch["exitStatus"] = exitStatus
        }
        var snapshots: [[String: Any]] = []
        if let preMain {
            snapshots.append(usage(preMain).merging(["at": "main", "ns": mainNs]) { a, _ in a })
        }
        snapshots.append(usage(capture.rusage).merging(["at": "end", "ns": endNs]) { a, _ in a })
        let tids = Set(records.samples.map(\.tid))
        let cpuNs = capture.rusage.cpuNs
        let sampling: [String: Any] = capture.tracing ? tracedSampling(startNs: 0, stopNs: endNs) : [
            "clock": "perf-task-clock", "unwinder": "frame-pointer", "requestedHz": capture.hz,
            "effectiveHz": cpuNs > 0 ? Double(records.samples.count) / (Double(cpuNs) / 1e9) : 0,
            "startNs": 0, "stopNs": endNs, "cpuNs": cpuNs, "userNs": capture.rusage.userNs,
            "systemNs": capture.rusage.systemNs, "coldstartCpuNs": 0, "samples": records.samples.count, "dropped": 0,
            "threads": capture.perCPU ? "per-thread" : "main", "threadsSampled": tids.count, "threadsMissed": 0,
        ]
        let threads = threadSection(sampled: tids)
        let section: [String: Any] = [
            "version": Timeline.formatVersion, "launch": launch,
            "process": ["pid": capture.pid, "executable": SharedLibraries.canonicalPath(capture.executable),
                        "kernelRelease": capture.kernelRelease, "swiftVersion": "unknown"],
            "rusage": snapshots, "phases": phases, "marks": [Any](), "spans": [Any](), "threads": threads,
            "dropped": ["events": 0, "nameBytes": 0], "sampling": sampling,
            "modules": encoder.modules.map { module -> [String: Any] in
                ["path": module.path, "buildId": module.buildId ?? NSNull(), "base": module.base, "start": module.start, "end": module.end]
            },
            "samples": Self.sampleRows(records.samples, startNs: startNs, encoder: encoder),
            "launcher": launcherSection(mode: "not linked", startNs: startNs, encoder: encoder,
                                        samplesWritten: records.samples.count, boundaries: bounds),
        ]
        var events: [Any] = [
            ["ph": "M", "pid": capture.pid, "tid": 0, "name": "process_name",
             "args": ["name": (capture.executable as NSString).lastPathComponent]] as [String: Any],
            ["ph": "M", "pid": capture.pid, "tid": 0, "name": "thread_name", "args": ["name": "Launch phases"]] as [String: Any],
        ]
        let spans: [Int64] = [0, bounds.loaderEndNs, mainNs, endNs]
        for thread in threads {
            events.append(["ph": "M", "pid": capture.pid, "tid": thread["tid"]!, "name": "thread_name",
                           "args": ["name": thread["name"]!]] as [String: Any])
        }
        for (index, phase) in phases.enumerated() {
            events.append(["ph": "X", "pid": capture.pid, "tid": 0, "name": phase["name"]!, "ts": Double(spans[index]) / 1000,
                           "dur": Double(spans[index + 1] - spans[index]) / 1000, "args": ["kind": phase["kind"]!]] as [String: Any])
        }
        events.append(["ph": "i", "s": "g", "pid": capture.pid, "tid": 0, "name": endName, "ts": Double(endNs) / 1000] as [String: Any])
        return [
            "displayTimeUnit": "ms",
            "otherData": ["coldstartFormat": 1, "executable": SharedLibraries.canonicalPath(capture.executable),
                          "pid": capture.pid, "clock": "CLOCK_MONOTONIC", "startSource": "spawn-env",
                          "startPrecisionMs": 0, "kernelRelease": capture.kernelRelease, "swiftVersion": "unknown",
                          "completed": launch["completed"]!] as [String: Any],
            "traceEvents": events,
            "coldstart": section,
        ]
    }

    /// The threads section of a program without Coldstart: the main thread
    /// ("main", as the in-process writer names it), then every other thread
    /// sampled or named in the records, by tid, each with the kernel's name
    /// at its end (`PerfRecords.threadNames`), "thread TID" when no record
    /// named it.
    func threadSection(sampled: Set<Int>) -> [[String: Any]] {
        let names = records.threadNames(pid: capture.pid)
        let others = sampled.union(names.keys).subtracting([capture.pid]).sorted()
        return [["tid": capture.pid, "name": "main"]] + others.map { ["tid": $0, "name": names[$0] ?? "thread \($0)"] }
    }

    /// A linked program's threads section with the kernel's names from the
    /// launcher's records where the program had none of its own: a thread
    /// that ended before the file was written is "thread TID" there (its
    /// name could no longer be read), and one the launcher alone sampled
    /// (before the program's sampler ran) is not listed.
    func namedThreads(_ section: [String: Any], sampled: Set<Int>) -> [Any] {
        let names = records.threadNames(pid: capture.pid)
        var listed = Set<Int>()
        var threads: [Any] = (section["threads"] as? [Any] ?? []).map { entry in
            guard var thread = entry as? [String: Any], let tid = (thread["tid"] as? NSNumber)?.intValue else { return entry }
            listed.insert(tid)
            if let name = names[tid], thread["name"] as? String == "thread \(tid)" { thread["name"] = name }
            return thread
        }
        for tid in sampled.subtracting(listed).sorted() {
            threads.append(["tid": tid, "name": tid == capture.pid ? "main" : names[tid] ?? "thread \(tid)"])
        }
        return threads
    }

    static func signalName(_ signal: Int) -> String {
        let names = [1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
                     9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM"]
        return names[signal] ?? "signal \(signal)"
    }
}

extension LauncherTimeline {
    /// The document as timeline text (keys sorted, as `coldstart symbolize` writes).
    package static func encode(_ document: [String: Any]) throws -> Data {
        var json = JSONText(capacity: 1 << 20, escaping: .plain)
        try json.document(document)
        json.raw("\n")
        return Data(json.bytes)
    }
}
