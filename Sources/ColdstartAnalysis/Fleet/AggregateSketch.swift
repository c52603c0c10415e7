import Foundation

/// Percentiles of a stream of durations in memory bounded by their range, not
/// their number: a log-bucketed histogram with relative accuracy (DDSketch,
/// Masson, Rim and Lee, VLDB 2019).
///
/// A value `v` ns (`v` ≥ 1) falls in bucket `i = ⌈log_γ v⌉`, covering
/// `(γ^(i−1), γ^i]` with `γ = (1 + α) / (1 − α)`; the bucket stands for
/// `2γ^i / (γ + 1)`, within `α` of every value in it. With `α` = 1% a bucket
/// is 2% wide: the values from 1 ms to 10 s fill at most 461 buckets of 8
/// bytes, however many launches there are.
///
/// `value(atQuantile:)` is the nearest-rank percentile (the smallest value
/// with at least `q·n` values at or below it) to within `α` relative, clamped
/// to the exact minimum and maximum. Count, sum, minimum and maximum are exact.
struct QuantileSketch: Sendable {
    /// α: every percentile is within this fraction of the exact nearest-rank value.
    static let relativeAccuracy = 0.01
    private static let gamma = (1 + relativeAccuracy) / (1 - relativeAccuracy)
    private static let logGamma = Foundation.log(gamma)

    private(set) var count: UInt64 = 0
    /// Exact sum, ns (deterministic whatever order the files come in).
    private(set) var sumNs: Int64 = 0
    private(set) var minNs: Int64 = .max
    private(set) var maxNs: Int64 = .min
    /// Values ≤ 0 (a zero-length span): no logarithm, kept apart.
    private var zeros: UInt64 = 0
    /// counts[k] is bucket `offset + k`; grown at either end as values arrive.
    private var counts: [UInt64] = []
    private var offset = 0

    mutating func add(_ ns: Int64) {
        count += 1
        sumNs &+= ns
        minNs = Swift.min(minNs, ns)
        maxNs = Swift.max(maxNs, ns)
        guard ns > 0 else {
            zeros += 1
            return
        }
        let index = Int((Foundation.log(Double(ns)) / Self.logGamma).rounded(.up))
        if counts.isEmpty {
            offset = index
            counts = [0]
        } else if index < offset {
            counts.insert(contentsOf: repeatElement(0, count: offset - index), at: 0)
            offset = index
        } else if index >= offset + counts.count {
            counts.append(contentsOf: repeatElement(0, count: index - offset - counts.count + 1))
        }
        counts[index - offset] += 1
    }

    /// Adds another sketch's values: the same sketch as if every value had
    /// been added here, in any order.
    mutating func merge(_ other: QuantileSketch) {
        guard other.count > 0 else { return }
        count += other.count
        sumNs &+= other.sumNs
        minNs = Swift.min(minNs, other.minNs)
        maxNs = Swift.max(maxNs, other.maxNs)
        zeros += other.zeros
        guard !other.counts.isEmpty else { return }
        if counts.isEmpty {
            counts = other.counts
            offset = other.offset
            return
        }
        let low = Swift.min(offset, other.offset)
        let high = Swift.max(offset + counts.count, other.offset + other.counts.count)
        var merged = [UInt64](repeating: 0, count: high - low)
        for (k, n) in counts.enumerated() { merged[offset - low + k] += n }
        for (k, n) in other.counts.enumerated() { merged[other.offset - low + k] += n }
        counts = merged
        offset = low
    }

    /// The nearest-rank `q`-quantile (0 < q ≤ 1), ns; nil when empty.
    func value(atQuantile q: Double) -> Int64? {
        guard count > 0 else { return nil }
        let rank = Swift.max(1, UInt64((q * Double(count)).rounded(.up)))
        var seen = zeros
        if seen >= rank { return Swift.max(minNs, Swift.min(0, maxNs)) }
        for (k, n) in counts.enumerated() where n > 0 {
            seen += n
            if seen >= rank {
                let representative = 2 * Foundation.pow(Self.gamma, Double(offset + k)) / (Self.gamma + 1)
                return Swift.min(maxNs, Swift.max(minNs, Int64(representative.rounded())))
            }
        }
        return maxNs
    }

    /// Buckets in use: the memory this sketch holds is 8 bytes per bucket.
    var bucketCount: Int { counts.count }
}

/// Counts against fixed upper bounds, for Prometheus histograms (whose
/// buckets must be the same for every series and every scrape).
struct FixedHistogram: Sendable {
    /// Upper bounds, ns: 0.5 ms to 60 s in 1–2.5–5 steps. Launch phases run
    /// from well under a millisecond (the initializers of a small tool) to
    /// tens of seconds (a service warming a cache).
    static let boundsNs: [Int64] = [
        500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000, 25_000_000, 50_000_000,
        100_000_000, 250_000_000, 500_000_000, 1_000_000_000, 2_500_000_000,
        5_000_000_000, 10_000_000_000, 25_000_000_000, 60_000_000_000,
    ]

    /// counts[i]: values in `(bounds[i−1], bounds[i]]`; the last is above every bound.
    private(set) var counts = [UInt64](repeating: 0, count: boundsNs.count + 1)

    mutating func add(_ ns: Int64) {
        counts[Self.boundsNs.partitionPoint { $0 < ns }] += 1
    }

    mutating func merge(_ other: FixedHistogram) {
        for index in counts.indices { counts[index] += other.counts[index] }
    }

    /// Values at or below each bound, then the total (the `+Inf` bucket).
    var cumulative: [UInt64] {
        var running: UInt64 = 0
        return counts.map { running += $0; return running }
    }
}
