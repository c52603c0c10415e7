import ColdstartAnalysis
import Foundation

/// One file format of `coldstart export`. Adding a format is one file with
/// a type conforming to `StacksExporter` or `TraceExporter`, and its entry in
/// `Exporters.all`: `--format`, `--help`, the default output name and the
/// files `coldstart compare DIR` does not read as timelines all come from it.
package protocol Exporter {
    /// Its `--format` name.
    static var name: String { get }
    /// What the file it writes beside a timeline ends in (FILE without
    /// `.json`, plus this).
    static var suffix: String { get }
    /// Its paragraph in `coldstart export --help`, lines of at most 60 columns.
    static var help: [String] { get }
}

/// A format of the report's selected samples (`--phase`, `--thread`).
package protocol StacksExporter: Exporter {
    static func export(_ stacks: SampledStacks) throws -> [UInt8]
}

/// A format of the launch's timed intervals; needs no samples.
package protocol TraceExporter: Exporter {
    /// Throws `ExportError` when a launch cannot be written, naming its path.
    static func export(_ traces: [(trace: LaunchTrace, path: String)]) throws -> [UInt8]
    /// What `coldstart export` says it wrote, before the size.
    static func summary(_ trace: LaunchTrace) -> String
}

/// Why a launch cannot be written in a format: one line naming the file.
package struct ExportError: Error, CustomStringConvertible {
    package var description: String
}

/// A registered format, by what it renders.
package enum ExportFormat {
    case stacks(any StacksExporter.Type)
    case trace(any TraceExporter.Type)

    package var exporter: any Exporter.Type {
        switch self {
        case .stacks(let exporter): return exporter
        case .trace(let exporter): return exporter
        }
    }
}

/// The formats, in the order `--help` lists them.
package enum Exporters {
    package static let all: [ExportFormat] = [
        .stacks(PprofExporter.self), .stacks(FoldedExporter.self), .stacks(SpeedscopeExporter.self),
        .trace(OTLPExporter.self),
    ]

    package static func named(_ name: String) -> ExportFormat? {
        all.first { $0.exporter.name == name }
    }

    /// "pprof", "folded", …
    package static var names: [String] { all.map { $0.exporter.name } }

    /// The endings of the files the formats write beside a timeline (some
    /// of them JSON, none a timeline): what `coldstart compare DIR` skips.
    package static var suffixes: [String] { all.map { $0.exporter.suffix } }

    /// Every format's paragraph of `coldstart export --help`, its name in a
    /// column of its own.
    package static var help: String {
        all.map { format in
            let exporter = format.exporter
            return exporter.help.enumerated().map { index, line in
                (index == 0 ? "  " + exporter.name.padding(toLength: 12, withPad: " ", startingAt: 0) : String(repeating: " ", count: 14)) + line
            }.joined(separator: "\n")
        }.joined(separator: "\n")
    }
}
