import Foundation

/// The one way a figure is written into the analysis's sentences (a
/// finding's detail, a note, how the launch ended) and the renderers' text.
package enum Figure {
    /// `value` with a fixed number of decimals, in the C locale; "?" when not finite.
    package static func format(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "?" }
        return String(format: "%.\(decimals)f", value)
    }
}
