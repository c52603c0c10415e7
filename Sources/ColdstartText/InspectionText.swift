import ColdstartAnalysis
import Foundation

extension StaticInspection {
    /// `coldstart inspect`'s text: the estimate, the load order with each
    /// object's counts, the initializers in the order they run, what is missing.
    package func text(style: TextStyle) -> String {
        func n(_ value: Int) -> String { value.formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US"))) }
        let totals = totals
        var lines = [
            "coldstart inspect \(executable) (\(machine)): read from the ELF files, nothing was run",
            "  \(n(totals.libraries)) libraries, \(n(totals.initializers)) initializers, \(n(totals.symbolic)) symbolic relocations"
                + " (\(n(totals.lookups)) look-ups at start-up), \(n(totals.relative + totals.packedRelative)) relative,"
                + " \(n(totals.conformances)) Swift conformance records",
        ]
        if !missing.isEmpty {
            lines += [""] + missing.map { "  NOT FOUND: \($0.name) (needed by \($0.neededBy)): not in its RPATH/RUNPATH, LD_LIBRARY_PATH, /etc/ld.so.cache or the default directories" }
        }
        lines += ["", "Estimates (from measured relations, not a launch: coldstart run measures one)",
                  String(format: "  loader relocation ≈ %.2f ms: ", estimate.relocationMs) + estimate.relocationBasis,
                  String(format: "  one uncached conformance check (a type's first as?/is against a protocol) ≈ %.0f µs: ", estimate.conformanceScanUs)
                      + estimate.conformanceBasis]

        var table = Table(columns: [
            .init("#", .right), .init("object", .left), .init("needed by", .left, droppable: true),
            .init("init", .right), .init("symbolic", .right), .init("look-ups", .right), .init("relative", .right),
            .init("PLT", .right), .init("conformances", .right), .init("type md", .right), .init("path", .left, droppable: true),
        ], flexible: 1)
        for (index, object) in objects.enumerated() {
            let relocations = object.relocations
            func count(_ value: Int?) -> String { value.map { "\($0)" } ?? "–" }
            table.add([
                "\(index + 1)", LaunchReport.printable(object.name),
                object.role == .loader ? "(PT_INTERP)" : object.neededBy.map { LaunchReport.printable($0) } ?? "",
                "\(object.initializers.count)", count(relocations?.symbolic), count(relocations?.lookups),
                count(relocations.map { $0.relative + $0.packedRelative }),
                count(relocations?.plt).appending(relocations?.bindNow == true ? " (now)" : ""),
                count(object.swift?.conformances), count(object.swift?.typeMetadata), LaunchReport.printable(object.path, limit: 300),
            ])
        }
        lines += ["", "Load order (breadth first, as ld.so maps them; the loader last, as ldd lists it)"]
            + table.render(width: style.width)
        for object in objects where object.problem != nil {
            lines.append("  \(object.name): not read: \(object.problem ?? "")")
        }

        lines += ["", "Initializers (in the order they run: the executable's DT_PREINIT_ARRAY, then each library after those it needs, the executable's own last)"]
        let byName = Dictionary(objects.map { ($0.name, $0) }) { first, _ in first }
        let executableObject = objects.first { $0.role == .executable }
        func rows(_ object: Object, _ initializers: [Initializer]) -> [String] {
            initializers.map { initializer in
                let name = LaunchReport.printable(initializer.displayName)
                let kind = initializer.kind == .constructor ? "" : "  [\(initializer.kind.rawValue)]"
                return "  \(LaunchReport.printable(object.name)): \(name)  \(initializer.source.rawValue)[\(initializer.index)]\(kind)"
            }
        }
        if let executableObject { lines += rows(executableObject, executableObject.initializers.filter { $0.source == .preinitArray }) }
        for name in initializerOrder {
            guard let object = byName[name] else { continue }
            lines += rows(object, object.initializers.filter { $0.source != .preinitArray })
        }

        let swiftObjects = objects.filter { $0.swift?.isSwift == true }
        if !swiftObjects.isEmpty {
            lines += ["", "Swift metadata (swift5_* sections: records, or bytes for variable-length ones)"]
            for object in swiftObjects {
                guard let swift = object.swift else { continue }
                let others = swift.sectionBytes.keys.sorted().filter {
                    !["swift5_protocol_conformances", "swift5_type_metadata", "swift5_protocols"].contains($0) && swift.sectionBytes[$0] != 0
                }.map { "\($0.dropFirst("swift5_".count)) \(n(swift.sectionBytes[$0] ?? 0)) B" }
                lines.append("  \(LaunchReport.printable(object.name)): \(n(swift.conformances)) conformances, \(n(swift.typeMetadata)) type metadata,"
                    + " \(n(swift.protocols)) protocols" + (others.isEmpty ? "" : "; " + others.joined(separator: ", ")))
            }
        }
        // Long lines wrap at the terminal's width; the tables already fit it.
        return (style.width.map { Finding.wrapped(lines, width: $0) } ?? lines).joined(separator: "\n") + "\n"
    }
}

extension AllowListCheck {
    /// The gate's verdict: each line that fails it, then one line saying pass or fail.
    package var text: String {
        var lines: [String] = []
        for item in unlisted { lines.append("not on the allow-list: \(item.entry)  (\(item.comment))") }
        for library in missing { lines.append("cannot check: \(library.name) (needed by \(library.neededBy)) was not found") }
        if let maxLibraries, overLimit { lines.append("too many libraries: \(libraries) loaded, --max-libraries \(maxLibraries)") }
        for entry in gone { lines.append("allowed but no longer there (the list can drop it): \(entry)") }
        let bound = maxLibraries.map { " (bound \($0))" } ?? ""
        lines.append(passed
            ? "allow-list gate: pass: \(libraries) libraries\(bound), every library and initializer allowed"
            : "allow-list gate: FAIL: \(unlisted.count) not allowed" + (missing.isEmpty ? "" : ", \(missing.count) not found")
                + (overLimit ? ", \(libraries) libraries over \(maxLibraries ?? 0)" : ""))
        return lines.joined(separator: "\n") + "\n"
    }
}
