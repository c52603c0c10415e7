@testable import ColdstartAnalysis
import XCTest

/// Reference values come from SciPy 1.17 (`numpy.percentile`,
/// `scipy.stats.mannwhitneyu(x, y, alternative="two-sided", use_continuity=True)`
/// with `method="exact"` or `"asymptotic"`).
final class StatisticsTests: XCTestCase {
    private let values: [Double] = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]

    func testPercentilesInterpolateLikeNumpy() throws {
        let expected: [(Double, Double)] = [(0, 1), (10, 1), (25, 2.25), (50, 3.5), (90, 6.3), (99, 8.73), (100, 9)]
        for (p, value) in expected {
            XCTAssertEqual(try XCTUnwrap(Statistics.percentile(values, p)), value, accuracy: 1e-12, "p\(p)")
        }
        XCTAssertEqual(Statistics.median([7]), 7)
        XCTAssertEqual(Statistics.median([2, 1]), 1.5)
        XCTAssertNil(Statistics.median([]))
    }

    func testMedianAbsoluteDeviation() {
        XCTAssertEqual(Statistics.medianAbsoluteDeviation(values), 1.5)
        XCTAssertEqual(Statistics.medianAbsoluteDeviation([5, 5, 5]), 0)
    }

    func testOutliersAreFlaggedNotDropped() throws {
        // Median 10.75, MAD 0.5: 14 scores 0.6745 × 3.25 / 0.5 = 4.4 > 3.5;
        // 11.5 scores 1.0.
        let launches: [Double] = [10, 11, 10.5, 11.5, 10, 14, 11, 10.5]
        XCTAssertEqual(Statistics.outlierIndices(launches), [5])
        let summary = try XCTUnwrap(DistributionSummary(launches))
        XCTAssertEqual(summary.count, 8, "the outlier still counts")
        XCTAssertEqual(summary.max, 14)
        XCTAssertEqual(summary.outliers, [5])
        XCTAssertEqual(summary.median, 10.75)
        XCTAssertEqual(summary.mad, 0.5)
        XCTAssertEqual(summary.p90, 12.25, accuracy: 1e-12)
        XCTAssertEqual(Statistics.outlierIndices([4, 4, 4, 4, 100]), [], "no scale when the MAD is 0")
        XCTAssertNil(DistributionSummary([]))
    }

    func testMannWhitneyExactMatchesSciPy() throws {
        let cases: [([Double], [Double], u: Double, p: Double)] = [
            ([1.1, 2.2, 3.3, 4.4, 5.5, 6.6, 7.7, 8.8], [2.05, 3.5, 9.1, 10.2, 11.3, 12.4, 13.5, 14.6], 12, 0.037917637917637914),
            ([19, 22, 16, 29, 24], [20, 11, 17, 12], 17, 0.1111111111111111),
            ([1, 2, 3, 4], [5, 6, 7, 8], 0, 0.02857142857142857),
        ]
        for (x, y, u, p) in cases {
            let test = try XCTUnwrap(MannWhitneyTest(x, y))
            XCTAssertEqual(test.method, .exact)
            XCTAssertEqual(test.u, u)
            XCTAssertEqual(test.p, p, accuracy: 1e-12)
            // Swapping the sides mirrors U and keeps p.
            let swapped = try XCTUnwrap(MannWhitneyTest(y, x))
            XCTAssertEqual(swapped.u, Double(x.count * y.count) - u)
            XCTAssertEqual(swapped.p, p, accuracy: 1e-12)
        }
    }

    func testMannWhitneyNormalApproximationWithTiesMatchesSciPy() throws {
        let ties = try XCTUnwrap(MannWhitneyTest([1, 2, 2, 3, 3, 3, 4, 5], [3, 4, 4, 5, 5, 6, 7, 7, 8]))
        XCTAssertEqual(ties.method, .normal, "ties rule out the exact distribution")
        XCTAssertEqual(ties.u, 7.5)
        XCTAssertEqual(ties.p, 0.006373133838085873, accuracy: 1e-12)

        // 60 × 55 is past the exact limit.
        let big = try XCTUnwrap(MannWhitneyTest(
            (0..<60).map { Double($0) * 1.5 + 0.25 }, (0..<55).map { Double($0) * 1.5 + 10.1 }))
        XCTAssertEqual(big.method, .normal)
        XCTAssertEqual(big.u, 1431)
        XCTAssertEqual(big.p, 0.22119181516502429, accuracy: 1e-12)
    }

    func testMannWhitneyEdgeCases() throws {
        XCTAssertNil(MannWhitneyTest([], [1, 2]))
        let same = try XCTUnwrap(MannWhitneyTest([5, 5, 5], [5, 5]))
        XCTAssertEqual(same.p, 1, "identical values are no evidence of a difference")
        // The exact distribution sums to C(m+n, m).
        let test = try XCTUnwrap(MannWhitneyTest([1, 2, 3], [4, 5, 6]))
        XCTAssertEqual(test.p, 0.1, accuracy: 1e-12, "2 / C(6, 3)")
        XCTAssertEqual(MannWhitneyTest.smallestPossibleP(3, 3), 0.1, accuracy: 1e-12)
        XCTAssertEqual(MannWhitneyTest.smallestPossibleP(4, 4), 2.0 / 70, accuracy: 1e-12)
        XCTAssertEqual(MannWhitneyTest.smallestPossibleP(1, 20), 2.0 / 21, accuracy: 1e-12, "one run: never below 5%")
        XCTAssertEqual(MannWhitneyTest.smallestPossibleP(0, 5), 1)
    }

    func testHolmAdjustment() {
        // Sorted: 0.005 × 4, 0.01 × 3, 0.03 × 2, 0.04 × 1 (raised to the running max).
        let adjusted = Statistics.holmAdjusted([0.01, 0.04, 0.03, 0.005])
        for (a, b) in zip(adjusted, [0.03, 0.06, 0.06, 0.02]) { XCTAssertEqual(a, b, accuracy: 1e-12) }
        XCTAssertEqual(Statistics.holmAdjusted([0.6, 0.9]), [1, 1])
        XCTAssertEqual(Statistics.holmAdjusted([]), [])
    }
}
