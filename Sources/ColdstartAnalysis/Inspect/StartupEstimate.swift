import Foundation

/// What the static counts predict, from relations measured on the reference
/// machine (docs/inspect.md, "Estimates"; Debian 12, glibc 2.36, Swift 6.3,
/// 2 vCPUs at 2.25 GHz). Estimates, not measurements: a launch of the
/// program (`coldstart run`, `coldstart report`) measures the real time.
package struct StartupEstimate: Codable, Sendable {
    /// glibc's relocation time (`LD_DEBUG=statistics`, "time needed for
    /// relocation") fitted to the symbol look-ups over the toolchain's
    /// programs (167 and 160 ns in two runs): relative relocations added
    /// at most 1 ns each to the fit.
    static let nsPerLookup = 165.0
    /// The mean time of an uncached conformance check against the number of
    /// conformance records registered (`ManyConformances --measure`: 400
    /// first checks before and after dlopen of Foundation).
    static let nsPerConformanceRecord = 10.0

    /// Milliseconds the loader spends relocating, from `lookups`.
    package var relocationMs: Double
    package var relocationBasis: String
    /// Microseconds one uncached conformance check (`as?`, `is`, a generic
    /// call that needs a witness table) takes, from the records it scans.
    package var conformanceScanUs: Double
    package var conformanceBasis: String
    /// The inputs.
    package var lookups: Int
    package var conformanceRecords: Int

    init(_ totals: StaticInspection.ObjectTotals) {
        (lookups, conformanceRecords) = (totals.lookups, totals.conformances)
        relocationMs = Double(lookups) * Self.nsPerLookup / 1e6
        conformanceScanUs = Double(conformanceRecords) * Self.nsPerConformanceRecord / 1e3
        relocationBasis = "\(lookups) symbol look-ups × \(Int(Self.nsPerLookup)) ns, glibc's relocation time"
            + " (LD_DEBUG=statistics) fitted to the look-ups of the Swift toolchain's programs on a 2.25 GHz x86_64 VM (docs/inspect.md)"
        conformanceBasis = "\(conformanceRecords) conformance records × \(String(format: "%g", Self.nsPerConformanceRecord)) ns,"
            + " uncached checks timed against the records registered (ManyConformances fixture, same VM; docs/inspect.md)"
    }
}
