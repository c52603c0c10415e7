import ColdstartAnalysis
import Foundation

extension LaunchReport.BlockedTime {
    /// The report's "why the critical path was not running" section.
    /// Tables are narrowed to `width` when given.
    func textLines(callSiteLimit: Int = 10, fileLimit: Int = 10, rowsPerPhase: Int = 4, width: Int? = nil) -> [String] {
        guard watcher.watchedTheLaunch else {
            return ["Critical path: why it was not running — not known: the watcher started after the launch ended "
                + "(its first look at \(Self.number(watcher.startMs)) ms, the launch ended at \(Self.number(watcher.launchEndMs)) ms)"]
        }
        let moves = path.contains { $0.tid != mainTid }
        var lines = ["Critical path: why it was not running (" + (moves
            ? "the main thread, then the threads that recorded the launch's marks and spans"
            : "the main thread") + "; CLOCK_MONOTONIC ms; CPU and run-queue times are the kernel's schedstat, exact;"
            + " a cause is known to one look, " + Self.number(watcher.lookPeriodMs) + " ms)"]
        var table = Table(columns: [
            .init("phase", .left), .init("wall ms", .right), .init("running", .right), .init("waiting for CPU", .right),
            .init("blocked", .right), .init("suspended", .right), .init("not watched", .right, droppable: true),
            .init("blocked mostly on", .left, droppable: true),
        ])
        for split in [launch] + phases {
            let parts = Self.shares(split)
            table.add([
                LaunchReport.printable(split.name), Self.number(split.wallMs),
                parts[0], parts[1] + contention(split), parts[2], parts[3], parts[4],
                split.blocked.first.map { LaunchReport.printable($0.what, limit: 70) } ?? "–",
            ])
        }
        lines += table.render(width: width)
        if let parked = firstThreadParked {
            lines.append("  the main thread parked in dispatch_main() (\(parked.call)) at \(Self.number(parked.atMs)) ms, for"
                + " \(Self.number(parked.ms)) ms of the launch: an async main's main actor runs on dispatch workers after its first"
                + " await; parked is never a cause")
        }
        if moves {
            lines += ["", "Where the launch ran, per phase (ms on the critical path; suspended: no thread of the path had launch work)"]
            for phase in phases where phase.onPath.count > 1 || phase.onPath.first?.tid != mainTid || phase.suspendedMs >= 0.05 {
                var line = "  \(LaunchReport.printable(phase.name)): "
                    + phase.onPath.map { "\(LaunchReport.printable($0.thread, limit: 50)) \(Self.number($0.ms))" }.joined(separator: ", ")
                if phase.suspendedMs >= 0.05 {
                    line += "; suspended \(Self.number(phase.suspendedMs)) ms, while the launch's other threads ran"
                        + " \(Self.number(phase.othersCPUWhileSuspendedMs)) ms of CPU"
                }
                lines.append(line)
            }
        }

        let detailed = phases.filter { $0.blocked.contains { $0.ms >= 0.05 } }
        if !detailed.isEmpty {
            lines += ["", "Blocked time by cause, per phase (ms, share of the phase's wall time)"]
            for phase in detailed {
                lines.append("  \(LaunchReport.printable(phase.name)) (\(Self.number(phase.wallMs)) ms)")
                for row in phase.blocked.prefix(rowsPerPhase) where row.ms >= 0.05 {
                    lines.append("    " + Self.pad(Self.number(row.ms), 9) + "  " + Self.pad(Figure.format(row.percent, decimals: 1) + "%", 6)
                        + "  " + LaunchReport.printable(row.what, limit: 100))
                }
                if phase.majorFaults > 0 {
                    lines.append("    (~\(phase.majorFaults) major page faults on the main thread: segments shared between phases by time)")
                }
            }
        }

        if !callSites.isEmpty {
            lines += ["", "Where the critical path blocked (top \(min(callSiteLimit, callSites.count)) call sites; ms blocked during the launch; stacks leaf first)"]
            let shown = Array(callSites.prefix(callSiteLimit))
            let names = Table.clipDistinct(shown.map { LaunchReport.functionName($0.function ?? "") }, to: 80)
            for (site, name) in zip(shown, names) {
                let function = site.function == nil ? "" : " in " + name
                lines.append("  " + Self.pad(Self.number(site.ms), 9) + " ms  \(site.count)×  "
                    + LaunchReport.printable(site.what, limit: 80) + function
                    + (moves ? " (on \(LaunchReport.printable(site.thread, limit: 50)))" : ""))
                if !site.stack.isEmpty {
                    lines.append("      " + site.stack.prefix(8).map { LaunchReport.functionName($0, limit: 50) }.joined(separator: " ← "))
                }
            }
        }

        if !offCPUFunctions.isEmpty {
            lines += ["", "Off-CPU time by function (critical path, blocked with the function on the stack; not CPU time: see the sampled functions for that)"]
            let shown = Array(offCPUFunctions.prefix(callSiteLimit))
            for (function, name) in zip(shown, Table.clipDistinct(shown.map { LaunchReport.functionName($0.name) }, to: 90)) {
                lines.append("  " + Self.pad(Self.number(function.ms), 9) + " ms  " + Self.pad(Figure.format(function.percent, decimals: 1) + "%", 6)
                    + "  " + Self.pad("\(function.blocks)×", 4) + "  " + name
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
            lines += ["", "Threads (ms from each thread's start to the launch's end: on a CPU / waiting for a CPU / off the CPU while watched; on the critical path)"]
            var rows = Table(columns: [
                .init("thread", .left), .init("CPU", .right), .init("waiting for CPU", .right), .init("off CPU", .right),
                .init("on path", .right), .init("mostly off the CPU on", .left, droppable: true),
            ])
            for thread in threads {
                var name = "\(LaunchReport.printable(thread.name, limit: 40)) (\(thread.tid))"
                if thread.exited { name += " exited" }
                if !thread.watched { name += " (totals only)" }
                rows.add([
                    name, Self.number(thread.cpuMs), Self.number(thread.runQueueMs), Self.number(thread.blockedMs),
                    thread.onPathMs > 0 ? Self.number(thread.onPathMs) : "–",
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

    /// The runnable threads behind a run-queue wait, to follow its share.
    private func contention(_ split: PhaseSplit) -> String {
        guard let threads = split.runnableThreads, split.runQueueMs >= 0.05 else { return "" }
        return ", \(Figure.format(threads, decimals: 1)) runnable" + (watcher.cpus.map { "/\($0) CPUs" } ?? "")
    }

    /// Running, waiting for a CPU, blocked, suspended and not watched as
    /// "ms (share%)", rounded so that the times add up to the printed wall
    /// time and the shares to 100%; not watched is "–" when it is nothing.
    private static func shares(_ split: PhaseSplit) -> [String] {
        let ms = [split.runningMs, split.runQueueMs, split.blockedMs, split.suspendedMs, split.notWatchedMs]
        let rounded = LaunchReport.roundedParts(ms, total: split.wallMs, decimals: 2)
        let percents = LaunchReport.roundedShares(ms, of: split.wallMs, decimals: 0)
        return rounded.indices.map { index in
            if index == 4, rounded[index] == 0, percents[index] == 0 { return "–" }
            guard split.wallMs >= 0.01 else { return number(rounded[index]) }
            return number(rounded[index]) + " (" + Figure.format(percents[index], decimals: 0) + "%)"
        }
    }

    private static func number(_ value: Double, decimals: Int = 2) -> String { Figure.format(value, decimals: decimals) }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}
