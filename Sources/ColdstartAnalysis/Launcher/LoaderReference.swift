import Foundation

/// What `coldstart run`'s loader sampling adds to the time before the app's
/// first code: exec → earliest init in the run's sampled launches against
/// launches of the same run that the launcher started without it (no perf
/// events from exec, no LD_AUDIT module), interleaved with them. Stored in
/// each sampled timeline's `launcher.loaderReference` once the run ends.
///
/// Both starts are the launcher's stamps (exact to a microsecond); a
/// reference launch's stamp is taken just before `posix_spawn`, so its
/// figure also holds the spawn's clone (tens of µs), not less.
package struct LoaderReference: Sendable, Equatable {
    /// Launches without loader sampling, and their exec → earliest init.
    package var launches: Int
    package var medianNs: Int64
    package var p25Ns: Int64
    package var p75Ns: Int64
    /// The run's sampled launches, and the median of the same span.
    package var sampledLaunches: Int
    package var sampledMedianNs: Int64

    /// The median's difference: what loader sampling added to the phase.
    package var addedNs: Int64 { sampledMedianNs - medianNs }

    /// Nil unless both kinds of launch have an earliest init.
    package init?(sampled: [Int64], undisturbed: [Int64]) {
        guard !sampled.isEmpty, !undisturbed.isEmpty else { return nil }
        let reference = undisturbed.map(Double.init).sorted()
        launches = reference.count
        medianNs = Int64(Statistics.percentile(sorted: reference, 50))
        p25Ns = Int64(Statistics.percentile(sorted: reference, 25))
        p75Ns = Int64(Statistics.percentile(sorted: reference, 75))
        sampledLaunches = sampled.count
        sampledMedianNs = Int64(Statistics.percentile(sorted: sampled.map(Double.init).sorted(), 50))
    }

    /// The reference a run stored in `timeline`, if any.
    package init?(_ timeline: Timeline) {
        guard let launcher = (timeline.parsedDocument["coldstart"] as? [String: Any])?["launcher"] as? [String: Any],
              let stored = launcher["loaderReference"] as? [String: Any] else { return nil }
        func int(_ key: String) -> Int64? { (stored[key] as? NSNumber)?.int64Value }
        guard let launches = int("launches"), launches > 0, let median = int("medianNs"), let p25 = int("p25Ns"), let p75 = int("p75Ns"),
              let sampled = int("sampledLaunches"), sampled > 0, let sampledMedian = int("sampledMedianNs"),
              median >= 0, p25 <= median, median <= p75, sampledMedian >= 0 else { return nil }
        (self.launches, medianNs, p25Ns, p75Ns) = (Int(launches), median, p25, p75)
        (sampledLaunches, sampledMedianNs) = (Int(sampled), sampledMedian)
    }

    /// The `launcher.loaderReference` object (docs/timeline-format.md).
    package var json: [String: Any] {
        ["launches": launches, "medianNs": medianNs, "p25Ns": p25Ns, "p75Ns": p75Ns,
         "sampledLaunches": sampledLaunches, "sampledMedianNs": sampledMedianNs]
    }

    /// "6.5 ms without the launcher's loader sampling (median of 10
    /// interleaved launches, 6.1–7.0 ms); the sampling adds 5.3 ms"
    package var sentence: String {
        func ms(_ ns: Int64) -> String { String(format: "%.1f", Double(ns) / 1e6) }
        let added = addedNs >= 0 ? "the sampling adds \(ms(addedNs)) ms" : "the sampling added nothing measurable"
        return "\(ms(medianNs)) ms without the launcher's loader sampling (median of \(launches) interleaved "
            + "launch\(launches == 1 ? "" : "es"), \(ms(p25Ns))–\(ms(p75Ns)) ms); \(added) to the median of \(sampledLaunches)"
    }
}
