import ColdstartAnalysis
import Foundation

extension PerfAdvice {
    /// The first screen's lines, under the report's header: the cause and
    /// how the launch was sampled instead, then the remedy.
    package var lines: [String] {
        ["Perf events refused: \(because); \(sampledBy).", "  → \(remedy)"]
    }
}
