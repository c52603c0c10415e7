import ColdstartAnalysis
import Foundation

extension Finding {
    /// The width the findings are laid out for when the output has none (a
    /// file, a pipe): they lead the report and should read in a 100-column
    /// terminal as they do in a file.
    package static let defaultWidth = 100

    /// The findings for a terminal, three lines each: rank, what, ms, share
    /// of the launch and how sure; where; what to try (wrapped). Nothing is
    /// wider than `width` (default `defaultWidth`). `launch` says whose wall
    /// time the shares are of (a pool's: the mean launch's).
    package static func lines(_ findings: [Finding], width: Int? = nil, launch: String = "the launch's") -> [String] {
        let width = max(min(width ?? defaultWidth, defaultWidth), 40)
        guard !findings.isEmpty else { return ["Findings: nothing above 1% of the launch"] }
        var lines = ["Findings (most time first; % of \(launch) wall time):"]
        // Fixed columns: the figures line up whatever the certainty says.
        func figures(_ finding: Finding) -> String {
            String(format: "%8.1f ms %4.0f%%  ", finding.ms, finding.percent) + finding.certainty.text.padding(toLength: 12, withPad: " ", startingAt: 0)
        }
        let titleRoom = max(width - 4 - (findings.map { figures($0).count }.max() ?? 0) - 1, 10)
        // Two findings whose titles clip alike (two overloads' slow functions) are numbered.
        let titles = Table.clipDistinct(findings.map(\.title), to: titleRoom) { clipped($0, to: $1) }
        for (index, finding) in findings.enumerated() {
            let figures = figures(finding)
            let rank = "\(index + 1). ".leftPadded(to: 4)
            let title = titles[index].padding(toLength: titleRoom, withPad: " ", startingAt: 0)
            lines.append(String((rank + title + " " + figures).reversed().drop { $0 == " " }.reversed()))
            lines += wrapped((finding.intervalText.map { $0 + " · " } ?? "") + finding.location, width: width - 4, continuation: "  ")
                .map { "    " + $0 }
            lines += wrapped("→ " + finding.advice, width: width - 4, continuation: "  ").map { "    " + $0 }
        }
        if let note = overlapNote(findings) { lines += wrapped("(\(note))", width: width, continuation: " ") }
        return lines
    }

    /// Page faults and runtime work happen inside other findings' time (the
    /// loader's, a lazy global's): shares that add up past the whole launch
    /// would otherwise read as a mistake. Nil while they do not.
    package static func overlapNote(_ findings: [Finding]) -> String? {
        guard findings.map(\.percent).reduce(0, +) > 100 else { return nil }
        return "These overlap: page faults and runtime work lie inside other findings' time, so the shares add up to more than the launch."
    }

    /// "95%: 8.9–16.3 ms" for a figure counted in samples.
    package var intervalText: String? {
        guard let msLow, let msHigh else { return nil }
        return "\(SamplePrecision.confidencePercent)%: \(String(format: "%.1f", msLow))–\(String(format: "%.1f", msHigh)) ms"
    }

    /// `text` shortened to `limit` characters, ending in "…" when cut.
    static func clipped(_ text: String, to limit: Int) -> String {
        text.count <= limit ? text : String(text.prefix(max(limit - 1, 0))) + "…"
    }

    /// Words of `text` in lines of at most `width` (a longer word is clipped).
    static func wrapped(_ text: String, width: Int, continuation: String) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            let candidate = line.isEmpty ? String(word) : line + " " + word
            if candidate.count <= width || line.isEmpty {
                line = clipped(candidate, to: width)
            } else {
                lines.append(line)
                line = clipped(continuation + word, to: width)
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }

    /// `lines` with each one wider than `width` wrapped at its words, keeping
    /// its indent; tables, already narrowed to `width`, pass unchanged.
    package static func wrapped(_ lines: [String], width: Int) -> [String] {
        lines.flatMap { line -> [String] in
            guard line.count > width else { return [line] }
            let indent = String(line.prefix { $0 == " " })
            return wrapped(String(line.dropFirst(indent.count)), width: width - indent.count, continuation: "  ").map { indent + $0 }
        }
    }
}

private extension String {
    func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: " ", count: length - count) + self
    }
}

extension RuntimeCostSummary {
    /// The runtime-costs section: one row per kind (ms, share of the
    /// critical path's samples, share with the kind on the stack,
    /// samples), the app frames that led there, and what to try.
    package func lines(width: Int?) -> [String] {
        let width = max(min(width ?? Finding.defaultWidth, Finding.defaultWidth), 40)
        var lines = Finding.wrapped(["Swift runtime costs by kind (\(scope); \(totalSamples) samples; each sample counts as one kind, "
            + "'on the stack' is every sample with the kind's frames anywhere, under another kind's too):"], width: width)
        for row in rows {
            let figures = String(format: "%8.1f ms %5.1f%%  on the stack %5.1f%%  %d samples", row.ms, row.percent, row.onStackPercent, row.samples)
            let room = max(width - 2 - figures.count - 1, 10)
            lines.append("  " + Finding.clipped(row.kind.title, to: room).padding(toLength: room, withPad: " ", startingAt: 0) + " " + figures)
            for caller in row.callers.prefix(3) {
                lines.append("      " + Finding.clipped("\(caller.samples) from \(LaunchReport.functionName(caller.function))", to: width - 6))
            }
            lines += Finding.wrapped("→ " + row.kind.advice, width: width - 6, continuation: "  ").map { "      " + $0 }
        }
        return lines
    }
}
