import ColdstartAnalysis
import ColdstartText
import Foundation

/// `coldstart report FILE --html OUT`: the launch as one self-contained page.
///
/// Everything on it comes from one `LaunchAnalysis`: the `LaunchReport` the
/// text report prints and the `SampledStacks` of the same selection. The page
/// adds no figure of its own. The waterfall (inline SVG) and the tables are
/// rendered here, so they read without JavaScript; the flame chart and the
/// flame graph are drawn by the page's inline script from the JSON embedded
/// in it. Nothing is loaded from anywhere: no script, style, font or image
/// outside the file.
package enum HTMLReport {
    /// The page. The stacks (the report's selection) feed the flame chart
    /// and flame graph; an unsampled launch has the launch sections only.
    /// `source` names the timeline in the footer.
    package static func render(_ analysis: LaunchAnalysis, source: String) -> String {
        var page = HTMLPage(report: analysis.report, stacks: analysis.stacks, source: source)
        return page.render()
    }
}

/// The page being written: `report` and `stacks` rendered in order into
/// `out`. Its sections live in HTMLWaterfall, HTMLFlameData and
/// HTMLSections.
struct HTMLPage {
    let report: LaunchReport
    let stacks: SampledStacks?
    let source: String
    var out = ""

    init(report: LaunchReport, stacks: SampledStacks?, source: String) {
        self.report = report
        self.stacks = stacks
        self.source = source
        out.reserveCapacity(1 << 20)
    }

    mutating func render() -> String {
        let launch = report.launch
        let name = URL(fileURLWithPath: launch.executable).lastPathComponent
        out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        out += "<title>\(e("Launch of \(name): \(ms(launch.totalMs))"))</title>\n<style>\(HTMLAssets.style)</style></head>\n<body>\n"
        header()
        findingsSection()
        waterfall()
        beforeMainSection()
        if let profile = report.profile, let stacks {
            flameSections(profile, stacks)
            functionSections(profile)
        }
        runtimeCostsSection()
        if let blocked = report.blockedTime { blockedSection(blocked) }
        if !report.marks.isEmpty { marksTable() }
        if !report.spans.isEmpty { spansTable() }
        metadata()
        out += "<footer>Made by <code>coldstart report --html</code> from \(e(source)). Every time is CLOCK_MONOTONIC, "
            + "in milliseconds from the process start; sampled times are samples × one sampling period.</footer>\n"
        if let stacks { embedData(stacks) }
        out += "<script>\(HTMLAssets.script)</script>\n</body></html>\n"
        return out
    }

    // MARK: Header and metadata

    mutating func header() {
        let launch = report.launch
        let name = URL(fileURLWithPath: launch.executable).lastPathComponent
        let end = launch.endReason == "ready" ? "ready()" : (launch.endPhase?.components(separatedBy: " → ").last ?? launch.endReason)
        out += "<header><h1>Launch of \(e(name)) <span class=\"dim\">pid \(launch.pid)</span>: "
            + "\(ms(launch.totalMs)) from process start to \(e(end))</h1>\n"
        out += "<p class=\"mode\">Mode: \(Self.prose(launch.modeDescription))</p>\n"
        out += "<p class=\"\(launch.completed ? "ok" : "bad")\">\(e(launch.completion.prefix(1).uppercased() + launch.completion.dropFirst()))</p>\n"
        var facts = ["start: \(launch.startPrecision)", "clock \(launch.clock)"]
        if let setup = launch.profilerSetupMs { facts.append("\(ms(setup)) of it Coldstart's own set-up") }
        if let estimate = launch.withoutProfiling { facts.append(estimate.text) }
        if let profile = report.profile {
            let s = profile.sampling
            facts.append("\(s.samples) samples at \(fixed(s.effectiveHz, 1)) Hz effective (\(fixed(s.requestedHz, 0)) asked, "
                + "\(s.clock)); \(s.dropped) dropped; one sample = \(fixed(s.msPerSample, 3)) ms")
        }
        out += "<p class=\"dim\">\(facts.map(e).joined(separator: " · "))</p>\n"
        if let profile = report.profile, profile.selection.phase != nil || profile.selection.thread != nil {
            var parts: [String] = []
            if let phase = profile.selection.phase { parts.append("phase '\(phase)'") }
            if let thread = profile.selection.thread { parts.append("thread \(thread)") }
            out += "<p class=\"note\">Sampled sections show \(e(parts.joined(separator: ", "))) only: "
                + "\(profile.selection.samples) samples = \(ms(profile.selection.ms)).</p>\n"
        }
        for warning in report.profile?.warnings ?? [] { out += "<p class=\"warn\">warning: \(e(warning))</p>\n" }
        out += "<nav>" + [("findings", "Findings"), ("waterfall", "Waterfall"), ("beforemain", "Before main"), ("flamechart", "Flame chart"), ("flamegraph", "Flame graph"),
                          ("functions", "Functions"), ("runtime", "Runtime costs"), ("initializers", "Initializers"), ("globals", "Lazy globals"),
                          ("threads", "Threads"), ("blocked", "Blocked time"), ("marks", "Marks"), ("spans", "Spans"),
                          ("metadata", "Metadata")]
            .map { "<a href=\"#\($0.0)\">\($0.1)</a>" }.joined(separator: " ") + "</nav></header>\n"
    }

    mutating func metadata() {
        let launch = report.launch
        var rows: [(String, String)] = [
            ("mode", "\(launch.mode.rawValue): \(launch.modeDescription)"),
            ("executable", launch.executable), ("pid", "\(launch.pid)"), ("kernel", launch.kernelRelease),
            ("Swift", launch.swiftVersion), ("clock", launch.clock),
            ("process start", "\(launch.startSource): \(launch.startPrecision)"),
            ("launch", launch.completion),
            ("total", ms(launch.totalMs)),
        ]
        if let earliest = launch.earliestInitMs { rows.append(("earliest init (.preinit_array)", ms(earliest))) }
        rows.append(("main (first constructor of the program)", ms(launch.mainMs)))
        if let ready = launch.readyMs { rows.append(("ready()", ms(ready))) }
        if let window = launch.extensionMs { rows.append(("extension window", ms(window))) }
        rows.append(("dropped events / name bytes", "\(launch.droppedEvents) / \(launch.droppedNameBytes)"))
        if let profile = report.profile {
            let s = profile.sampling
            rows += [
                ("sampling clock", s.clock), ("unwinder", s.unwinder),
                ("rate", "\(fixed(s.effectiveHz, 1)) Hz effective, \(fixed(s.requestedHz, 0)) Hz asked"
                    + (s.loweredHz.map { ", lowered to \(fixed($0, 0)) Hz (slow handler)" } ?? "")),
                ("one sample", "\(fixed(s.msPerSample, 3)) ms, \(s.periodMeaning) (every sampled time is samples × this)"),
                ("precision", profile.precision.rule),
                ("samples", "\(s.samples), \(s.dropped) dropped"),
                ("sampling window", "\(fixed(s.startMs, 2)) → \(fixed(s.stopMs, 2)) ms"),
            ]
        }
        out += "<section id=\"metadata\"><h2>Metadata</h2><table class=\"meta\">"
        for (key, value) in rows { out += "<tr><th>\(e(key))</th><td>\(e(value))</td></tr>" }
        out += "</table></section>\n"
    }

    // MARK: Formatting

    func e<S: StringProtocol>(_ text: S) -> String { HTMLTable.escape(String(text)) }
    /// A sentence of the report's own with `command` spans as code: the
    /// text report's backticks are no markup on a page.
    static func prose(_ text: String) -> String {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().map { index, part in
            index % 2 == 1 ? "<code>" + HTMLTable.escape(String(part)) + "</code>" : HTMLTable.escape(String(part))
        }.joined()
    }
    func ms(_ value: Double) -> String { fixed(value, 2) + " ms" }
    func f(_ value: Double) -> String { fixed(value, 1) }
    static func clip(_ text: String, _ limit: Int) -> String { text.count > limit ? String(text.prefix(limit - 1)) + "…" : text }
}

func fixed(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return "?" }
    return String(format: "%.\(decimals)f", value)
}
