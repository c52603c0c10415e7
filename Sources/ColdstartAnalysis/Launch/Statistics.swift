import Foundation

/// Robust summaries and the rank test `coldstart run` and `coldstart compare`
/// rest on. Launch times are skewed and have outliers (a page-in, another
/// process on the core), so everything here is rank- or median-based.
package enum Statistics {
    /// The median; nil for no values.
    package static func median(_ values: [Double]) -> Double? {
        percentile(values, 50)
    }

    /// The `p`th percentile (0…100), interpolating linearly between the two
    /// nearest ranks (numpy's default, Hyndman–Fan type 7); nil for no values.
    package static func percentile(_ values: [Double], _ p: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        return percentile(sorted: values.sorted(), p)
    }

    static func percentile(sorted: [Double], _ p: Double) -> Double {
        let rank = min(max(p, 0), 100) / 100 * Double(sorted.count - 1)
        let below = Int(rank.rounded(.down))
        let above = min(below + 1, sorted.count - 1)
        return sorted[below] + (sorted[above] - sorted[below]) * (rank - Double(below))
    }

    /// The median absolute deviation from the median (unscaled); nil for no
    /// values.
    static func medianAbsoluteDeviation(_ values: [Double]) -> Double? {
        guard let center = median(values) else { return nil }
        return median(values.map { abs($0 - center) })
    }

    /// Indices of the values whose modified z-score, 0.6745 (x − median) / MAD,
    /// exceeds 3.5 in magnitude (Iglewicz and Hoaglin). With a MAD of 0 (half
    /// the values equal) no scale exists and nothing is flagged.
    static func outlierIndices(_ values: [Double]) -> [Int] {
        guard let center = median(values), let mad = medianAbsoluteDeviation(values), mad > 0 else { return [] }
        return values.indices.filter { abs(0.6745 * (values[$0] - center) / mad) > outlierThreshold }
    }

    /// The modified z-score above which a value is an outlier.
    static let outlierThreshold = 3.5

    /// Holm's step-down adjustment of p-values for testing many hypotheses at
    /// once: rejecting every adjusted p below α keeps the chance of even one
    /// false alarm among them at most α. Returned in the input's order.
    package static func holmAdjusted(_ pValues: [Double]) -> [Double] {
        let order = pValues.indices.sorted { pValues[$0] < pValues[$1] }
        var adjusted = [Double](repeating: 1, count: pValues.count)
        var running = 0.0
        for (rank, index) in order.enumerated() {
            running = max(running, min(1, Double(pValues.count - rank) * pValues[index]))
            adjusted[index] = running
        }
        return adjusted
    }
}

/// The summary `coldstart run` prints for one measure over many launches.
package struct DistributionSummary: Codable, Sendable, Equatable {
    package var count: Int
    package var median: Double
    package var p90: Double
    package var min: Double
    package var max: Double
    /// Median absolute deviation (unscaled), in the values' unit.
    package var mad: Double
    /// Indices into the summarised values, see `Statistics.outlierIndices`.
    package var outliers: [Int]

    /// Nil for no values.
    package init?(_ values: [Double]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        count = values.count
        median = Statistics.percentile(sorted: sorted, 50)
        p90 = Statistics.percentile(sorted: sorted, 90)
        min = sorted[0]
        max = sorted[sorted.count - 1]
        mad = Statistics.medianAbsoluteDeviation(values)!
        outliers = Statistics.outlierIndices(values)
    }
}

/// The Mann–Whitney U test (Wilcoxon rank-sum), two-sided: is one sample
/// stochastically larger than the other? It assumes nothing about the shape of
/// the distributions, which suits launch times (skewed, with outliers).
package struct MannWhitneyTest: Codable, Sendable, Equatable {
    /// U of the first sample: the number of pairs (x from the first, y from
    /// the second) with x > y, ties counting one half.
    package var u: Double
    /// Two-sided p-value.
    package var p: Double
    package var method: Method

    package enum Method: String, Codable, Sendable {
        /// The exact null distribution of U (no ties, small samples).
        case exact
        /// Normal approximation with tie and continuity corrections.
        case normal
    }

    /// The largest m·n for which the exact distribution is computed: beyond
    /// it the normal approximation is good and the exact one costs O((m·n)²).
    static let exactLimit = 2_500

    /// Nil when either sample is empty.
    package init?(_ first: [Double], _ second: [Double]) {
        let m = first.count, n = second.count
        guard m > 0, n > 0 else { return nil }
        let ranked = Self.ranks(first + second)
        let rankSum = ranked.ranks[0..<m].reduce(0, +)
        u = rankSum - Double(m * (m + 1)) / 2
        let mn = Double(m * n)
        if !ranked.hasTies && m * n <= Self.exactLimit {
            method = .exact
            // The null distribution is symmetric about mn/2: double the tail
            // beyond the observed U on its side.
            let larger = max(u, mn - u)
            let counts = Self.exactCounts(m, n)
            let total = counts.reduce(0, +)
            let tail = counts[Int(larger)...].reduce(0, +)
            p = min(1, 2 * tail / total)
        } else {
            method = .normal
            let total = Double(m + n)
            let variance = mn / 12 * ((total + 1) - ranked.tieTerm / (total * (total - 1)))
            if variance <= 0 {
                p = 1  // every value equal: no evidence either way
            } else {
                let z = (abs(u - mn / 2) - 0.5) / variance.squareRoot()
                p = z <= 0 ? 1 : min(1, erfc(z / 2.0.squareRoot()))
            }
        }
    }

    /// The smallest two-sided p-value any outcome can reach with samples of
    /// these sizes (no ties): with fewer runs than this allows, no difference
    /// can be significant at `alpha`.
    package static func smallestPossibleP(_ m: Int, _ n: Int) -> Double {
        guard m > 0, n > 0 else { return 1 }
        // Every x above every y: one arrangement in C(m+n, m), doubled.
        var arrangements = 1.0
        for i in 0..<min(m, n) { arrangements = arrangements * Double(m + n - i) / Double(i + 1) }
        return min(1, 2 / arrangements)
    }

    /// Mid-ranks (1-based) of `values`, whether any tie occurred, and
    /// Σ(t³ − t) over groups of t tied values.
    static func ranks(_ values: [Double]) -> (ranks: [Double], hasTies: Bool, tieTerm: Double) {
        let order = values.indices.sorted { values[$0] < values[$1] }
        var ranks = [Double](repeating: 0, count: values.count)
        var tieTerm = 0.0
        var start = 0
        while start < order.count {
            var end = start + 1
            while end < order.count && values[order[end]] == values[order[start]] { end += 1 }
            let midRank = Double(start + 1 + end) / 2
            for k in start..<end { ranks[order[k]] = midRank }
            let t = Double(end - start)
            tieTerm += t * t * t - t
            start = end
        }
        return (ranks, tieTerm > 0, tieTerm)
    }

    /// counts[u] = how many of the C(m+n, m) equally likely arrangements give
    /// U = u, from f(i, j) = f(i−1, j) shifted by j + f(i, j−1): additions
    /// only, so no cancellation.
    static func exactCounts(_ m: Int, _ n: Int) -> [Double] {
        // row[j] holds the distribution for (i, j) as i advances.
        var row = (0...n).map { _ in [1.0] }  // i = 0: U is always 0
        for i in 1...m {
            var next = [[Double]](repeating: [], count: n + 1)
            next[0] = [1.0]  // j = 0: U is always 0
            for j in 1...n {
                var dist = [Double](repeating: 0, count: i * j + 1)
                // The largest of the i + j values is an x (adds j to U) …
                for (u, c) in row[j].enumerated() { dist[u + j] += c }
                // … or a y (adds nothing).
                for (u, c) in next[j - 1].enumerated() { dist[u] += c }
                next[j] = dist
            }
            row = next
        }
        return row[n]
    }
}
