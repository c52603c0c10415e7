import ColdstartAnalysis
import Foundation

/// The tables: functions, initializers, lazy globals, threads, blocked
/// time, marks and spans.
extension HTMLPage {
    mutating func functionSections(_ profile: ProfileReport) {
        // Top by self and top by total, together: each row has both figures,
        // so sorting on either column shows that column's top rows.
        var rows = profile.overall.bySelf
        var seen = Set(rows.map { $0.module + "\u{1}" + $0.name })
        for row in profile.overall.byTotal where seen.insert(row.module + "\u{1}" + row.name).inserted { rows.append(row) }
        out += "<section id=\"functions\"><h2>Functions <span class=\"dim\">top \(profile.selection.top) by self time and by "
            + "total time, \(profile.overall.samples) samples = \(ms(profile.overall.ms)); click a heading to sort</span></h2>\n"
        out += functionTable(rows, caption: "Self: the function was the leaf (running). Total: anywhere on the stack, once per sample. "
            + "First seen: ms after process start. Precision of every sampled time below: \(profile.precision.rule).")

        out += "<h3>Per phase</h3>\n"
        for phase in profile.phases {
            let span = "\(fixed(phase.startMs, 2)) → " + (phase.endMs.map { fixed($0, 2) } ?? "…") + " ms"
            let state = !phase.sampled ? "not sampled (sampling starts at the earliest init)"
                : phase.functions.samples == 0 ? "no samples" : "\(phase.functions.samples) samples = \(ms(phase.functions.ms))"
            out += "<details class=\"phase\"\(phase.functions.samples > 0 ? "" : " disabled")><summary>"
                + "<b>\(e(phase.name))</b> <span class=\"dim\">\(e(span)) · \(e(state))</span></summary>"
            if phase.functions.samples > 0 { out += functionTable(phase.functions.bySelf, caption: nil) }
            out += "</details>\n"
        }
        out += "</section>\n"

        initializersTable(profile.initializers)
        globalsTable(profile.lazyGlobals)
        threadsTable(profile.threads)
    }

    func functionTable(_ rows: [ProfileReport.FunctionTime], caption: String?) -> String {
        var table = HTMLTable(columns: [
            .number("self ms"), .number("self %"), .number("self samples"), .number("total ms"), .number("total %"),
            .number("total samples"), .number("first seen ms"), .text("function"), .text("module"),
        ])
        for row in rows {
            table.row([
                .ms(row.selfMs), .percent(row.selfPercent), .count(row.selfSamples), .ms(row.totalMs), .percent(row.totalPercent),
                .count(row.totalSamples), .ms(row.firstSeenMs), .function(row.name), .text(row.module),
            ])
        }
        return table.render(caption: caption)
    }

    mutating func initializersTable(_ initializers: ProfileReport.Initializers) {
        out += "<section id=\"initializers\"><h2>Slow initializers <span class=\"dim\">\(initializers.samples) samples = "
            + "\(ms(initializers.ms)) under constructors (a library's, or the program's preinit and constructors)</span></h2>\n"
        if initializers.unattributedSamples > 0 {
            out += "<p class=\"dim\">\(initializers.unattributedSamples) samples of the library-initializers phase had no constructor "
                + "on their stack (the loader's own work, or a stack cut short in the loader).</p>\n"
        }
        var table = HTMLTable(columns: [
            .number("ms"), .number("%"), .number("samples"), .number("first seen ms"), .text("module"), .text("constructors (samples)"),
        ])
        for library in initializers.libraries {
            table.row([
                .ms(library.ms), .percent(library.percent), .count(library.samples), .ms(library.firstSeenMs),
                .text(library.module + (library.isExecutable ? " (the program)" : ""), title: library.path),
                .name(library.constructors.map { "\(LaunchReport.functionName($0.name, limit: 60)) (\($0.samples))" }.joined(separator: ", ")),
            ])
        }
        out += table.render(caption: nil, empty: "none over the thresholds") + "</section>\n"
    }

    mutating func globalsTable(_ globals: [ProfileReport.LazyGlobal]) {
        out += "<section id=\"globals\"><h2>Slow lazy globals <span class=\"dim\">Swift globals initialised on first use "
            + "(one-time initializers under swift_once)</span></h2>\n"
        var table = HTMLTable(columns: [
            .number("ms"), .number("%"), .number("samples"), .number("first seen ms"), .text("global"), .text("phases"),
        ])
        for global in globals {
            table.row([
                .ms(global.ms), .percent(global.percent), .count(global.samples), .ms(global.firstSeenMs),
                .function(global.name), .text(global.phases.map { "'\($0)'" }.joined(separator: ", ")),
            ])
        }
        out += table.render(caption: nil, empty: "none over the thresholds") + "</section>\n"
    }

    mutating func threadsTable(_ threads: [ProfileReport.ThreadProfile]) {
        out += "<section id=\"threads\"><h2>Threads <span class=\"dim\">CPU each thread was sampled in</span></h2>\n"
        var table = HTMLTable(columns: [
            .text("thread"), .number("tid"), .number("samples"), .number("ms"), .number("%"), .number("first ms"), .number("last ms"),
            .text("top self (samples)"),
        ])
        for thread in threads {
            table.row([
                .text(thread.name), .count(thread.tid), .count(thread.samples), .ms(thread.ms), .percent(thread.percent),
                .ms(thread.firstMs), .ms(thread.lastMs),
                .name(thread.topSelf.map { "\(LaunchReport.functionName($0.name, limit: 50)) (\($0.selfSamples))" }.joined(separator: ", ")),
            ])
        }
        out += table.render(caption: nil) + "</section>\n"
    }

    /// Why the critical path was not running: the same tables as the text report.
    mutating func blockedSection(_ blocked: LaunchReport.BlockedTime) {
        out += "<section id=\"blocked\"><h2>Why the launch's critical path was not running <span class=\"dim\">the main thread, "
            + "then the threads that recorded the launch's marks and spans; CPU and run-queue times "
            + "are the kernel's counters (exact); a blocked time's cause is known to one look, \(e(ms(blocked.watcher.lookPeriodMs)))"
            + "</span></h2>\n"
        var phases = HTMLTable(columns: [
            .text("phase"), .number("wall ms"), .number("running ms"), .number("waiting for CPU ms"), .number("runnable threads"),
            .number("blocked ms"), .number("suspended ms"), .number("not watched ms"), .text("on the path"), .text("blocked mostly on"),
        ])
        for split in [blocked.launch] + blocked.phases {
            // Rounded so that each row's times add up to its wall time as printed.
            let parts = LaunchReport.roundedParts([split.runningMs, split.runQueueMs, split.blockedMs, split.suspendedMs, split.notWatchedMs],
                                                  total: split.wallMs, decimals: 2)
            phases.row([
                .text(split.name), .ms(split.wallMs), .ms(parts[0]), .ms(parts[1]),
                split.runQueueMs < 0.05 ? .missing
                    : split.runnableThreads.map { .text(fixed($0, 1) + (blocked.watcher.cpus.map { " / \($0) CPUs" } ?? "")) } ?? .missing,
                .ms(parts[2]), .ms(parts[3]), .ms(parts[4]),
                .name(split.onPath.map { "\($0.thread) \(fixed($0.ms, 2)) ms" }.joined(separator: ", ")),
                .name(split.blocked.first.map { "\($0.what) (\(fixed($0.ms, 2)) ms)" } ?? "–"),
            ])
        }
        var caption = "runnable threads: the process's runnable threads, on average, while the path was runnable (itself included);"
            + " suspended: no thread of the path had launch work to run (it awaited)"
        if let parked = blocked.firstThreadParked {
            caption += "; the main thread parked in dispatch_main() (\(parked.call)) at \(fixed(parked.atMs, 2)) ms for \(fixed(parked.ms, 2)) ms:"
                + " an async main's main actor runs on dispatch workers after its first await (never a cause)"
        }
        out += phases.render(caption: caption)
        var sites = HTMLTable(columns: [.number("ms"), .number("blocks"), .text("blocked on"), .text("in"), .text("thread"), .text("stack, leaf first")])
        for site in blocked.callSites {
            sites.row([.ms(site.ms), .count(site.count), .text(site.what), site.function.map { .function($0) } ?? .name("–"),
                       .name(site.thread), .name(site.stack.map { LaunchReport.functionName($0, limit: 50) }.joined(separator: " ← "))])
        }
        out += "<h3>Where the critical path blocked</h3>\n" + sites.render(caption: nil, empty: "it never blocked while watched")
        var functions = HTMLTable(columns: [.number("off-CPU ms"), .number("%"), .number("blocks"), .text("function"), .text("module")])
        for function in blocked.offCPUFunctions {
            functions.row([.ms(function.ms), .percent(function.percent), .count(function.blocks), .function(function.name), .text(function.module)])
        }
        out += "<h3>Off-CPU time by function <span class=\"dim\">blocked with the function on the stack; not CPU time</span></h3>\n"
            + functions.render(caption: nil, empty: "no stacks")
        var files = HTMLTable(columns: [.number("ms"), .number("calls"), .text("operations"), .text("path")])
        for file in blocked.files {
            files.row([.ms(file.ms), .count(file.calls), .text(file.operations.joined(separator: ", ")), .name(file.path)])
        }
        out += "<h3>Files the launch waited on</h3>\n" + files.render(caption: nil, empty: "none")
        var threads = HTMLTable(columns: [
            .text("thread"), .number("tid"), .number("CPU ms"), .number("waiting for CPU ms"), .number("off-CPU ms"),
            .number("on the path ms"), .text("mostly off the CPU on"),
        ])
        for thread in blocked.threads {
            threads.row([.text(thread.name + (thread.exited ? " (exited)" : "")), .count(thread.tid), .ms(thread.cpuMs),
                         .ms(thread.runQueueMs), .ms(thread.blockedMs), .ms(thread.onPathMs), .name(thread.mostlyBlockedOn ?? "–")])
        }
        out += "<h3>Threads</h3>\n" + threads.render(caption: blocked.watcher.notes.joined(separator: " "))
        out += "</section>\n"
    }

    mutating func marksTable() {
        out += "<section id=\"marks\"><h2>Marks</h2>\n"
        var table = HTMLTable(columns: [.text("mark"), .number("at ms"), .text("where"), .text("thread")])
        for mark in report.marks {
            let place = mark.extended ? "extended (after ready())"
                : mark.phase.map { (mark.phaseBoundary ? "ends '" : "in '") + $0 + "'" } ?? "outside the launch"
            table.row([.text(mark.name), .ms(mark.offsetMs), .text(place), .text(mark.thread.map { "\($0) (\(mark.tid))" } ?? "\(mark.tid)")])
        }
        out += table.render(caption: nil) + "</section>\n"
    }

    mutating func spansTable() {
        let shown = report.spans.prefix(500)
        out += "<section id=\"spans\"><h2>Spans <span class=\"dim\">slowest first"
            + (report.spans.count > shown.count ? ", \(shown.count) of \(report.spans.count)" : "") + "</span></h2>\n"
        var table = HTMLTable(columns: [
            .text("span"), .number("wall ms"), .number("from ms"), .text("began in phase"), .text("thread"), .text("notes"),
        ])
        for span in shown {
            var notes: [String] = []
            if span.unfinished { notes.append("UNFINISHED (still open when the launch ended)") }
            if span.extended { notes.append("extended (after ready())") }
            if let endTid = span.endTid { notes.append("ended on thread \(endTid)") }
            table.row([
                .text(span.name), .ms(span.durationMs), .ms(span.startMs), .text(span.phase ?? "–"),
                .text(span.thread.map { "\($0) (\(span.tid))" } ?? "\(span.tid)"), .text(notes.joined(separator: "; ")),
            ])
        }
        out += table.render(caption: nil) + "</section>\n"
    }
}
