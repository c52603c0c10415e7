import Foundation

extension LaunchReport.BlockedTime {
    /// The report's "why the main thread was not running" section.
    /// Tables are narrowed to `width` when given.
    func textLines(callSiteLimit: Int = 10, fileLimit: Int = 10, rowsPerPhase: Int = 4, width: Int? = nil) -> [String] {
        guard watcher.watchedTheLaunch else {
            return ["Main thread: why it was not running — not known: the watcher started after the launch ended "
                + "(its first look at \(Self.number(watcher.startMs)) ms, the launch ended at \(Self.number(watcher.launchEndMs)) ms)"]
        }
        var lines = ["Main thread: why it was not running (CLOCK_MONOTONIC ms; CPU and run-queue"
            + " times are the kernel's schedstat, exact; a cause is known to one look, "
            + Self.number(watcher.lookPeriodMs) + " ms)"]
        var table = Table(columns: [
            .init("phase", .left), .init("wall ms", .right), .init("running", .right), .init("waiting for CPU", .right),
            .init("blocked", .right), .init("not watched", .right, droppable: true), .init("blocked mostly on", .left, droppable: true),
        ])
        for split in [launch] + phases {
            table.add([
                LaunchReport.printable(split.name), Self.number(split.wallMs),
                Self.share(split.runningMs, of: split.wallMs), contention(split),
                Self.share(split.blockedMs, of: split.wallMs),
                split.notWatchedMs > 0.005 ? Self.number(split.notWatchedMs) : "–",
                split.blocked.first.map { LaunchReport.printable($0.what, limit: 70) } ?? "–",
            ])
        }
        lines += table.render(width: width)

        let detailed = phases.filter { $0.blocked.contains { $0.ms >= 0.05 } }
        if !detailed.isEmpty {
            lines += ["", "Blocked time by cause, per phase (ms, share of the phase's wall time)"]
            for phase in detailed {
                lines.append("  \(LaunchReport.printable(phase.name)) (\(Self.number(phase.wallMs)) ms)")
                for row in phase.blocked.prefix(rowsPerPhase) where row.ms >= 0.05 {
                    lines.append("    " + Self.pad(Self.number(row.ms), 9) + "  " + Self.pad(LaunchReport.format(row.percent, decimals: 1) + "%", 6)
                        + "  " + LaunchReport.printable(row.what, limit: 100))
                }
                if phase.majorFaults > 0 {
                    lines.append("    (~\(phase.majorFaults) major page faults on the main thread: segments shared between phases by time)")
                }
            }
        }

        if !callSites.isEmpty {
            lines += ["", "Where the main thread blocked (top \(min(callSiteLimit, callSites.count)) call sites; ms blocked during the launch; stacks leaf first)"]
            for site in callSites.prefix(callSiteLimit) {
                let function = site.function.map { " in " + LaunchReport.printable($0, limit: 80) } ?? ""
                lines.append("  " + Self.pad(Self.number(site.ms), 9) + " ms  \(site.count)×  "
                    + LaunchReport.printable(site.what, limit: 80) + function)
                if !site.stack.isEmpty {
                    lines.append("      " + site.stack.prefix(8).map { LaunchReport.printable($0, limit: 50) }.joined(separator: " ← "))
                }
            }
        }

        if !offCPUFunctions.isEmpty {
            lines += ["", "Off-CPU time by function (main thread, blocked with the function on the stack; not CPU time: see the sampled functions for that)"]
            for function in offCPUFunctions.prefix(callSiteLimit) {
                lines.append("  " + Self.pad(Self.number(function.ms), 9) + " ms  " + Self.pad(LaunchReport.format(function.percent, decimals: 1) + "%", 6)
                    + "  " + Self.pad("\(function.blocks)×", 4) + "  " + LaunchReport.printable(function.name, limit: 90)
                    + (function.module.isEmpty ? "" : "  (\(LaunchReport.printable(function.module, limit: 40)))"))
            }
        }

        if !files.isEmpty {
            lines += ["", "Files the launch waited on (all threads; ms blocked, blocking calls)"]
            for file in files.prefix(fileLimit) {
                lines.append("  " + Self.pad(Self.number(file.ms), 9) + " ms  " + Self.pad("\(file.calls)×", 4) + "  "
                    + Self.pad(file.operations.joined(separator: ","), 10) + "  " + LaunchReport.printable(file.path, limit: 100))
            }
        }

        if !threads.isEmpty {
            lines += ["", "Threads (ms from each thread's start to the launch's end: on a CPU / waiting for a CPU / blocked while watched)"]
            var rows = Table(columns: [
                .init("thread", .left), .init("CPU", .right), .init("waiting for CPU", .right), .init("blocked", .right),
                .init("mostly blocked on", .left, droppable: true),
            ])
            for thread in threads {
                var name = "\(LaunchReport.printable(thread.name, limit: 20)) (\(thread.tid))"
                if thread.exited { name += " exited" }
                if !thread.watched { name += " (totals only)" }
                rows.add([
                    name, Self.number(thread.cpuMs), Self.number(thread.runQueueMs), Self.number(thread.blockedMs),
                    thread.mostlyBlockedOn.map { LaunchReport.printable($0, limit: 70) } ?? "–",
                ])
            }
            lines += rows.render(width: width)
        }

        lines += ["", "Watcher: \(Self.number(watcher.requestedHz, decimals: 0)) Hz asked, \(Self.number(watcher.effectiveHz, decimals: 0)) Hz seen,"
            + " \(Self.number(watcher.startMs)) → \(Self.number(watcher.stopMs)) ms; its own CPU \(Self.number(watcher.cpuMsPerSecond)) ms"
            + " per second watched (a look: median \(Self.number(watcher.tickMedianUs, decimals: 1)) µs, p99 \(Self.number(watcher.tickP99Us, decimals: 1)) µs);"
            + " blocked stacks: \(watcher.stackUnwinder)"]
        lines += watcher.notes.map { "  note: " + $0 }
        return lines
    }

    private func contention(_ split: PhaseSplit) -> String {
        var text = Self.share(split.runQueueMs, of: split.wallMs)
        if let threads = split.runnableThreads, split.runQueueMs >= 0.05 {
            text += ", \(LaunchReport.format(threads, decimals: 1)) runnable"
            if let cpus = watcher.cpus { text += "/\(cpus) CPUs" }
        }
        return text
    }

    private static func share(_ ms: Double, of wall: Double) -> String {
        guard wall >= 0.01 else { return number(ms) }
        return number(ms) + " (" + LaunchReport.format(ms / wall * 100, decimals: 0) + "%)"
    }

    private static func number(_ value: Double, decimals: Int = 2) -> String { LaunchReport.format(value, decimals: decimals) }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}
