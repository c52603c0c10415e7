import ColdstartAnalysis
import ColdstartText
import Foundation

/// Before `main`: what `coldstart run`'s launcher saw (docs/before-main.md)
/// and the loader statistics, as the text report's --full shows them.
extension HTMLPage {
    mutating func beforeMainSection() {
        let before = report.beforeMain, statistics = report.loaderStatistics
        guard before != nil || statistics != nil else { return }
        out += "<section id=\"beforemain\"><h2>Before main <span class=\"dim\">\(Self.prose(report.launch.modeDescription))</span></h2>\n"
        if let before {
            // The text's lines after its title: each is one finding of the launcher.
            out += "<ul class=\"lines\">"
            for line in before.text(statistics: statistics).split(separator: "\n").dropFirst() {
                out += "<li>\(e(line.trimmingCharacters(in: .whitespaces)))</li>"
            }
            out += "</ul>\n"
        }
        if let statistics {
            out += "<h3>Loader statistics <span class=\"dim\">objects from \(e(statistics.source))</span></h3>\n"
            out += "<p>\(e(statistics.summary))</p>\n"
            let relocationMs = Dictionary((before?.relocation ?? []).map { ($0.name, $0.ms) }) { first, _ in first }
            var table = HTMLTable(columns: [
                .text("object"), .number("symbolic"), .number("look-ups"), .number("reused"), .number("PLT"), .number("relative"),
                .number("relocation ms"),
            ])
            for object in statistics.objects {
                table.row([
                    .text(object.name + (object.bindNow ? " (BIND_NOW)" : "")), .count(object.symbolic), .count(object.lookups),
                    .count(object.cachedLookups), .count(object.plt), .count(object.relative + object.packedRelative),
                    relocationMs[object.name].map { .ms($0) } ?? .missing,
                ])
            }
            out += table.render(caption: "Read from each object's ELF file: symbolic relocations need a symbol look-up at start-up "
                + "(or reuse the previous one); PLT slots are bound at first call unless BIND_NOW; relative ones only add the load "
                + "address. Relocation ms: the loader's samples by the file it was writing (an estimate; – when not sampled).")
        }
        out += "</section>\n"
    }
}
