import ColdstartAnalysis
import Foundation

extension UnprofiledEstimate {
    /// The sentence the report prints.
    package var text: String {
        func figure(_ value: Double) -> String { Figure.format(value, decimals: 2) }
        let costs = parts.filter { $0.ms > 0 || $0.uncertaintyMs > 0 }
            .map { "\($0.name) \(figure($0.ms))" + ($0.uncertaintyMs > 0 ? "±\(figure($0.uncertaintyMs))" : "") }
            .joined(separator: ", ")
        guard let ms else {
            // `unknown` says why; a range, when there is one, comes first.
            guard let lowMs, let highMs else { return "without profiling: not known: \(unknown ?? "")" }
            return "without profiling: somewhere in \(figure(lowMs))–\(figure(highMs)) ms, \(unknown ?? "")"
        }
        return "without profiling, about \(figure(ms)) ms ±\(figure(uncertaintyMs)) (Coldstart's cost on the critical path: \(costs) ms)"
    }
}
