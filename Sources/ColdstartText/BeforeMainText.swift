import ColdstartAnalysis
import Foundation

extension BeforeMain {
    /// The section as text; `statistics` adds each library's relocation counts.
    package func text(statistics: LoaderStatistics? = nil) -> String {
        func ms(_ v: Double) -> String { String(format: "%.2f", v) }
        // Function names clipped for a line, never two alike.
        func functions(_ entries: [Entry]) -> [String] { Table.clipDistinct(entries.map { LaunchReport.functionName($0.name) }, to: 60) }
        let how = traced ? "ptrace samples from exec, perf refused" : "perf events from exec"
        var lines = ["Before main (launcher: \(how)\(mode == "linked" ? "" : "; the program does not link Coldstart"))"]
        // The audit module's work is Coldstart's in every loader figure (`AuditModuleWork`).
        lines.append("  kernel exec + loader: \(ms(loaderMs)) ms, \(loaderSamples) samples of the main thread"
            + (loaderColdstartsSamples.map { " (and Coldstart's \($0): ld.so loading its LD_AUDIT module and the module's callbacks)" } ?? "")
            + (lostRecords > 0 ? "; \(lostRecords) records lost" : ""))
        if let split = beforeMainKernel {
            lines.append("  before main: \(ms(split.userMs)) + \(ms(split.kernelMs)) ms of CPU in user + kernel mode ("
                + String(format: "%.0f%%", split.kernelPercent) + " kernel: getrusage at main less user samples × period"
                + (split.coldstartMs.map {
                    " and Coldstart's \(ms($0)) ms: ld.so loading its LD_AUDIT module, by wall time, and the module's callbacks"
                } ?? "")
                + ")")
        }
        if !kernelByPhase.isEmpty {
            lines.append("  CPU by phase, user + kernel (user samples × period; the kernel's: "
                + (kernelSampled ? "kernel samples × period, or " : "") + "getrusage CPU less that and Coldstart's): "
                + kernelByPhase.map { entry in
                    let apart = [entry.split.coldstartMs.map { "Coldstart's \(ms($0)) ms" }, entry.split.exitMs.map { "exit \(ms($0)) ms" }]
                        .compactMap { $0 }
                    return "\(entry.phase) \(ms(entry.split.userMs)) + \(ms(entry.split.kernelMs)) ms ("
                        + String(format: "%.0f%%", entry.split.kernelPercent) + " kernel" + apart.map { "; " + $0 }.joined() + ")"
                }.joined(separator: " · "))
        }
        if !loaderFunctions.isEmpty {
            lines.append("  loader functions (self, samples × period"
                + (loaderColdstartsSamples.map { "; Coldstart's \($0) samples left out" } ?? "") + "): "
                + zip(functions(loaderFunctions), loaderFunctions).map { "\($0) \(ms($1.ms)) ms" }.joined(separator: " · "))
        }
        if !mapped.isEmpty {
            let total = mapped.reduce(0) { $0 + $1.ms }
            let what = objects?.phrase() ?? "\(mapped.count) objects"
            lines.append("  objects mapped (LD_AUDIT la_objopen: \(what); \(ms(total)) ms): slowest "
                + mapped.prefix(6).map { "\($0.name) \(ms($0.ms))" }.joined(separator: " · "))
        } else {
            lines.append("  objects mapped: not timed (the LD_AUDIT module did not run)")
        }
        if !relocation.isEmpty {
            let counts = Dictionary((statistics?.objects ?? []).map { ($0.name, $0) }) { first, _ in first }
            lines.append("  relocation by library (loader samples after the last mapping, by the file it was writing"
                + (statistics == nil ? "" : "; symbolic relocations and look-ups from its ELF file") + "): "
                + relocation.map { entry in
                    "\(entry.name) \(ms(entry.ms)) ms" + (counts[entry.name].map { " (\($0.symbolic) symbolic, \($0.lookups) look-ups)" } ?? "")
                }.joined(separator: " · "))
        }
        if faultPeriod > 0 {
            lines.append("  page faults in user mode by phase (" + (faultPeriod == 1 ? "every fault" : "one in \(faultPeriod) faults") + "):")
            for phase in phaseFaults where phase.faults > 0 {
                lines.append("    \(phase.phase): \(phase.faults)"
                    + (phase.coldstarts.map { " (and Coldstart's \($0): ld.so loading its LD_AUDIT module)" } ?? "") + "; files "
                    + phase.files.map { "\($0.name) \($0.count)" }.joined(separator: " · ")
                    + "; code " + zip(functions(phase.code), phase.code).map { "\($0) \($1.count)" }.joined(separator: " · "))
            }
        }
        return lines.joined(separator: "\n")
    }
}
