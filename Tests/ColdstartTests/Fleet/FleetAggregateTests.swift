@testable import ColdstartAnalysis
import ColdstartExport
import Foundation
import XCTest

/// `coldstart aggregate`: many launches as percentiles, by label, with the
/// slowest launches and the files it could not read.
final class FleetAggregateTests: XCTestCase {
    /// The nearest-rank percentile: the smallest value with at least q·n
    /// values at or below it.
    private func nearestRank(_ sorted: [Int64], _ q: Double) -> Int64 {
        sorted[max(1, Int((q * Double(sorted.count)).rounded(.up))) - 1]
    }

    func testSketchPercentilesStayWithinOnePercentInBoundedMemory() {
        var generator = SystemRandomNumberGenerator()
        var sketch = QuantileSketch()
        var values: [Int64] = []
        // Log-uniform from 0.1 ms to 10 s: seven decades, as launch phases span.
        for _ in 0..<50_000 {
            let value = Int64(exp(Double.random(in: log(1e5)...log(1e10), using: &generator)))
            values.append(value)
            sketch.add(value)
        }
        sketch.add(0)  // a zero-length span
        values.append(0)
        values.sort()
        for q in [0.01, 0.5, 0.9, 0.99, 0.999] {
            let exact = Double(nearestRank(values, q))
            let estimate = Double(sketch.value(atQuantile: q)!)
            XCTAssertLessThanOrEqual(abs(estimate - exact) / exact, QuantileSketch.relativeAccuracy, "q \(q): \(estimate) vs \(exact)")
        }
        XCTAssertEqual(sketch.count, UInt64(values.count))
        XCTAssertEqual(sketch.minNs, 0)
        XCTAssertEqual(sketch.maxNs, values.last)
        XCTAssertEqual(sketch.sumNs, values.reduce(0, +))
        XCTAssertEqual(sketch.value(atQuantile: 1), values.last, "the maximum is exact")
        // ln(1e5) / ln(γ) buckets for five decades: 576; whatever the count.
        XCTAssertLessThanOrEqual(sketch.bucketCount, 580)
        for value in values.prefix(1000) { sketch.add(value) }
        XCTAssertLessThanOrEqual(sketch.bucketCount, 580, "more launches in the same range take no more memory")
    }

    func testFixedHistogramCountsAtOrBelowEachBound() {
        var histogram = FixedHistogram()
        for ns: Int64 in [1, 500_000, 500_001, 1_000_000, 70_000_000_000] { histogram.add(ns) }
        let cumulative = histogram.cumulative
        XCTAssertEqual(cumulative.count, FixedHistogram.boundsNs.count + 1)
        XCTAssertEqual(cumulative[0], 2, "≤ 0.5 ms: 1 ns and 0.5 ms itself (bounds are inclusive)")
        XCTAssertEqual(cumulative[1], 4, "≤ 1 ms")
        XCTAssertEqual(cumulative[FixedHistogram.boundsNs.count - 1], 4, "≤ 60 s")
        XCTAssertEqual(cumulative.last, 5, "+Inf holds everything")
    }

    /// 20 launches of version 1.0 with "library initializers" 1…20 ms, 10 of
    /// version 2.0 at 50 ms, 2 without a version, and bad files.
    private func makeFleet() throws -> URL {
        let directory = try makeTemporaryDirectory(for: self)
        let ready = try Fleet.fixtureDocument("ready.json")
        for i in 1...20 {
            try Fleet.write(ready, labels: ["version": "1.0", "region": "eu"],
                            to: directory.appendingPathComponent("a/v1-\(i).json")) {
                Fleet.setPhase("library initializers", durationNs: Int64(i) * 1_000_000, in: &$0)
            }
        }
        for i in 1...10 {
            try Fleet.write(ready, labels: ["version": "2.0"], to: directory.appendingPathComponent("b/deeper/v2-\(i).json")) {
                Fleet.setPhase("library initializers", durationNs: 50_000_000, in: &$0)
                var launch = $0["launch"] as! [String: Any]
                launch["endNs"] = 300_000_000 + i * 1_000_000
                $0["launch"] = launch
            }
        }
        try Fleet.write(ready, to: directory.appendingPathComponent("old.json"))
        try Fleet.write(try Fleet.fixtureDocument("error-exit.json"), to: directory.appendingPathComponent("failed.json"))
        try Data().write(to: directory.appendingPathComponent("empty.json"))
        try Data("{\"coldstart\": {\"version\": 1, ".utf8).write(to: directory.appendingPathComponent("b/cut.json"))
        try Data("not read: no .json".utf8).write(to: directory.appendingPathComponent("notes.txt"))
        try Data("hidden".utf8).write(to: directory.appendingPathComponent(".partial.json"))
        return directory
    }

    func testGroupsByVersionWithPercentilesSlowestLaunchesAndSkippedFiles() throws {
        let directory = try makeFleet()
        let result = try coldstart(["aggregate", directory.path, "--by", "version", "--slowest", "3", "--json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("skipped 2 files"), result.stderr)
        let summary = try JSONDecoder().decode(AggregateSummary.self, from: Data(result.stdout.utf8))
        XCTAssertEqual(summary.launches, 32)
        XCTAssertEqual(summary.skippedCount, 2)
        XCTAssertEqual(summary.skipped.map { ($0.file as NSString).lastPathComponent }, ["cut.json", "empty.json"])
        XCTAssertEqual(summary.skipped.map(\.reason), ["truncated JSON (the file ends mid-way)", "empty file"])
        XCTAssertEqual(summary.groups.map(\.value), ["1.0", "2.0", nil], "numeric order, launches without the label last")
        XCTAssertEqual(summary.groups.map(\.launches), [20, 10, 2])

        let v1 = summary.groups[0]
        let initializers = try XCTUnwrap(v1.phases.first { $0.name == "library initializers" })
        XCTAssertEqual(initializers.count, 20)
        // Nearest rank of 1…20 ms: p50 the 10th, p90 the 18th, p99 the 20th.
        XCTAssertEqual(initializers.p50Ms, 10, accuracy: 0.1)
        XCTAssertEqual(initializers.p90Ms, 18, accuracy: 0.18)
        XCTAssertEqual(initializers.p99Ms, 20, accuracy: 0.2)
        XCTAssertEqual(initializers.maxMs, 20)
        XCTAssertEqual(initializers.minMs, 1)
        XCTAssertEqual(initializers.sumMs, 210, accuracy: 1e-9)
        XCTAssertEqual(initializers.buckets[summary.bucketBoundsMs.firstIndex(of: 10)!], 10, "10 launches at or below 10 ms")
        XCTAssertEqual(v1.phases.map(\.name).first, "kernel exec + loader", "phases in launch order")
        XCTAssertEqual(v1.marks.map(\.name), ["config loaded", "store opened", "first request served"])
        XCTAssertEqual(v1.launch?.count, 20)
        XCTAssertEqual(v1.endReasons, ["ready": 20])

        let v2 = summary.groups[1]
        XCTAssertEqual(v2.slowest.map(\.ms), [310, 309, 308])
        XCTAssertEqual(v2.slowest.map { ($0.file as NSString).lastPathComponent }, ["v2-10.json", "v2-9.json", "v2-8.json"])
        XCTAssertEqual(v2.slowest.first?.labels, ["version": "2.0"])

        let unlabelled = summary.groups[2]
        XCTAssertEqual(unlabelled.endReasons, ["ready": 1, "error-exit": 1])
        XCTAssertEqual(unlabelled.launch?.count, 1, "only a launch that reached ready() has a launch time")
    }

    func testTextListsGroupsSlowestAndSkippedFiles() throws {
        let directory = try makeFleet()
        let result = try coldstart(["aggregate", directory.path, "--by", "region"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let text = result.stdout
        XCTAssertTrue(text.hasPrefix("32 launches in 2 groups (by region), 2 files skipped\n"), text)
        XCTAssertTrue(text.contains("ServiceStartup, region eu: 20 launches (20 ready)"), text)
        XCTAssertTrue(text.contains("ServiceStartup, region (none): 12 launches (1 error-exit, 11 ready)"), text)
        XCTAssertTrue(text.contains("slowest launches:"), text)
        XCTAssertTrue(text.contains("empty.json: empty file"), text)
    }

    func testBuiltInGroupsAndOnlyBadFilesFail() throws {
        let directory = try makeFleet()
        let byExecutable = try coldstart(["aggregate", directory.path, "--by", "executable", "--json"])
        XCTAssertEqual(byExecutable.status, 0, byExecutable.stderr)
        let summary = try JSONDecoder().decode(AggregateSummary.self, from: Data(byExecutable.stdout.utf8))
        XCTAssertEqual(summary.groups.map(\.value), ["ServiceStartup"])

        let bad = try makeTemporaryDirectory(for: self)
        try Data().write(to: bad.appendingPathComponent("empty.json"))
        let none = try coldstart(["aggregate", bad.path])
        XCTAssertEqual(none.status, 1)
        XCTAssertTrue(none.stderr.contains("no timeline could be read"), none.stderr)
        XCTAssertTrue(none.stderr.contains("empty.json: empty file"), none.stderr)
        let missing = try coldstart(["aggregate", bad.appendingPathComponent("nowhere").path])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("no such file"), missing.stderr)
        XCTAssertEqual(try coldstart(["aggregate"]).status, 2)
        XCTAssertEqual(try coldstart(["aggregate", bad.path, "--format", "csv"]).status, 2)
    }

    func testReadingOnSeveralThreadsGivesTheSameSummaryAsOne() throws {
        let directory = try makeFleet()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let one = LaunchAggregate(reading: [directory.path], exportSuffixes: Exporters.suffixes, groupLabel: "version", slowestCount: 3, threads: 1)
        let four = LaunchAggregate(reading: [directory.path], exportSuffixes: Exporters.suffixes, groupLabel: "version", slowestCount: 3, threads: 4)
        XCTAssertEqual(one.summary.launches, 32)
        XCTAssertEqual(String(decoding: try encoder.encode(four.summary), as: UTF8.self),
                       String(decoding: try encoder.encode(one.summary), as: UTF8.self))

        var whole = QuantileSketch(), low = QuantileSketch(), high = QuantileSketch()
        for ns in stride(from: Int64(1_000), to: 5_000_000_000, by: 7_919_993) {
            whole.add(ns)
            if ns < 40_000_000 { low.add(ns) } else { high.add(ns) }
        }
        high.merge(low)
        XCTAssertEqual(high.count, whole.count)
        XCTAssertEqual(high.sumNs, whole.sumNs)
        XCTAssertEqual(high.bucketCount, whole.bucketCount)
        for q in [0.01, 0.1, 0.5, 0.9, 0.99] { XCTAssertEqual(high.value(atQuantile: q), whole.value(atQuantile: q), "q \(q)") }
    }

    func testTimelineFilesWalksSubdirectoriesOneEntryAtATime() throws {
        let directory = try makeFleet()
        var files: [String] = []
        for entry in TimelineFiles([directory.path], exportSuffixes: Exporters.suffixes) {
            guard case .file(let path) = entry else { return XCTFail("\(entry)") }
            files.append(String(path.dropFirst(directory.path.count + 1)))
        }
        XCTAssertEqual(files.count, 34, "32 timelines and 2 bad files; not notes.txt, not the hidden file")
        XCTAssertTrue(files.contains("b/deeper/v2-1.json"))
        XCTAssertFalse(files.contains { $0.hasSuffix(".txt") || $0.contains("/.") || $0.hasPrefix(".") })
    }
}
