import Foundation

/// Many launches folded into percentiles, one timeline at a time
/// (`coldstart aggregate`). Memory grows with what is reported — groups,
/// distinct phase, mark and span names, the slowest launches kept — never
/// with the number of launches: each measure keeps a `QuantileSketch` and a
/// `FixedHistogram`, not its values.
package struct LaunchAggregate: Sendable {
    /// The label launches are grouped by (`--by`); nil: by executable only.
    package var groupLabel: String?
    /// How many of the slowest launches each group lists.
    package var slowestCount: Int
    /// Rows per table of each group's pooled profile.
    package var profileTop: Int
    /// How many unreadable files are listed by name (all are counted).
    package static let skippedListLimit = 100

    private(set) var launchCount = 0
    private(set) var skippedCount = 0
    private var skipped: [AggregateSummary.Skipped] = []
    private var groups: [GroupKey: Group] = [:]

    package init(groupLabel: String? = nil, slowestCount: Int = 10, profileTop: Int = 10) {
        self.groupLabel = groupLabel
        self.slowestCount = slowestCount
        self.profileTop = profileTop
    }

    private struct GroupKey: Hashable {
        var executable: String
        var value: String?
    }

    private struct MeasureKey: Hashable {
        var kind: AggregateSummary.Measure.Kind
        var name: String
    }

    private struct Measure {
        var phaseKind: String?
        var sketch = QuantileSketch()
        var histogram = FixedHistogram()
        /// Σ of where it sits in the launch (a phase's index, a span's
        /// start, a mark's time): its mean orders the report as a launch runs.
        var positionSumNs: Double = 0

        mutating func add(_ ns: Int64, at position: Int64) {
            sketch.add(ns)
            histogram.add(ns)
            positionSumNs += Double(position)
        }

        mutating func merge(_ other: Measure) {
            sketch.merge(other.sketch)
            histogram.merge(other.histogram)
            positionSumNs += other.positionSumNs
        }
    }

    private struct Group {
        var launches = 0
        var endReasons: [String: Int] = [:]
        var measures: [MeasureKey: Measure] = [:]
        /// The slowest launches, slowest first, at most `slowestCount`.
        var slowest: [AggregateSummary.Launch] = []
        /// The sampled launches' stacks, as counters per name.
        var profile = PooledProfile()

        mutating func merge(_ other: Group, slowestCount: Int) {
            launches += other.launches
            profile.merge(other.profile)
            endReasons.merge(other.endReasons, uniquingKeysWith: +)
            measures.merge(other.measures) { var mine = $0; mine.merge($1); return mine }
            slowest = Array((slowest + other.slowest).sorted { $0.isSlower(than: $1) }.prefix(slowestCount))
        }
    }

    /// Folds one launch in; `file` names it among the slowest. A sampled
    /// launch's stacks are pooled, named with `symbols` (one cache per
    /// thread, so each module is read once by each).
    package mutating func add(_ timeline: Timeline, file: String, symbols: SymbolCache = SymbolCache()) {
        launchCount += 1
        let key = GroupKey(executable: timeline.executableName, value: groupLabel.flatMap { timeline.groupValue($0) })
        var group = groups[key] ?? Group()
        group.launches += 1
        group.endReasons[timeline.launch.endReason, default: 0] += 1
        func add(_ kind: AggregateSummary.Measure.Kind, _ name: String, _ ns: Int64, at position: Int64, phaseKind: String? = nil) {
            let measureKey = MeasureKey(kind: kind, name: name)
            var measure = group.measures[measureKey] ?? Measure(phaseKind: phaseKind)
            measure.add(ns, at: position)
            group.measures[measureKey] = measure
        }
        // A launch that ended before ready() (exit, signal) is not a start-up
        // time: it counts in its phases, marks and spans, not here.
        if timeline.launch.completed && timeline.launch.endReason == "ready" {
            add(.launch, "launch", timeline.launchDurationNs, at: 0)
        }
        // Phases are ordered by their place in the list: launches of
        // different speeds would shuffle them by start time.
        for (index, phase) in timeline.phases.enumerated() {
            add(.phase, phase.name, phase.durationNs, at: Int64(index), phaseKind: phase.kind)
        }
        for mark in timeline.marks { add(.mark, mark.name, mark.ns, at: mark.ns) }
        for span in timeline.spans where !span.unfinished { add(.span, span.name, span.durationNs, at: span.beginNs) }
        group.profile.add(timeline, cache: symbols, path: file)

        var launch = AggregateSummary.Launch(
            file: file, ms: Double(timeline.launchDurationNs) / 1e6, endReason: timeline.launch.endReason,
            pid: timeline.process.pid, startedAt: nil, labels: [:])
        if slowestCount > 0, group.slowest.count < slowestCount || launch.isSlower(than: group.slowest.last!) {
            // Only for the few kept: formatting a date costs more than the rest.
            launch.startedAt = timeline.launch.startRealtimeUs.map(Self.isoTime)
            launch.labels = timeline.labels
            let index = group.slowest.firstIndex { launch.isSlower(than: $0) } ?? group.slowest.endIndex
            group.slowest.insert(launch, at: index)
            if group.slowest.count > slowestCount { group.slowest.removeLast() }
        }
        groups[key] = group
    }

    /// Folds in what another aggregate (same grouping) read: the result is
    /// the same as one aggregate reading both sets of files, so files can be
    /// read on several threads.
    package mutating func merge(_ other: LaunchAggregate) {
        launchCount += other.launchCount
        skippedCount += other.skippedCount
        skipped += other.skipped.prefix(Self.skippedListLimit - skipped.count)
        groups.merge(other.groups) { var mine = $0; mine.merge($1, slowestCount: slowestCount); return mine }
    }

    /// Counts a file that could not be read; the first ones are listed.
    package mutating func skip(_ file: String, reason: String) {
        skippedCount += 1
        if skipped.count < Self.skippedListLimit { skipped.append(.init(file: file, reason: reason)) }
    }

    /// What the CLI prints and the exporters write.
    package var summary: AggregateSummary {
        let ordered = groups.sorted { a, b in
            if a.key.executable != b.key.executable { return a.key.executable < b.key.executable }
            guard let x = a.key.value else { return false }
            guard let y = b.key.value else { return true }
            return x.compare(y, options: .numeric) == .orderedAscending
        }
        return AggregateSummary(
            launches: launchCount, skippedCount: skippedCount,
            skipped: skipped.sorted { $0.file < $1.file }, by: groupLabel,
            groups: ordered.map { Self.summarize($0.key, $0.value, profileTop: profileTop) })
    }

    private static func summarize(_ key: GroupKey, _ group: Group, profileTop: Int) -> AggregateSummary.Group {
        func measures(_ kind: AggregateSummary.Measure.Kind) -> [AggregateSummary.Measure] {
            let selected = group.measures.filter { $0.key.kind == kind }
                .map { (key: $0.key, measure: $0.value, position: $0.value.positionSumNs / Double($0.value.sketch.count)) }
            return selected
                .sorted { $0.position != $1.position ? $0.position < $1.position : $0.key.name < $1.key.name }
                .map { summarize($0.key, $0.measure) }
        }
        return AggregateSummary.Group(
            executable: key.executable, value: key.value, launches: group.launches,
            endReasons: group.endReasons, launch: measures(.launch).first,
            phases: measures(.phase), marks: measures(.mark), spans: measures(.span),
            slowest: group.slowest, profile: group.profile.launches > 0 ? group.profile.report(top: profileTop) : nil)
    }

    private static func summarize(_ key: MeasureKey, _ measure: Measure) -> AggregateSummary.Measure {
        let sketch = measure.sketch
        func ms(_ ns: Int64?) -> Double { Double(ns ?? 0) / 1e6 }
        return AggregateSummary.Measure(
            kind: key.kind, name: key.name, phaseKind: measure.phaseKind, count: Int(sketch.count),
            p50Ms: ms(sketch.value(atQuantile: 0.5)), p90Ms: ms(sketch.value(atQuantile: 0.9)),
            p99Ms: ms(sketch.value(atQuantile: 0.99)), minMs: ms(sketch.minNs), maxMs: ms(sketch.maxNs),
            sumMs: ms(sketch.sumNs), buckets: measure.histogram.cumulative.map(Int.init))
    }

    private static func isoTime(_ microseconds: UInt64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(microseconds) / 1e6))
    }
}

/// The result of `coldstart aggregate` (its `--json`; keys in docs/fleet.md).
/// Times are milliseconds of `CLOCK_MONOTONIC` as each launch recorded them.
package struct AggregateSummary: Codable, Sendable {
    /// Launches read.
    package var launches: Int
    /// Files that could not be read; `skipped` lists the first 100 of them.
    package var skippedCount: Int
    package var skipped: [Skipped]
    /// The label launches are grouped by, if any.
    package var by: String?
    /// How the percentiles are computed.
    package var percentiles = "nearest rank, within 1% of the exact value (log-bucketed sketch, DDSketch); count, min, max and sum exact"
    /// Upper bounds of `Measure.buckets`, ms (the last bucket is unbounded).
    package var bucketBoundsMs = FixedHistogram.boundsNs.map { Double($0) / 1e6 }
    package var groups: [Group]

    package struct Skipped: Codable, Sendable, Equatable {
        package var file: String
        package var reason: String
    }

    package struct Group: Codable, Sendable {
        /// The executable's file name.
        package var executable: String
        /// The `by` label's value; nil for launches without it.
        package var value: String?
        package var launches: Int
        /// Launches per end reason ("ready", "exit", "error-exit", "signal").
        package var endReasons: [String: Int]
        /// Process start → ready, of the launches that reached ready().
        package var launch: Measure?
        package var phases: [Measure]
        /// Time of each mark since the process start.
        package var marks: [Measure]
        /// Finished spans.
        package var spans: [Measure]
        /// The slowest launches (process start → end), slowest first.
        package var slowest: [Launch]
        /// The sampled launches' stacks pooled; nil when none was sampled.
        package var profile: PooledProfileReport?
    }

    package struct Measure: Codable, Sendable {
        package enum Kind: String, Codable, Sendable { case launch, phase, mark, span }
        package var kind: Kind
        package var name: String
        /// A phase's kind ("loader", "profiler", "initializers", "app").
        package var phaseKind: String?
        package var count: Int
        package var p50Ms: Double
        package var p90Ms: Double
        package var p99Ms: Double
        package var minMs: Double
        package var maxMs: Double
        package var sumMs: Double
        /// Cumulative counts at or below each of `bucketBoundsMs`, then the total.
        package var buckets: [Int]
    }

    package struct Launch: Codable, Sendable {
        package var file: String
        /// Process start → end of the launch (ready, exit or signal).
        package var ms: Double
        package var endReason: String
        package var pid: Int
        /// Wall clock of the process start (ISO 8601, UTC), when recorded.
        package var startedAt: String?
        package var labels: [String: String]

        func isSlower(than other: Launch) -> Bool {
            ms != other.ms ? ms > other.ms : file < other.file
        }
    }
}
