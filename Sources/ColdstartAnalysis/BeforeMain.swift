import Foundation

/// What the launcher section of a timeline says about the time before
/// `main` (docs/before-main.md): each library's mapping time (LD_AUDIT), the
/// loader's relocation work by library, page faults per phase by file and by
/// code, and the kernel's share of the loader phase.
package struct BeforeMain {
    package struct Entry {
        package var name: String
        package var ms: Double
        package var count: Int
    }

    package struct PhaseFaults {
        package var phase: String
        package var faults: Int
        package var files: [Entry]
        package var code: [Entry]
    }

    package var mode: String
    package var loaderMs: Double
    package var loaderSamples: Int
    package var loaderFunctions: [Entry]
    /// la_objopen gaps: the time the loader took to find and map each object.
    package var mapped: [Entry]
    /// Loader samples after the last object was mapped, by the file the
    /// loader last faulted on (the one it was relocating).
    package var relocation: [Entry]
    package var faultPeriod: Int
    package var phaseFaults: [PhaseFaults]
    /// CPU time before main (getrusage at `main`: la_preinit, or a linked
    /// app's first constructor) and the part of it its user-mode samples do
    /// not cover (1 − samples × period / CPU): the kernel's share, good to
    /// about √samples periods. getrusage's own user/system split is made from
    /// 4 ms ticks, too coarse for a launch this short.
    package var preMainCPUMs: Double?
    package var preMainKernelShare: Double?
    package var lostRecords: Int

    /// Nil when the timeline has no launcher section.
    package init?(_ timeline: Timeline) {
        guard let section = (timeline.document["coldstart"] as? [String: Any])?["launcher"] as? [String: Any] else { return nil }
        mode = section["mode"] as? String ?? "?"
        let period = (section["faultPeriod"] as? NSNumber)?.intValue ?? 0
        faultPeriod = period
        lostRecords = (section["lostRecords"] as? NSNumber)?.intValue ?? 0
        let loader = timeline.phases.first { $0.kind == "loader" }
        let loaderEnd = loader?.endNs ?? 0
        loaderMs = Double(loaderEnd) / 1e6
        let hz = timeline.sampling.map { $0.effectiveHz > 0 ? $0.effectiveHz : $0.requestedHz } ?? 1000
        let msPerSample = 1000 / hz
        let isLoader = Set(timeline.modules.indices.filter { LauncherTimeline.isDynamicLoader(timeline.modules[$0].path) })

        let files = section["faultFiles"] as? [String] ?? []
        // [ns, tid, module, address, file, fileOffset]; rows that do not fit the file are left out.
        let moduleCount = timeline.modules.count
        let faultRows = (section["faults"] as? [[NSNumber]] ?? []).filter {
            $0.count == 6 && $0[2].intValue >= -1 && $0[2].intValue < moduleCount && $0[4].intValue < files.count
        }
        let faultFrames = faultRows.map { Timeline.Frame(module: $0[2].intValue, address: $0[3].uint64Value) }
        let early = timeline.samples.filter { $0.tid == timeline.process.pid && $0.ns < loaderEnd }
        var symbols = timeline.symbols
        let leaves = early.compactMap(\.frames.first) + faultFrames
        if leaves.contains(where: { symbols[$0.key] == nil }) {
            let named = Symbolizer(modules: timeline.modules).symbolize(leaves.map { Timeline.Sample(ns: 0, tid: 0, frames: [$0]) })
            symbols.merge(named.symbols) { own, _ in own }
        }
        // Short enough for a line of the report: C++ and Swift names run to hundreds of characters.
        func name(_ frame: Timeline.Frame) -> String {
            let full = symbols[frame.key]?.name ?? "0x" + String(frame.address, radix: 16)
            return full.count > 60 ? full.prefix(59) + "…" : full
        }
        func top(_ counts: [String: Int], scale: Double, limit: Int = 8) -> [Entry] {
            counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(limit)
                .map { Entry(name: $0.key, ms: Double($0.value) * scale, count: $0.value) }
        }

        loaderSamples = early.count
        loaderFunctions = top(early.reduce(into: [:]) { $0[$1.frames.first.map(name) ?? "?", default: 0] += 1 }, scale: msPerSample)

        let audit = section["audit"] as? [String: Any]
        let objects = (audit?["objects"] as? [[String: Any]] ?? []).compactMap { object -> (String, Int64)? in
            guard let path = object["path"] as? String, let ns = (object["ns"] as? NSNumber)?.int64Value else { return nil }
            return ((path as NSString).lastPathComponent, ns)
        }
        var previous = (audit?["versionNs"] as? NSNumber)?.int64Value ?? 0
        var gaps: [Entry] = []
        for (path, ns) in objects {
            gaps.append(Entry(name: path == "-" ? "(the executable)" : path, ms: Double(ns - previous) / 1e6, count: 1))
            previous = ns
        }
        mapped = gaps.sorted { $0.ms > $1.ms }

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
            let inside = faultRows.filter { $0[0].int64Value >= phase.startNs && $0[0].int64Value < phase.endNs }
            let byFile: [String: Int] = inside.reduce(into: [:]) {
                let index = $1[4].intValue
                $0[index >= 0 && index < files.count ? (files[index] as NSString).lastPathComponent : "(heap, stack or unmapped)", default: 0] += 1
            }
            let byCode: [String: Int] = inside.reduce(into: [:]) {
                $0[name(Timeline.Frame(module: $1[2].intValue, address: $1[3].uint64Value)), default: 0] += 1
            }
            return PhaseFaults(phase: phase.name, faults: inside.count * max(period, 1),
                               files: top(byFile, scale: 0, limit: 5), code: top(byCode, scale: 0, limit: 5))
        }
        let requestedHz = (section["requestedHz"] as? NSNumber)?.doubleValue ?? 0
        if let snapshot = timeline.rusage.first(where: { $0.at == "main" }), snapshot.usage.cpuNs > 0, requestedHz > 0 {
            let sampled = timeline.samples.filter { $0.ns < timeline.launch.mainNs }.count
            preMainCPUMs = Double(snapshot.usage.cpuNs) / 1e6
            preMainKernelShare = max(0, 1 - Double(sampled) * 1e9 / requestedHz / Double(snapshot.usage.cpuNs))
        }
    }

    package func text() -> String {
        func ms(_ v: Double) -> String { String(format: "%.2f", v) }
        var lines = ["Before main (launcher: perf events from exec\(mode == "linked" ? "" : "; the program does not link Coldstart"))"]
        lines.append("  kernel exec + loader: \(ms(loaderMs)) ms, \(loaderSamples) samples of the main thread"
            + (lostRecords > 0 ? "; \(lostRecords) records lost" : ""))
        if let cpu = preMainCPUMs, let share = preMainKernelShare {
            lines.append("  before main: \(ms(cpu)) ms of CPU, " + String(format: "~%.0f%%", share * 100)
                + " of it in the kernel (exec, page faults, mmap: CPU time less the sampled user time)")
        }
        if !loaderFunctions.isEmpty {
            lines.append("  loader functions (self, samples × period): "
                + loaderFunctions.map { "\($0.name) \(ms($0.ms)) ms" }.joined(separator: " · "))
        }
        if !mapped.isEmpty {
            let total = mapped.reduce(0) { $0 + $1.ms }
            lines.append("  objects mapped (LD_AUDIT la_objopen, \(mapped.count) objects, \(ms(total)) ms): slowest "
                + mapped.prefix(6).map { "\($0.name) \(ms($0.ms))" }.joined(separator: " · "))
        } else {
            lines.append("  objects mapped: not timed (the LD_AUDIT module did not run)")
        }
        if !relocation.isEmpty {
            lines.append("  relocation by library (loader samples after the last mapping, by the file it was writing): "
                + relocation.map { "\($0.name) \(ms($0.ms)) ms" }.joined(separator: " · "))
        }
        if faultPeriod > 0 {
            lines.append("  page faults in user mode by phase (1 sample per \(faultPeriod)): ")
            for phase in phaseFaults where phase.faults > 0 {
                lines.append("    \(phase.phase): \(phase.faults); files "
                    + phase.files.map { "\($0.name) \($0.count)" }.joined(separator: " · ")
                    + "; code " + phase.code.map { "\($0.name) \($0.count)" }.joined(separator: " · "))
            }
        }
        return lines.joined(separator: "\n")
    }
}
