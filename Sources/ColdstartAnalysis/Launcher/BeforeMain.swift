import Foundation

/// What the launcher section of a timeline says about the time before
/// `main` (docs/before-main.md): each library's mapping time (LD_AUDIT), the
/// loader's relocation work by library, page faults per phase by file and by
/// code, and the kernel's share of each phase's CPU.
package struct BeforeMain: Codable, Sendable {
    package struct Entry: Codable, Sendable {
        package var name: String
        package var ms: Double
        package var count: Int
    }

    package struct PhaseFaults: Codable, Sendable {
        package var phase: String
        /// The program's: those of ld.so loading the audit module left out.
        package var faults: Int
        /// ld.so loading the audit module and its namespace's libc
        /// (`AuditModuleWork.loading`), in none of `files` and `code`
        /// (nil: none).
        package var coldstarts: Int?
        package var files: [Entry]
        package var code: [Entry]
    }

    package var mode: String
    /// Sampled by tracing (ptrace) because perf was refused: no page faults.
    package var traced: Bool
    package var loaderMs: Double
    /// The program's samples of its main thread in the loader phase: those
    /// of the audit module's work (`AuditModuleWork`) left out, as in
    /// `loaderFunctions`, `relocation` and the kernel share's split.
    package var loaderSamples: Int
    /// The audit module's samples there, Coldstart's (nil: none).
    package var loaderColdstartsSamples: Int?
    package var loaderFunctions: [Entry]
    /// la_objopen gaps: the time the loader took to find and map each object.
    package var mapped: [Entry]
    /// What those objects are, counted as every figure of the report counts them.
    package var objects: LoadedObjects?
    /// Loader samples after the last object was mapped, by the file the
    /// loader last faulted on (the one it was relocating).
    package var relocation: [Entry]
    package var faultPeriod: Int
    package var phaseFaults: [PhaseFaults]
    /// Each phase's CPU split into sampled user time and kernel time, where
    /// both are known (`KernelShare`), in phase order.
    package var kernelByPhase: [PhaseKernel]
    /// The task clock sampled kernel mode too (perf_event_paranoid allowed it).
    package var kernelSampled: Bool
    /// Everything before `main` together, when its phases have no split of
    /// their own (no kernel-mode samples): `KernelShare.beforeMain`.
    package var beforeMainKernel: KernelShare?
    package var lostRecords: Int

    package struct PhaseKernel: Codable, Sendable {
        package var phase: String
        package var split: KernelShare
    }

    /// Nil when the timeline has no launcher section. `symbols` names frames
    /// already named (the report's); the rest are looked up in the modules.
    /// `symbolizer` names the fault frames `known` lacks (by default one
    /// over the modules' files; a report passes its own, whose modules are
    /// read already).
    package init?(_ timeline: Timeline, symbols known: [String: Timeline.Symbol] = [:], symbolizer: Symbolizer? = nil) {
        guard let section = (timeline.parsedDocument["coldstart"] as? [String: Any])?["launcher"] as? [String: Any] else { return nil }
        mode = section["mode"] as? String ?? "?"
        traced = section["threads"] as? String == "ptrace"
        let period = (section["faultPeriod"] as? NSNumber)?.intValue ?? 0
        faultPeriod = period
        lostRecords = (section["lostRecords"] as? NSNumber)?.intValue ?? 0
        let loader = timeline.phases.first { $0.kind == "loader" }
        let loaderEnd = loader?.endNs ?? 0
        loaderMs = Double(loaderEnd) / 1e6
        let msPerSample = (timeline.sampling?.nsPerSample ?? 1e6) / 1e6
        let isLoader = Set(timeline.modules.indices.filter { LauncherTimeline.isDynamicLoader(timeline.modules[$0].path) })

        let files = section["faultFiles"] as? [String] ?? []
        // [ns, tid, module, address, file, fileOffset]; rows that do not fit the file are left out.
        let moduleCount = timeline.modules.count
        let faultRows = (section["faults"] as? [[NSNumber]] ?? []).filter {
            $0.count == 6 && $0[2].intValue >= -1 && $0[2].intValue < moduleCount && $0[4].intValue < files.count
        }
        let faultFrames = faultRows.map { Timeline.Frame(module: $0[2].intValue, address: $0[3].uint64Value) }
        let auditWork = AuditModuleWork(timeline, launcher: section)
        let mainThread = timeline.samples.filter { $0.tid == timeline.process.pid && $0.ns < loaderEnd }
        let early = mainThread.filter { !auditWork.contains($0) }
        var symbols = timeline.symbols.merging(known) { own, _ in own }
        let leaves = early.compactMap(\.frames.first) + faultFrames
        // A symbolized file names its fault frames too, and reads no binary.
        if !timeline.isSymbolized, leaves.contains(where: { symbols[$0.key] == nil }) {
            let named = (symbolizer ?? Symbolizer(modules: timeline.modules)).symbolize(leaves.map { Timeline.Sample(ns: 0, tid: 0, frames: [$0]) })
            symbols.merge(named.symbols) { own, _ in own }
        }
        // Whole: two functions cut to one text would be counted as one (the text clips them).
        func name(_ frame: Timeline.Frame) -> String {
            symbols[frame.key]?.name ?? "0x" + String(frame.address, radix: 16)
        }
        func top(_ counts: [String: Int], scale: Double, limit: Int = 8) -> [Entry] {
            counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(limit)
                .map { Entry(name: $0.key, ms: Double($0.value) * scale, count: $0.value) }
        }

        loaderSamples = early.count
        loaderColdstartsSamples = mainThread.count > early.count ? mainThread.count - early.count : nil
        loaderFunctions = top(early.reduce(into: [:]) { $0[$1.frames.first.map(name) ?? "?", default: 0] += 1 }, scale: msPerSample)

        let audit = section["audit"] as? [String: Any]
        // The loader's mappings: before main. One dlopen'ed after it (libunwind,
        // by Coldstart's own threads) was named the slowest object, its gap
        // since the last of the loader's mappings (issue 39, item 3).
        let objects = (audit?["objects"] as? [[String: Any]] ?? []).compactMap { object -> (String, Int64)? in
            guard let path = object["path"] as? String, let ns = (object["ns"] as? NSNumber)?.int64Value,
                  ns < timeline.launch.mainNs else { return nil }
            return ((path as NSString).lastPathComponent, ns)
        }
        var previous = (audit?["versionNs"] as? NSNumber)?.int64Value ?? 0
        var gaps: [Entry] = []
        for (path, ns) in objects {
            gaps.append(Entry(name: path == "-" ? "(the executable)" : path, ms: Double(ns - previous) / 1e6, count: 1))
            previous = ns
        }
        mapped = gaps.sorted { $0.ms > $1.ms }
        self.objects = LoadedObjects(timeline)

        // Relocation: which object's pages the loader was writing.
        let lastMapped = objects.last?.1 ?? 0
        let loaderFaults = faultRows.filter {
            $0[1].intValue == timeline.process.pid && isLoader.contains($0[2].intValue) && $0[4].intValue >= 0
                && $0[4].intValue < files.count && files[$0[4].intValue].hasPrefix("/")
        }
        var relocating: [String: Int] = [:]
        var cursor = 0
        for sample in early where sample.ns >= lastMapped && sample.frames.first.map({ isLoader.contains($0.module) }) == true {
            while cursor < loaderFaults.count && loaderFaults[cursor][0].int64Value <= sample.ns { cursor += 1 }
            guard cursor > 0 else { continue }
            let file = files[loaderFaults[cursor - 1][4].intValue]
            relocating[(file as NSString).lastPathComponent, default: 0] += 1
        }
        relocation = top(relocating, scale: msPerSample)

        phaseFaults = timeline.phases.map { phase in
            let all = faultRows.filter { $0[0].int64Value >= phase.startNs && $0[0].int64Value < phase.endNs }
            let inside = all.filter { !auditWork.isLoading(ns: $0[0].int64Value, tid: $0[1].intValue) }
            let byFile: [String: Int] = inside.reduce(into: [:]) {
                let index = $1[4].intValue
                $0[index >= 0 && index < files.count ? (files[index] as NSString).lastPathComponent : "(heap, stack or unmapped)", default: 0] += 1
            }
            let byCode: [String: Int] = inside.reduce(into: [:]) {
                $0[name(Timeline.Frame(module: $1[2].intValue, address: $1[3].uint64Value)), default: 0] += 1
            }
            let coldstarts = (all.count - inside.count) * max(period, 1)
            return PhaseFaults(phase: phase.name, faults: inside.count * max(period, 1), coldstarts: coldstarts > 0 ? coldstarts : nil,
                               files: top(byFile, scale: 0, limit: 5), code: top(byCode, scale: 0, limit: 5))
        }
        kernelSampled = section["kernelSamples"] != nil
        kernelByPhase = zip(timeline.phases, KernelShare.phases(timeline)).compactMap { phase, split in
            split.map { PhaseKernel(phase: phase.name, split: $0) }
        }
        let beforeMainSplit = timeline.phases.contains { $0.endNs <= timeline.launch.mainNs && $0.kind == "loader" }
            && !kernelByPhase.contains { entry in timeline.phases.contains { $0.name == entry.phase && $0.kind == "loader" } }
        beforeMainKernel = beforeMainSplit ? KernelShare.beforeMain(timeline) : nil
    }
}
