import ColdstartAnalysis
import Foundation

extension LoaderStatistics {
    /// The totals in one line, as `LD_DEBUG=statistics` would count them.
    package var summary: String {
        func n(_ value: Int) -> String { value.formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US"))) }
        let what = loaded?.phrase(withVDSO: false) ?? "\(objects.count) objects"
        return "relocations (\(what), read from their ELF files): \(n(symbolic)) symbolic, "
            + "\(n(lookups)) symbol look-ups at start-up (+\(n(cachedLookups)) reused), \(n(plt)) PLT slots"
            + ", \(n(relative)) relative" + (packedRelative > 0 ? " + \(n(packedRelative)) packed (DT_RELR)" : "")
            + (unreadable.isEmpty ? "" : "; not read: " + unreadable.joined(separator: ", "))
    }

    /// The report's section: the totals, then one row per object, most
    /// symbolic relocations first (at most `limit`). `relocationMs` is each
    /// library's sampled relocation time, by file name, when the loader was
    /// sampled.
    package func lines(relocationMs: [String: Double], limit: Int = 12, width: Int?) -> [String] {
        var table = Table(columns: [
            .init("object", .left), .init("symbolic", .right), .init("look-ups", .right), .init("reused", .right),
            .init("PLT", .right), .init("relative", .right), .init("relocation ms", .right),
        ], flexible: 0)
        for object in objects.prefix(limit) {
            table.add([
                LaunchReport.printable(object.name), "\(object.symbolic)", "\(object.lookups)", "\(object.cachedLookups)",
                "\(object.plt)" + (object.bindNow ? " (now)" : ""), "\(object.relative + object.packedRelative)",
                relocationMs[object.name].map { String(format: "%.2f", $0) } ?? "–",
            ])
        }
        let more = objects.count > limit ? "; top \(limit) of \(objects.count) by symbolic relocations" : ""
        return ["Loader statistics (objects from \(source)\(more); relocation ms: loader samples by the file it was writing)",
                "  " + summary] + table.render(width: width)
    }
}

extension LaunchReport {
    /// The before-`main` sections of the full text: what the launcher saw,
    /// then the loader statistics; none when the report has neither.
    func beforeMainLines(width: Int?) -> [String] {
        var lines: [String] = []
        if let beforeMain { lines += [""] + beforeMain.text(statistics: loaderStatistics).split(separator: "\n").map(String.init) }
        if let loaderStatistics {
            let ms = Dictionary((beforeMain?.relocation ?? []).map { ($0.name, $0.ms) }) { first, _ in first }
            lines += [""] + loaderStatistics.lines(relocationMs: ms, width: width)
        }
        return lines
    }
}
