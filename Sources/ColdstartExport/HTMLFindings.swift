import ColdstartAnalysis
import ColdstartText
import Foundation

/// The page's answer: the findings, right under the title, and the Swift
/// runtime costs by kind after the function tables.
extension HTMLPage {
    mutating func findingsSection() {
        guard let findings = report.findings else { return }
        out += "<section id=\"findings\"><h2>Findings <span class=\"dim\">most time first; % of the launch's wall time</span></h2>\n"
        // Too few samples to act on: said with the findings, which rest on them.
        let notice = ((report.noSamples.map { [$0] } ?? []) + (report.profile?.precision.noticeLines ?? []))
            .map { "<p class=\"warn\">\(e($0.trimmingCharacters(in: .whitespaces)))</p>\n" }.joined()
        guard !findings.isEmpty else {
            out += "<p class=\"dim\">Nothing above 1% of the launch.</p>\n\(notice)</section>\n"
            return
        }
        out += "<ol class=\"findings\">\n"
        for finding in findings {
            // The text report's figure, to the same 0.1 ms.
            out += "<li><b>\(e(finding.title))</b> — \(fixed(finding.ms, 1)) ms, \(fixed(finding.percent, 0))% "
                + "<span class=\"dim\">(\(e(finding.certainty.text + (finding.intervalText.map { ", " + $0 } ?? ""))))</span><br>"
                + "<span class=\"dim\">\(e(finding.location))</span><br>→ \(e(finding.advice))</li>\n"
        }
        out += "</ol>\n" + (Finding.overlapNote(findings).map { "<p class=\"dim\">\(e($0))</p>\n" } ?? "") + "\(notice)</section>\n"
    }

    mutating func runtimeCostsSection() {
        guard let costs = report.runtimeCosts, !costs.rows.isEmpty else { return }
        out += "<section id=\"runtime\"><h2>Swift runtime costs by kind <span class=\"dim\">\(e(costs.scope)); "
            + "\(costs.totalSamples) samples</span></h2>\n<table><tr><th>kind</th><th>ms</th><th>%</th><th>on the stack %</th>"
            + "<th>samples</th><th>app frames that led there</th><th>what to try</th></tr>\n"
        for row in costs.rows {
            let callers = row.callers.prefix(3).map { "\($0.samples) from \(LaunchReport.functionName($0.function))" }.map(e).joined(separator: "<br>")
            out += "<tr><td>\(e(row.kind.title))</td><td class=\"num\">\(fixed(row.ms, 2))</td><td class=\"num\">\(fixed(row.percent, 1))</td>"
                + "<td class=\"num\">\(fixed(row.onStackPercent, 1))</td><td class=\"num\">\(row.samples)</td><td>\(callers)</td><td>\(e(row.kind.advice))</td></tr>\n"
        }
        out += "</table></section>\n"
    }
}
